import type { Actor, DeviceAccess, OrgAccess } from '../../src/common/auth/actor';
import { DomainError, type FieldErrors } from '../../src/common/errors/domain-error';
import { ErrorCode } from '../../src/common/errors/error-codes';
import type { Transactions, Tx } from '../../src/database/transactions';
import type { Product } from '../../src/products/product.entity';

/**
 * Small fakes for services' unit tests (src/<feature>/<feature>.service.spec.ts): no database, no Nest app.
 * A service under test gets its repositories and other services as objects of jest.fn()s, cast with `fake`.
 */

/** The transaction handed to the work: repositories must receive this very object. */
export const fakeTx = { fake: 'tx' } as unknown as Tx;

/** Transactions that run the work at once with `fakeTx`; `run` is a jest.fn() to count transactions. */
export function fakeTransactions(): Transactions & { run: jest.Mock } {
  return { run: jest.fn((work: (tx: Tx) => Promise<unknown>) => work(fakeTx)) } as unknown as Transactions & {
    run: jest.Mock;
  };
}

/** A fake of T made of the given members (jest.fn()s, values); the rest are absent. */
export function fake<T>(members: Partial<Record<keyof T, unknown>>): T {
  return members as unknown as T;
}

export const actor: Actor = {
  userId: '7',
  email: 'ada@example.com',
  username: 'ada',
  name: 'Ada',
  tokenId: '11',
  scope: 'all',
};

export const orgAccess: OrgAccess = { actor, orgId: '3', orgName: 'acme', role: 'admin' };

export const deviceAccess: DeviceAccess = { ...orgAccess, deviceId: '42', productId: '5' };

export function product(overrides: Partial<Product> = {}): Product {
  return {
    id: '5',
    orgId: '3',
    name: 'gateway',
    allowUnsignedAtomvmFirmware: false,
    allowUnsignedEspIdfFirmware: false,
    allowedUpdateTools: ['fwup'],
    requireUniqueFirmwareVersion: true,
    extensions: { health: false, geo: false, local_shell: false, logging: false, network_identity: true },
    insertedAt: new Date('2026-01-01T00:00:00Z'),
    updatedAt: new Date('2026-01-01T00:00:00Z'),
    ...overrides,
  };
}

/** A PostgreSQL error as the driver reports it (TypeORM wraps it as `driverError`). */
export function pgError(code: string, constraint?: string): Error {
  return Object.assign(new Error(`pg ${code}`), { driverError: { code, constraint } });
}

/** The DomainError a promise rejects with (fails the test when it resolves or rejects with something else). */
export async function domainError(promise: Promise<unknown>): Promise<DomainError> {
  const err: unknown = await promise.then(
    () => new Error('expected a DomainError, but the call succeeded'),
    (e: unknown) => e,
  );
  if (!(err instanceof DomainError)) throw err;
  return err;
}

export async function expectNotFound(promise: Promise<unknown>): Promise<void> {
  expect((await domainError(promise)).code).toBe(ErrorCode.NOT_FOUND);
}

export async function expectConflict(promise: Promise<unknown>, detail: string): Promise<void> {
  const err = await domainError(promise);
  expect({ code: err.code, detail: err.detail }).toEqual({ code: ErrorCode.CONFLICT, detail });
}

export async function expectInvalid(promise: Promise<unknown>, fields: FieldErrors): Promise<void> {
  const err = await domainError(promise);
  expect({ code: err.code, fields: err.fields }).toEqual({ code: ErrorCode.VALIDATION_FAILED, fields });
}
