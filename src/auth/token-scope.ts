/** What a token may do: `all`, or `read` (GET/HEAD/OPTIONS only). */
export const TOKEN_SCOPES = ['all', 'read'] as const;
export type TokenScope = (typeof TOKEN_SCOPES)[number];
