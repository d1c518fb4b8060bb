import type { DeploymentMembershipService } from '../deployments/deployment-membership.service';
import type { PendingUpdatesRepository } from '../firmware/pending-updates.repository';
import type { IrohEndpointsRepository } from '../iroh/iroh-endpoints.repository';
import type { MembershipsRepository } from '../orgs/memberships.repository';
import type { OrgsService } from '../orgs/orgs.service';
import {
  deviceAccess,
  expectConflict,
  expectInvalid,
  expectNotFound,
  fake,
  fakeTransactions,
  fakeTx,
  orgAccess,
  pgError,
  product,
} from '../../test/support/unit-fakes';
import type { AuditService } from '../audit/audit.service';
import type { DeviceCertificatesService } from '../certificates/device-certificates.service';
import { BLANK } from '../common/errors/messages';
import type { FirmwareRecordsService } from '../firmware/firmware-records.service';
import type { ProductsService } from '../products/products.service';
import type { DeviceCommands, DeviceConsole, DeviceScripts, UpdateNotifier } from './device-console';
import type { ScriptsService } from '../scripts/scripts.service';
import type { DeviceRow } from './device-view';
import { DEVICE_NOT_CONNECTED, UNKNOWN_FIRMWARE } from './devices.errors';
import type { DevicesRepository } from './devices.repository';
import { DevicesService } from './devices.service';
import type { LiveEvents } from '../live/live-events';
import type { FleetOverviewService } from '../overview/fleet-overview.service';

const UUID = '0b7d2f4e-6c1a-4e8b-9d3f-2a5c7e9b1d40';

const row: DeviceRow = {
  identifier: 'dev-1',
  description: null,
  tags: [],
  firmware_version: null,
  connection_status: 'not_seen',
  last_communication: null,
  updates_enabled: true,
  updates_blocked_until: null,
  firmware_metadata: null,
  org_name: 'acme',
  product_name: 'gateway',
  deployment_group_name: null,
  deployment_group_is_active: null,
  deployment_group_firmware_uuid: null,
  deployment_group_firmware_version: null,
};

function setup() {
  const devices = {
    insert: jest.fn(async () => undefined),
    update: jest.fn(async () => true),
    delete: jest.fn(async () => true),
    findRowByIdentifier: jest.fn(async () => row),
    findByIdentifier: jest.fn(async () => ({ id: '42' })),
    findIdentifierById: jest.fn(async () => 'dev-1'),
    disableUpdates: jest.fn(async () => undefined),
    clearPenaltyBox: jest.fn(async () => true),
  };
  const membership = { recomputeDevice: jest.fn(async () => null) };
  const firmware = {
    findIdByUuid: jest.fn(async () => '77'),
    requestUpdate: jest.fn(async () => undefined),
    deletedUpdateTarget: jest.fn(() => undefined as string | undefined),
  };
  const products = { findInOrg: jest.fn(async () => product()) };
  const deviceConsole = { send: jest.fn(async () => true) };
  const commands = { run: jest.fn(async () => true) };
  const scriptRuns = { run: jest.fn<Promise<string | null>, unknown[]>(async () => 'output') };
  const scripts = {
    findRunnable: jest.fn<Promise<{ id: string; text: string } | null>, unknown[]>(async () => ({
      id: '5',
      text: 'IO.puts(1)',
    })),
    listInProduct: jest.fn(async () => ({ data: [], pagination: {} })),
  };
  const updates = { pendingUpdateChanged: jest.fn(async () => undefined) };
  const audit = { record: jest.fn(async () => undefined) };
  const service = new DevicesService(
    fake<DevicesRepository>(devices),
    fakeTransactions(),
    fake<ProductsService>(products),
    fake<FirmwareRecordsService>(firmware),
    fake<DeviceConsole>(deviceConsole),
    fake<DeviceCommands>(commands),
    fake<DeviceScripts>(scriptRuns),
    fake<ScriptsService>(scripts),
    fake<UpdateNotifier>(updates),
    fake<AuditService>(audit),
    fake<DeploymentMembershipService>(membership),
    fake<DeviceCertificatesService>({}),
    fake<OrgsService>({}),
    fake<MembershipsRepository>({}),
    fake<PendingUpdatesRepository>({}),
    fake<IrohEndpointsRepository>({}),
    fake<LiveEvents>({ deviceUpdate: jest.fn() }),
    fake<FleetOverviewService>({}),
  );
  return {
    service,
    devices,
    firmware,
    deviceConsole,
    commands,
    scriptRuns,
    scripts,
    updates,
    audit,
    membership,
  };
}

