/**
 * How a token's answers render where the spec and NervesHub differ (today: `tags` of devices and scripts).
 * `fleethub`: the spec's comma-separated string. `nerveshub`: NervesHub's list, for tokens minted through
 * NervesHub's own sign-in routes (`POST /api/users/login`, `/api/auth/cli_session`), which only its clients call.
 */
export const TOKEN_RENDERINGS = ['fleethub', 'nerveshub'] as const;
export type TokenRendering = (typeof TOKEN_RENDERINGS)[number];
