import { Logger } from '@nestjs/common';
import { fake, fakeTransactions, fakeTx, pgError } from '../../test/support/unit-fakes';
import type { ReportedIdentity, ReportingDevice } from './dto/device-identity';
import { IrohClaimsService, MAX_REPORTED_IDENTITIES } from './iroh-claims.service';
import type { HolderRow, IrohEndpointsRepository } from './iroh-endpoints.repository';

const KEY = 'ab'.repeat(32);
const device: ReportingDevice = { id: '42', orgId: '3', identifier: 'dev-1' };

function holder(overrides: Partial<HolderRow> = {}): HolderRow {
  return {
    id: '70',
    org_id: '3',
    service: 'iroh',
    instance: 'default',
    device_id: null,
    user_id: null,
    ...overrides,
  };
}

function setup(held?: HolderRow) {
  const endpoints = {
    lockHolder: jest.fn(async () => held),
    insertDeviceReported: jest.fn(async () => undefined),
    refreshReported: jest.fn(async () => undefined),
    claimForDevice: jest.fn(async () => undefined),
    deleteDeviceInstanceExcept: jest.fn(async () => undefined),
  };
  const transactions = fakeTransactions();
  const service = new IrohClaimsService(fake<IrohEndpointsRepository>(endpoints), transactions);
  const report = (...identities: unknown[]) =>
    service.reportDeviceIdentities(device, identities as ReportedIdentity[]);
  return { service, endpoints, transactions, report };
}

let warn: jest.SpyInstance;
beforeEach(() => {
  warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
});
afterEach(() => warn.mockRestore());

describe('IrohClaimsService: a key nobody holds', () => {
  it('is created for the device (lower-cased, default instance), replacing its previous key of that instance', async () => {
    const { report, endpoints } = setup(undefined);
    await expect(report({ identifier: KEY.toUpperCase(), details: { relay: 'r1' } })).resolves.toEqual([
      { identifier: KEY, instance: 'default', outcome: 'created' },
    ]);
    expect(endpoints.lockHolder).toHaveBeenCalledWith(KEY, fakeTx);
    expect(endpoints.deleteDeviceInstanceExcept).toHaveBeenCalledWith('42', 'iroh', 'default', KEY, fakeTx);
    expect(endpoints.insertDeviceReported).toHaveBeenCalledWith(
      {
        orgId: '3',
        identifier: KEY,
        service: 'iroh',
        instance: 'default',
        details: { relay: 'r1' },
        deviceId: '42',
      },
      fakeTx,
    );
  });

  it('a blank instance means the default one; a given instance is trimmed', async () => {
    const { report } = setup(undefined);
    await expect(
      report({ identifier: KEY, instance: '  ' }, { identifier: 'cd'.repeat(32), instance: ' b ' }),
    ).resolves.toEqual([
      { identifier: KEY, instance: 'default', outcome: 'created' },
      { identifier: 'cd'.repeat(32), instance: 'b', outcome: 'created' },
    ]);
  });
});

describe('IrohClaimsService: a key somebody holds', () => {
  it('held by the device under the same instance: refreshed (updated)', async () => {
    const { report, endpoints } = setup(holder({ device_id: '42' }));
    await expect(report({ identifier: KEY, details: { a: 1 } })).resolves.toEqual([
      { identifier: KEY, instance: 'default', outcome: 'updated' },
    ]);
    expect(endpoints.refreshReported).toHaveBeenCalledWith('70', { a: 1 }, fakeTx);
    expect(endpoints.deleteDeviceInstanceExcept).not.toHaveBeenCalled();
  });

  it("an unowned operator row of the device's organization: claimed, the device's other key of the instance dropped", async () => {
    const { report, endpoints } = setup(holder({ instance: 'x' }));
    await expect(report({ identifier: KEY, instance: 'y' })).resolves.toEqual([
      { identifier: KEY, instance: 'y', outcome: 'claimed' },
    ]);
    expect(endpoints.deleteDeviceInstanceExcept).toHaveBeenCalledWith('42', 'iroh', 'y', KEY, fakeTx);
    expect(endpoints.claimForDevice).toHaveBeenCalledWith('70', '42', 'y', {}, fakeTx);
  });

  it.each([
    ['held_by_another_organization', holder({ org_id: '4' })],
    ['held_by_another_service', holder({ service: 'other' })],
    ['held_under_another_instance', holder({ device_id: '42', instance: 'other' })],
    ['held_by_another_device', holder({ device_id: '43' })],
    ['held_by_member', holder({ user_id: '7' })],
    // The organization is checked first: another organization's member row says nothing about who holds it.
    ['held_by_another_organization', holder({ org_id: '4', user_id: '7', device_id: '43' })],
  ])('refused (%s): nothing changes, a warning is logged', async (reason, held) => {
    const { report, endpoints } = setup(held);
    await expect(report({ identifier: KEY })).resolves.toEqual([
      { identifier: KEY, instance: 'default', outcome: 'refused', reason },
    ]);
    expect(endpoints.insertDeviceReported).not.toHaveBeenCalled();
    expect(endpoints.refreshReported).not.toHaveBeenCalled();
    expect(endpoints.claimForDevice).not.toHaveBeenCalled();
    expect(endpoints.deleteDeviceInstanceExcept).not.toHaveBeenCalled();
    expect(warn).toHaveBeenCalledWith(
      expect.objectContaining({ device: 'dev-1', endpointId: KEY, reason }),
      'iroh endpoint report refused',
    );
  });
});