describe('DevicesService: tags', () => {
  it('create stores the tags normalised (split on commas, trimmed, blanks and repeats dropped)', async () => {
    const { service, devices } = setup();
    await service.create(orgAccess, 'gateway', { identifier: 'dev-1', tags: ' a, b,,a , c ' });
    expect(devices.insert).toHaveBeenCalledWith(
      { orgId: '3', productId: '5', identifier: 'dev-1', description: null, tags: ['a', 'b', 'c'] },
      fakeTx,
    );
  });

  it('create without tags stores none', async () => {
    const { service, devices } = setup();
    await service.create(orgAccess, 'gateway', { identifier: 'dev-1' });
    expect(devices.insert).toHaveBeenCalledWith(expect.objectContaining({ tags: [] }), fakeTx);
  });

  it('create answers a taken identifier (unique violation) as 422 identifier', async () => {
    const { service, devices } = setup();
    devices.insert.mockRejectedValue(pgError('23505', 'devices_product_id_identifier_key'));
    await expectInvalid(service.create(orgAccess, 'gateway', { identifier: 'dev-1' }), {
      identifier: ['has already been taken'],
    });
  });

  it('update normalises an array of tags, and passes only the fields given', async () => {
    const { service, devices } = setup();
    await service.update(orgAccess, 'gateway', 'dev-1', { tags: [' x ', 'y', 'x', ''] });
    expect(devices.update).toHaveBeenCalledWith('5', 'dev-1', { tags: ['x', 'y'] }, fakeTx);
  });

  it('update with no field opens no transaction, and still answers the device (404 when absent)', async () => {
    const { service, devices, audit } = setup();
    await expect(service.update(orgAccess, 'gateway', 'dev-1', {})).resolves.toEqual({
      data: expect.objectContaining({ identifier: 'dev-1' }),
    });
    expect(devices.update).not.toHaveBeenCalled();
    expect(audit.record).not.toHaveBeenCalled();
    devices.findRowByIdentifier.mockResolvedValue(null as unknown as DeviceRow);
    await expectNotFound(service.update(orgAccess, 'gateway', 'nope', {}));
  });

  it('update of an unknown device is a 404 and records nothing', async () => {
    const { service, devices, audit } = setup();
    devices.update.mockResolvedValue(false);
    await expectNotFound(service.update(orgAccess, 'gateway', 'nope', { description: 'x' }));
    expect(audit.record).not.toHaveBeenCalled();
  });
});

