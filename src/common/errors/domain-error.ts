import { ErrorCode, NOT_FOUND_DETAIL } from './error-codes';

export type FieldErrors = Record<string, string[]>;

/** A failure the client can act on. Rendered by the one exception filter from ERROR_TABLE. */
export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    readonly detail: string = NOT_FOUND_DETAIL,
    readonly fields: FieldErrors = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
    this.name = 'DomainError';
  }

  static unauthenticated(): DomainError {
    return new DomainError(ErrorCode.UNAUTHENTICATED, 'unauthorized');
  }

  static readOnlyToken(): DomainError {
    return new DomainError(ErrorCode.READ_ONLY_TOKEN, 'forbidden');
  }

  static roleTooLow(): DomainError {
    return new DomainError(ErrorCode.ROLE_TOO_LOW);
  }

  static csrfRefused(): DomainError {
    return new DomainError(ErrorCode.CSRF_REFUSED, 'missing or invalid CSRF token');
  }

  /** 403 with `{"errors":{"detail": why}}`: the organization's policy refuses this sign-in or token. */
  static policyRefused(detail: string): DomainError {
    return new DomainError(ErrorCode.POLICY_REFUSED, detail);
  }

  static notFound(): DomainError {
    return new DomainError(ErrorCode.NOT_FOUND);
  }

  static badRequest(detail: string): DomainError {
    return new DomainError(ErrorCode.BAD_REQUEST, detail);
  }

  /** NervesHub's answer to a support script no device ran: its own message, not the constant 403 text. */
  static deviceUnavailable(): DomainError {
    return new DomainError(ErrorCode.DEVICE_UNAVAILABLE, 'device not available or responding');
  }

  /**
   * NervesHub's answer to a device-certificate lookup that finds no device of the path's product:
   * `{"status":"Unauthorized"}`, whatever the reason.
   */
  static certificateUnauthorized(): DomainError {
    return new DomainError(ErrorCode.CERTIFICATE_UNAUTHORIZED, 'Unauthorized');
  }

  static conflict(detail: string): DomainError {
    return new DomainError(ErrorCode.CONFLICT, detail);
  }

  /** 422 with `{"errors": {field: [message]}}`. */
  static invalid(fields: FieldErrors): DomainError {
    return new DomainError(ErrorCode.VALIDATION_FAILED, 'validation failed', fields);
  }

  static invalidField(field: string, message: string): DomainError {
    return DomainError.invalid({ [field]: [message] });
  }
}