describe('IrohClaimsService: entries that are not valid', () => {
  it.each([
    [{ identifier: 'xyz' }, { identifier: 'xyz', instance: null, reason: 'invalid_identifier' }],
    [{ identifier: 5 }, { identifier: null, instance: null, reason: 'invalid_identifier' }],
    ['not an object', { identifier: null, instance: null, reason: 'invalid_identifier' }],
    [
      { identifier: KEY, instance: 7 },
      { identifier: KEY, instance: null, reason: 'invalid_instance' },
    ],
    [
      { identifier: KEY, instance: 'i'.repeat(65) },
      { identifier: KEY, instance: 'i'.repeat(65), reason: 'invalid_instance' },
    ],
    [
      { identifier: KEY, details: [1] },
      { identifier: KEY, instance: null, reason: 'invalid_details' },
    ],
  ])('%j is skipped without a transaction', async (entry, expected) => {
    const { report, transactions } = setup(undefined);
    await expect(report(entry)).resolves.toEqual([{ ...expected, outcome: 'skipped' }]);
    expect(transactions.run).not.toHaveBeenCalled();
  });

  it(`only the first ${MAX_REPORTED_IDENTITIES} entries are decided; the rest are skipped`, async () => {
    const { report, transactions } = setup(undefined);
    const keys = Array.from({ length: MAX_REPORTED_IDENTITIES + 2 }, (_, i) =>
      i.toString(16).padStart(64, '0'),
    );
    const results = await report(...keys.map((identifier) => ({ identifier })));
    expect(results.map((r) => r.outcome)).toEqual([
      ...Array<string>(MAX_REPORTED_IDENTITIES).fill('created'),
      'skipped',
      'skipped',
    ]);
    expect(results[MAX_REPORTED_IDENTITIES]).toMatchObject({ reason: 'too_many_identities' });
    expect(transactions.run).toHaveBeenCalledTimes(MAX_REPORTED_IDENTITIES);
  });

  it('a report that is not an array decides nothing', async () => {
    const { service, transactions } = setup(undefined);
    await expect(
      service.reportDeviceIdentities(device, 'nope' as unknown as ReportedIdentity[]),
    ).resolves.toEqual([]);
    expect(transactions.run).not.toHaveBeenCalled();
  });
});

describe('IrohClaimsService: races', () => {
  it('a lost race (unique violation, deadlock) is decided again on what won', async () => {
    const { report, endpoints, transactions } = setup(undefined);
    endpoints.insertDeviceReported.mockRejectedValueOnce(pgError('23505', 'iroh_endpoints_identifier_key'));
    endpoints.lockHolder.mockResolvedValueOnce(undefined).mockResolvedValueOnce(holder({ device_id: '42' }));
    await expect(report({ identifier: KEY })).resolves.toEqual([
      { identifier: KEY, instance: 'default', outcome: 'updated' },
    ]);
    expect(transactions.run).toHaveBeenCalledTimes(2);
  });

  it('gives up after three attempts and rethrows', async () => {
    const { report, endpoints, transactions } = setup(undefined);
    const deadlock = pgError('40P01');
    endpoints.insertDeviceReported.mockRejectedValue(deadlock);
    await expect(report({ identifier: KEY })).rejects.toBe(deadlock);
    expect(transactions.run).toHaveBeenCalledTimes(3);
  });

  it('a device deleted meanwhile (foreign key) is refused as device_not_found, without a retry', async () => {
    const { report, endpoints, transactions } = setup(undefined);
    endpoints.insertDeviceReported.mockRejectedValue(pgError('23503', 'iroh_endpoints_device_id_fkey'));
    await expect(report({ identifier: KEY })).resolves.toEqual([
      { identifier: KEY, instance: 'default', outcome: 'refused', reason: 'device_not_found' },
    ]);
    expect(transactions.run).toHaveBeenCalledTimes(1);
  });

  it('any other failure is rethrown at once', async () => {
    const { report, endpoints, transactions } = setup(undefined);
    const failure = new Error('boom');
    endpoints.insertDeviceReported.mockRejectedValue(failure);
    await expect(report({ identifier: KEY })).rejects.toBe(failure);
    expect(transactions.run).toHaveBeenCalledTimes(1);
  });
});