describe('DevicesService: upgrade', () => {
  it.each(['not-a-uuid', `${UUID}x`, "'; DROP TABLE firmwares; --", ''])(
    'a uuid that is not a uuid (%j) is the 422 of an unknown firmware and never reaches the database',
    async (uuid) => {
      const { service, firmware, updates } = setup();
      await expectInvalid(service.upgrade(orgAccess, 'gateway', 'dev-1', { uuid }), {
        uuid: [UNKNOWN_FIRMWARE],
      });
      expect(firmware.findIdByUuid).not.toHaveBeenCalled();
      expect(firmware.requestUpdate).not.toHaveBeenCalled();
      expect(updates.pendingUpdateChanged).not.toHaveBeenCalled();
    },
  );

  it("looks the uuid up lower-cased in the device's product; an unknown one is 422", async () => {
    const { service, firmware } = setup();
    firmware.findIdByUuid.mockResolvedValue(undefined as unknown as string);
    await expectInvalid(service.upgradeById(deviceAccess, { uuid: UUID.toUpperCase() }), {
      uuid: [UNKNOWN_FIRMWARE],
    });
    expect(firmware.findIdByUuid).toHaveBeenCalledWith('5', UUID);
    expect(firmware.requestUpdate).not.toHaveBeenCalled();
  });

  it('an unknown device is a 404 before the uuid is looked at', async () => {
    const { service, devices, firmware } = setup();
    devices.findByIdentifier.mockResolvedValue(null as unknown as { id: string });
    await expectNotFound(service.upgrade(orgAccess, 'gateway', 'nope', { uuid: UUID }));
    expect(firmware.findIdByUuid).not.toHaveBeenCalled();
  });

  it('records the update for the caller, audits it, then tells the device side', async () => {
    const { service, firmware, audit, updates } = setup();
    await service.upgrade(orgAccess, 'gateway', 'dev-1', { uuid: UUID });
    expect(firmware.requestUpdate).toHaveBeenCalledWith('42', '77', '7', fakeTx);
    expect(audit.record).toHaveBeenCalledWith(
      fakeTx,
      expect.objectContaining({
        action: 'device.upgrade',
        targetId: 'dev-1',
        details: { firmware_uuid: UUID },
      }),
    );
    expect(updates.pendingUpdateChanged).toHaveBeenCalledWith('42');
    expect(firmware.requestUpdate.mock.invocationCallOrder[0]).toBeLessThan(
      updates.pendingUpdateChanged.mock.invocationCallOrder[0],
    );
  });

  it("turns the device's automatic updates off in the same transaction (as NervesHub)", async () => {
    const { service, devices } = setup();
    await service.upgrade(orgAccess, 'gateway', 'dev-1', { uuid: UUID });
    expect(devices.disableUpdates).toHaveBeenCalledWith('42', fakeTx);
  });

  it('by id: the audit names the device by its identifier, read in the transaction', async () => {
    const { service, devices, audit } = setup();
    await service.upgradeById(deviceAccess, { uuid: UUID });
    expect(devices.findIdentifierById).toHaveBeenCalledWith('42', fakeTx);
    expect(audit.record).toHaveBeenCalledWith(fakeTx, expect.objectContaining({ targetId: 'dev-1' }));
  });

  describe('the firmware, device or user deleted between the read and the insert', () => {
    const race = pgError('23503', 'pending_updates_firmware_id_fkey');

    it("'firmware' is the 422 of an unknown firmware", async () => {
      const { service, firmware, updates } = setup();
      firmware.requestUpdate.mockRejectedValue(race);
      firmware.deletedUpdateTarget.mockReturnValue('firmware');
      await expectInvalid(service.upgrade(orgAccess, 'gateway', 'dev-1', { uuid: UUID }), {
        uuid: [UNKNOWN_FIRMWARE],
      });
      expect(firmware.deletedUpdateTarget).toHaveBeenCalledWith(race);
      expect(updates.pendingUpdateChanged).not.toHaveBeenCalled();
    });

    it.each(['device', 'requester'])("'%s' is a 404", async (target) => {
      const { service, firmware, updates } = setup();
      firmware.requestUpdate.mockRejectedValue(race);
      firmware.deletedUpdateTarget.mockReturnValue(target);
      await expectNotFound(service.upgrade(orgAccess, 'gateway', 'dev-1', { uuid: UUID }));
      expect(updates.pendingUpdateChanged).not.toHaveBeenCalled();
    });

    it('any other failure is rethrown as it is', async () => {
      const { service, firmware, updates } = setup();
      const failure = pgError('40P01');
      firmware.requestUpdate.mockRejectedValue(failure);
      await expect(service.upgrade(orgAccess, 'gateway', 'dev-1', { uuid: UUID })).rejects.toBe(failure);
      expect(updates.pendingUpdateChanged).not.toHaveBeenCalled();
    });
  });
});

describe('DevicesService: console code', () => {
  it.each([{}, { code: '' }, { body: '' }])('blank code (%j) is 422 code and sends nothing', async (dto) => {
    const { service, deviceConsole } = setup();
    await expectInvalid(service.sendConsoleCode(deviceAccess, dto), { code: [BLANK] });
    expect(deviceConsole.send).not.toHaveBeenCalled();
  });

  it('sends `code`, or its alias `body`, to the device', async () => {
    const { service, deviceConsole } = setup();
    await service.sendConsoleCode(deviceAccess, { code: 'IO.puts(1)\n' });
    await service.sendConsoleCode(deviceAccess, { body: 'h()\n' });
    expect(deviceConsole.send.mock.calls).toEqual([
      ['42', 'IO.puts(1)\n'],
      ['42', 'h()\n'],
    ]);
  });

  it('code that no console connection received is a 409', async () => {
    const { service, deviceConsole } = setup();
    deviceConsole.send.mockResolvedValue(false);
    await expectConflict(service.sendConsoleCode(deviceAccess, { code: 'x' }), DEVICE_NOT_CONNECTED);
  });
});

