/** Every domain failure has a stable code; this table is the only place that maps codes to HTTP. */
export enum ErrorCode {
  UNAUTHENTICATED = 'UNAUTHENTICATED',
  READ_ONLY_TOKEN = 'READ_ONLY_TOKEN',
  ROLE_TOO_LOW = 'ROLE_TOO_LOW',
  /** A change made with a browser session's cookie without its CSRF token, or from another site. */
  CSRF_REFUSED = 'CSRF_REFUSED',
  /** A firmware download link whose signature does not verify or whose expiry has passed. */
  INVALID_DOWNLOAD_LINK = 'INVALID_DOWNLOAD_LINK',
  /** A member whose sign-in or token does not meet the organization's policy (two-factor, token age or scope). */
  POLICY_REFUSED = 'POLICY_REFUSED',
  NOT_FOUND = 'NOT_FOUND',
  BAD_REQUEST = 'BAD_REQUEST',
  VALIDATION_FAILED = 'VALIDATION_FAILED',
  CONFLICT = 'CONFLICT',
  /** A support script found no device to run it, or no answer in time (NervesHub's 403 with its message). */
  DEVICE_UNAVAILABLE = 'DEVICE_UNAVAILABLE',
  /** A certificate that names no device of the path's product (NervesHub's 403 `{"status":"Unauthorized"}`). */
  CERTIFICATE_UNAUTHORIZED = 'CERTIFICATE_UNAUTHORIZED',
  PAYLOAD_TOO_LARGE = 'PAYLOAD_TOO_LARGE',
  UNSUPPORTED_MEDIA_TYPE = 'UNSUPPORTED_MEDIA_TYPE',
  RATE_LIMITED = 'RATE_LIMITED',
  DATABASE_UNAVAILABLE = 'DATABASE_UNAVAILABLE',
  /** Up, but not taking work: the process is draining for shutdown. */
  SERVICE_UNAVAILABLE = 'SERVICE_UNAVAILABLE',
  INTERNAL = 'INTERNAL',
}

/**
 * `constant`: `{"errors":{"detail":<the constant text>}}`, whatever the error says: lookup and authorization failures
 * must not tell each other apart. `detail`: the error's own text. `status`: NervesHub's `{"status":"Unauthorized"}` of
 * device-certificate lookups, which its clients read.
 */
export type ErrorBodyShape = 'auth' | 'constant' | 'detail' | 'fields' | 'status';

export const ERROR_TABLE: Record<ErrorCode, { status: number; shape: ErrorBodyShape }> = {
  [ErrorCode.UNAUTHENTICATED]: { status: 401, shape: 'auth' },
  [ErrorCode.READ_ONLY_TOKEN]: { status: 403, shape: 'auth' },
  [ErrorCode.ROLE_TOO_LOW]: { status: 403, shape: 'constant' },
  [ErrorCode.CSRF_REFUSED]: { status: 403, shape: 'detail' },
  [ErrorCode.INVALID_DOWNLOAD_LINK]: { status: 403, shape: 'constant' },
  [ErrorCode.POLICY_REFUSED]: { status: 403, shape: 'detail' },
  [ErrorCode.NOT_FOUND]: { status: 404, shape: 'constant' },
  [ErrorCode.BAD_REQUEST]: { status: 400, shape: 'detail' },
  [ErrorCode.VALIDATION_FAILED]: { status: 422, shape: 'fields' },
  [ErrorCode.CONFLICT]: { status: 409, shape: 'detail' },
  [ErrorCode.DEVICE_UNAVAILABLE]: { status: 403, shape: 'detail' },
  [ErrorCode.CERTIFICATE_UNAUTHORIZED]: { status: 403, shape: 'status' },
  [ErrorCode.PAYLOAD_TOO_LARGE]: { status: 413, shape: 'detail' },
  [ErrorCode.UNSUPPORTED_MEDIA_TYPE]: { status: 415, shape: 'detail' },
  [ErrorCode.RATE_LIMITED]: { status: 429, shape: 'detail' },
  [ErrorCode.DATABASE_UNAVAILABLE]: { status: 503, shape: 'detail' },
  [ErrorCode.SERVICE_UNAVAILABLE]: { status: 503, shape: 'detail' },
  [ErrorCode.INTERNAL]: { status: 500, shape: 'detail' },
};

/** The constant text of every authorization and lookup failure (it must not tell them apart). */
export const NOT_FOUND_DETAIL = 'Resource Not Found or Authorization Insufficient';
export const INTERNAL_DETAIL = 'Internal server error';
