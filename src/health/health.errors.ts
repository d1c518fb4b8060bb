import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-codes';

/** What `/readyz` answers when not ready, whatever the cause: clients and load balancers need no more. */
const NOT_READY = 'service unavailable';
const RETRY_AFTER = { 'Retry-After': '5' };

/** The readiness check's database ping failed. */
export function databaseNotAnswering(): DomainError {
  return new DomainError(ErrorCode.DATABASE_UNAVAILABLE, NOT_READY, {}, RETRY_AFTER);
}

/** The firmware storage (disk or bucket) cannot be reached. */
export function storageNotAnswering(): DomainError {
  return new DomainError(ErrorCode.SERVICE_UNAVAILABLE, NOT_READY, {}, RETRY_AFTER);
}

/** The process is draining for shutdown: the load balancer should send new work elsewhere. */
export function draining(): DomainError {
  return new DomainError(ErrorCode.SERVICE_UNAVAILABLE, NOT_READY, {}, RETRY_AFTER);
}