describe('DevicesService: reboot, reconnect and the penalty box', () => {
  it.each(['reboot', 'reconnect'] as const)(
    '%s: sent to the device, then audited under its identifier',
    async (command) => {
      const { service, commands, audit } = setup();
      await service.command(orgAccess, 'gateway', 'dev-1', command);
      expect(commands.run).toHaveBeenCalledWith('42', command);
      expect(audit.record).toHaveBeenCalledWith(
        expect.anything(),
        expect.objectContaining({ action: `device.${command}`, targetType: 'device', targetId: 'dev-1' }),
      );
    },
  );

  it('a command no socket took is a 409, and nothing is audited', async () => {
    const { service, commands, audit } = setup();
    commands.run.mockResolvedValue(false);
    await expectConflict(service.commandById(deviceAccess, 'reboot'), DEVICE_NOT_CONNECTED);
    expect(audit.record).not.toHaveBeenCalled();
  });

  it('an unknown device is a 404 before anything is sent', async () => {
    const { service, devices, commands } = setup();
    devices.findByIdentifier.mockResolvedValue(undefined as never);
    await expectNotFound(service.command(orgAccess, 'gateway', 'nope', 'reconnect'));
    expect(commands.run).not.toHaveBeenCalled();
  });

  it('clearing the penalty box is audited in the same transaction; a device gone meanwhile is a 404', async () => {
    const { service, devices, audit } = setup();
    await service.clearPenaltyBoxById(deviceAccess);
    expect(devices.clearPenaltyBox).toHaveBeenCalledWith('42', expect.anything());
    expect(audit.record).toHaveBeenCalledWith(
      expect.anything(),
      expect.objectContaining({ action: 'device.penalty_clear', targetId: 'dev-1' }),
    );
    devices.clearPenaltyBox.mockResolvedValue(false);
    audit.record.mockClear();
    await expectNotFound(service.clearPenaltyBox(orgAccess, 'gateway', 'dev-1'));
    expect(audit.record).not.toHaveBeenCalled();
  });
});

describe('DevicesService: support scripts', () => {
  it('runs the script found by name or id with the timeout asked for (30 s by default)', async () => {
    const { service, scripts, scriptRuns } = setup();
    expect(await service.runScriptById(deviceAccess, 'diag', undefined)).toBe('output');
    expect(scripts.findRunnable).toHaveBeenCalledWith(deviceAccess.productId, 'diag');
    expect(scriptRuns.run).toHaveBeenCalledWith('42', 'IO.puts(1)', 30_000);
    await service.runScript(orgAccess, 'gateway', 'dev-1', '5', '1500');
    expect(scriptRuns.run).toHaveBeenLastCalledWith('42', 'IO.puts(1)', 1500);
  });

  it.each(['0', '300001', '1e3', ' 5', '', ['1', '2']])(
    'timeout %j is 422 timeout, before any lookup',
    async (timeout) => {
      const { service, scripts, scriptRuns } = setup();
      await expect(service.runScriptById(deviceAccess, 'diag', timeout)).rejects.toMatchObject({
        fields: { timeout: [expect.stringContaining('integer from 1 to 300000')] },
      });
      expect(scripts.findRunnable).not.toHaveBeenCalled();
      expect(scriptRuns.run).not.toHaveBeenCalled();
    },
  );

  it('an unknown script is a 404; no answer from the device is the 403 with its message', async () => {
    const { service, scripts, scriptRuns } = setup();
    scripts.findRunnable.mockResolvedValueOnce(null);
    await expectNotFound(service.runScriptById(deviceAccess, 'nope', undefined));
    expect(scriptRuns.run).not.toHaveBeenCalled();
    scriptRuns.run.mockResolvedValueOnce(null);
    await expect(service.runScriptById(deviceAccess, 'diag', undefined)).rejects.toMatchObject({
      code: 'DEVICE_UNAVAILABLE',
      detail: 'device not available or responding',
    });
  });
});
