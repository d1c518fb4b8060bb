import { ERROR_TABLE, ErrorCode, NOT_FOUND_DETAIL } from './error-codes';
import type { DomainError } from './domain-error';

export type ErrorBody =
  | { error: string }
  | { errors: { detail: string } }
  | { errors: Record<string, string[]> }
  | { status: string };

/** The contract's body (section 3) for a domain error. */
export function errorBody(error: DomainError): { status: number; body: ErrorBody } {
  const { status, shape } = ERROR_TABLE[error.code];
  switch (shape) {
    case 'auth':
      return {
        status,
        body: { error: error.code === ErrorCode.READ_ONLY_TOKEN ? 'forbidden' : 'unauthorized' },
      };
    case 'fields':
      return { status, body: { errors: error.fields } };
    case 'constant':
      return { status, body: { errors: { detail: NOT_FOUND_DETAIL } } };
    case 'detail':
      return { status, body: { errors: { detail: error.detail } } };
    case 'status':
      return { status, body: { status: 'Unauthorized' } };
  }
}
