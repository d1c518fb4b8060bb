/** The contract's constant body for lookup and authorization failures (404, and 403 for a role too low). */
export const NOT_FOUND = { errors: { detail: 'Resource Not Found or Authorization Insufficient' } };
