/**
 * The contract's error bodies (docs/api.md, "Errors"): one body per kind of failure, so that a spec states which
 * failure it expects rather than spelling the JSON out again.
 */

/** A body `{"errors":{"detail":...}}` (400, 409, 413, 429, 503, 500); `message` may be an asymmetric matcher. */
export const detail = (message: unknown) => ({ errors: { detail: message } });

/** 422: `{"errors":{field:[message, ...]}}`, e.g. `fieldErrors({ uuid: ["can't be blank"] })`. */
export const fieldErrors = (fields: Record<string, readonly unknown[]>) => ({ errors: fields });

/** 422 naming one field: `fieldError('key', 'must be ...')`. */
export const fieldError = (field: string, ...messages: unknown[]) => fieldErrors({ [field]: messages });

/** 401: no credential, another scheme, a malformed, unknown, revoked or expired token. */
export const UNAUTHORIZED = { error: 'unauthorized' };

/** 403: a `read`-scoped token used for a call that changes something. */
export const FORBIDDEN = { error: 'forbidden' };

/** 404 (not found, or not a member), and 403 for a member whose role is too low: the same body on purpose. */
export const NOT_FOUND = detail('Resource Not Found or Authorization Insufficient');

/** 403 for a member whose role is below what the call needs (the same body as 404). */
export const ROLE_TOO_LOW = NOT_FOUND;

/** 400: the body is not valid JSON. */
export const MALFORMED_JSON = detail('request body is not valid JSON');

/** 400: the body is JSON but not the object the route needs. */
export const NOT_A_JSON_OBJECT = detail('request body must be a JSON object');

/** 409: console code for a device with no console connection on any instance. */
export const DEVICE_NOT_CONNECTED = detail('device is not connected');

/** 500: anything unexpected. */
export const INTERNAL_ERROR = detail('Internal server error');

/** Any `{"errors":{"detail":<string>}}` body (a 400, 409, 413, 429 or 503 whose wording the spec does not pin). */
export const ANY_DETAIL = detail(expect.any(String));
