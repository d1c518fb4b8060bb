import { DeploymentMembershipService } from '../deployments/deployment-membership.service';
import { Injectable } from '@nestjs/common';
import { AuditService } from '../audit/audit.service';
import { DeviceCertificatesService } from '../certificates/device-certificates.service';
import type { DeviceAccess, OrgAccess } from '../common/auth/actor';
import { DomainError } from '../common/errors/domain-error';
import { ALREADY_TAKEN, BLANK } from '../common/errors/messages';
import { isUniqueViolation } from '../common/errors/postgres-errors';
import { Created, pathSegment } from '../common/http/created';
import { type PaginationView, paginationView, type RawQuery } from '../common/http/pagination';
import { normaliseTags, UUID_PATTERN } from '../common/values';
import { Transactions, type Tx } from '../database/transactions';
import { FirmwareRecordsService } from '../firmware/firmware-records.service';
import { ProductsService } from '../products/products.service';
import { ScriptsService } from '../scripts/scripts.service';
import type { ScriptView } from '../scripts/dto/script.dto';
import type { ProductRecord } from '../products/product-record';
import {
  type DeviceCommand,
  DeviceCommands,
  DeviceConsole,
  DeviceScripts,
  UpdateNotifier,
} from './device-console';
import { countedByFleetCounters, type DeviceListQuery } from './device-list.query';
import type { MoveDeviceDto } from './dto/move-device.dto';
import { roleSatisfies } from '../common/auth/roles';
import { PendingUpdatesRepository } from '../firmware/pending-updates.repository';
import { IrohEndpointsRepository } from '../iroh/iroh-endpoints.repository';
import { LiveEvents } from '../live/live-events';
import { MembershipsRepository } from '../orgs/memberships.repository';
import { OrgsService } from '../orgs/orgs.service';
import { FleetOverviewService } from '../overview/fleet-overview.service';
import { deviceView } from './device-view';
import {
  ALREADY_THE_PRODUCT,
  DEVICE_NOT_CONNECTED,
  IDENTIFIER_IMMUTABLE,
  UNKNOWN_FIRMWARE,
} from './devices.errors';
import {
  DEVICE_EXTENSION_DEFAULTS,
  extensionChanges,
  extensionSettings,
  type ExtensionSettings,
} from '../common/extensions/extension-settings';
import type { ExtensionSettingsDto } from '../common/extensions/extension-settings.dto';
import { type DeviceChanges, DevicesRepository } from './devices.repository';
import type {
  ConsoleCodeDto,
  CreateDeviceDto,
  DeviceView,
  PutDeviceDto,
  UpdateDeviceDto,
  UpgradeDto,
} from './dto/device.dto';

@Injectable()
export class DevicesService {
  constructor(
    private readonly devices: DevicesRepository,
    private readonly transactions: Transactions,
    private readonly products: ProductsService,
    private readonly firmware: FirmwareRecordsService,
    private readonly console: DeviceConsole,
    private readonly commands: DeviceCommands,
    private readonly scriptRuns: DeviceScripts,
    private readonly scripts: ScriptsService,
    private readonly updates: UpdateNotifier,
    private readonly audit: AuditService,
    private readonly membership: DeploymentMembershipService,
    private readonly certificates: DeviceCertificatesService,
    private readonly orgs: OrgsService,
    private readonly memberships: MembershipsRepository,
    private readonly pendingUpdates: PendingUpdatesRepository,
    private readonly irohEndpoints: IrohEndpointsRepository,
    private readonly live: LiveEvents,
    private readonly fleetCounts: FleetOverviewService,
  ) {}

  async create(
    access: OrgAccess,
    productName: string,
    dto: CreateDeviceDto,
  ): Promise<Created<{ data: DeviceView }>> {
    const product = await this.products.findInOrg(access, productName);
    try {
      await this.transactions.run(async (tx) => {
        await this.devices.insert(
          {
            orgId: access.orgId,
            productId: product.id,
            identifier: dto.identifier,
            description: dto.description ?? null,
            tags: normaliseTags(dto.tags),
          },
          tx,
        );
        await this.audit.record(tx, {
          orgId: access.orgId,
          actor: access.actor,
          action: 'device.create',
          targetType: 'device',
          targetId: dto.identifier,
          details: { product: product.name },
        });
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw DomainError.invalidField('identifier', ALREADY_TAKEN);
      throw err;
    }
    const device = await this.load(product, dto.identifier);
    return new Created(this.location(access, product, dto.identifier), { data: device! });
  }

  async list(
    access: OrgAccess,
    productName: string,
    listQuery: DeviceListQuery,
  ): Promise<{ data: DeviceView[]; pagination: PaginationView }> {
    const product = await this.products.findInOrg(access, productName);
    // The page and its total at once, each on its own pooled connection.
    const counted = countedByFleetCounters(listQuery);
    const [rows, total] = await Promise.all([
      this.devices.pageForProduct(product.id, listQuery),
      counted === null
        ? this.devices.countForProduct(product.id, listQuery)
        : this.fleetCounts.devicesCounted(product.id, counted),
    ]);
    return { data: rows.map(deviceView), pagination: paginationView(listQuery.page, total) };
  }

  async show(access: OrgAccess, productName: string, identifier: string): Promise<{ data: DeviceView }> {
    const product = await this.products.findInOrg(access, productName);
    const device = await this.load(product, identifier);
    if (!device) throw DomainError.notFound();
    return { data: device };
  }

  /**
   * NervesHub's `POST .../devices/auth`: the device of the path's product a certificate was registered for, as
   * `show` answers it; NervesHub's 403 `{"status":"Unauthorized"}` for anything else (not one readable
   * certificate, unknown, or a device of another product or organization). The product is looked up first, so an
   * unknown product is the constant 404 as on every route under it.
   */
  async authByCertificate(
    access: OrgAccess,
    productName: string,
    certificate: string,
  ): Promise<{ data: DeviceView }> {
    const product = await this.products.findInOrg(access, productName);
    const deviceId = await this.certificates.deviceIdOf(certificate);
    const row = deviceId === null ? null : await this.devices.findRowByIdInProduct(product.id, deviceId);
    if (!row) throw DomainError.certificateUnauthorized();
    return { data: deviceView(row) };
  }

  /** `GET /api/devices/{identifier}`: the guard found the device among the caller's organizations. */
  async showById(access: DeviceAccess): Promise<{ data: DeviceView }> {
    const row = await this.devices.findRowById(access.deviceId);
    if (!row) throw DomainError.notFound();
    return { data: deviceView(row) };
  }

  async update(
    access: OrgAccess,
    productName: string,
    identifier: string,
    dto: UpdateDeviceDto,
  ): Promise<{ data: DeviceView }> {
    const product = await this.products.findInOrg(access, productName);
    const changes: DeviceChanges = {};
    if (dto.description !== undefined) changes.description = dto.description;
    if (dto.tags !== undefined) changes.tags = normaliseTags(dto.tags);
    if (dto.updates_enabled !== undefined) changes.updatesEnabled = dto.updates_enabled;
    if (Object.keys(changes).length > 0) {
      await this.transactions.run(async (tx) => {
        if (!(await this.devices.update(product.id, identifier, changes, tx))) throw DomainError.notFound();
        await this.audit.record(tx, {
          orgId: access.orgId,
          actor: access.actor,
          action: 'device.update',
          targetType: 'device',
          targetId: identifier,
          details: { product: product.name, ...dto },
        });
      });
    }
    if (changes.tags !== undefined) {
      // Its tags decide which deployment group it belongs to.
      const device = await this.devices.findByIdentifier(product.id, identifier);
      if (device) await this.membership.recomputeDevice(device.id);
    }
    const device = await this.load(product, identifier);
    if (!device) throw DomainError.notFound();
    return { data: device };
  }

  /** The extensions the device allows (false: it opts out); not part of the Device record (contract 5). */
  async showExtensions(
    access: OrgAccess,
    productName: string,
    identifier: string,
  ): Promise<{ data: ExtensionSettings }> {
    const product = await this.products.findInOrg(access, productName);
    const stored = await this.devices.extensionOptOuts(product.id, identifier);
    if (stored === null) throw DomainError.notFound();
    return { data: extensionSettings(stored, DEVICE_EXTENSION_DEFAULTS) };
  }

  /**
   * Changes the opt-outs named in the body, merged into the stored ones in the statement itself (concurrent changes
   * of different extensions both stay). Applies from the device's next connection. An empty body changes nothing.
   */
  async updateExtensions(
    access: OrgAccess,
    productName: string,
    identifier: string,
    dto: ExtensionSettingsDto,
  ): Promise<{ data: ExtensionSettings }> {
    const changes = extensionChanges(dto);
    if (Object.keys(changes).length === 0) return this.showExtensions(access, productName, identifier);
    const product = await this.products.findInOrg(access, productName);
    const stored = await this.transactions.run(async (tx) => {
      const merged = await this.devices.mergeExtensionOptOuts(product.id, identifier, changes, tx);
      if (merged === null) throw DomainError.notFound();
      await this.audit.record(tx, {
        orgId: access.orgId,
        actor: access.actor,
        action: 'device.extensions.update',
        targetType: 'device',
        targetId: identifier,
        details: { product: product.name, ...changes },
      });
      return merged;
    });
    return { data: extensionSettings(stored, DEVICE_EXTENSION_DEFAULTS) };
  }

  /**
   * `PUT .../devices/{identifier}` (NervesHub's update): as PATCH; the body may repeat the identifier, which cannot
   * change (422 otherwise).
   */
  async put(
    access: OrgAccess,
    productName: string,
    identifier: string,
    dto: PutDeviceDto,
  ): Promise<{ data: DeviceView }> {
    const { identifier: repeated, ...changes } = dto;
    if (repeated !== undefined && repeated !== identifier) {
      throw DomainError.invalidField('identifier', IDENTIFIER_IMMUTABLE);
    }
    return this.update(access, productName, identifier, changes);
  }

  async remove(access: OrgAccess, productName: string, identifier: string): Promise<void> {
    const product = await this.products.findInOrg(access, productName);
    await this.transactions.run(async (tx) => {
      if (!(await this.devices.delete(product.id, identifier, tx))) throw DomainError.notFound();
      await this.audit.record(tx, {
        orgId: access.orgId,
        actor: access.actor,
        action: 'device.delete',
        targetType: 'device',
        targetId: identifier,
        details: { product: product.name },
      });
    });
  }

  /** Records the manual upgrade (one per device; a newer one replaces one not yet delivered). */
  async upgrade(access: OrgAccess, productName: string, identifier: string, dto: UpgradeDto): Promise<void> {
    const product = await this.products.findInOrg(access, productName);
    const device = await this.devices.findByIdentifier(product.id, identifier);
    if (!device) throw DomainError.notFound();
    await this.recordUpgrade(access, device.id, identifier, product.id, dto.uuid);
  }

  async upgradeById(access: DeviceAccess, dto: UpgradeDto): Promise<void> {
    await this.recordUpgrade(access, access.deviceId, null, access.productId, dto.uuid);
  }

  async sendConsoleCode(access: DeviceAccess, dto: ConsoleCodeDto): Promise<void> {
    await this.sendCode(access.deviceId, dto);
  }

  private async sendCode(deviceId: string, dto: ConsoleCodeDto): Promise<void> {
    const code = dto.code ?? dto.body;
    if (code === undefined || code === '') throw DomainError.invalidField('code', BLANK);
    const delivered = await this.console.send(deviceId, code);
    if (!delivered) throw DomainError.conflict(DEVICE_NOT_CONNECTED);
  }

  /**
   * `POST .../reboot` and `.../reconnect`: the command reaches the device's socket on whichever instance holds it
   * (audited), or 409 when the device has no socket to take it: never accepted and silently lost.
   */
  async command(
    access: OrgAccess,
    productName: string,
    identifier: string,
    command: DeviceCommand,
  ): Promise<void> {
    const deviceId = await this.findId(access, productName, identifier);
    await this.runCommand(access, deviceId, identifier, command);
  }

  async commandById(access: DeviceAccess, command: DeviceCommand): Promise<void> {
    await this.runCommand(access, access.deviceId, null, command);
  }

  /**
   * NervesHub's `POST .../devices/{identifier}/move`: the device goes to another organization's product, keeping
   * its identity, certificates and secrets; it leaves its deployment group and any update not yet delivered (they
   * were the old product's firmware), and its network identities follow it. The caller must manage both
   * organizations: not a member of the target (or no such organization or product) is the constant 404, a lower
   * role the 403. Audited in both organizations; the device's socket is closed so that it reconnects under the
   * new product. Answers the device record.
   */
  async move(
    access: OrgAccess,
    productName: string,
    identifier: string,
    dto: MoveDeviceDto,
  ): Promise<{ data: DeviceView }> {
    const product = await this.products.findInOrg(access, productName);
    const device = await this.devices.findByIdentifier(product.id, identifier);
    if (!device) throw DomainError.notFound();
    return this.moveDevice(access, device.id, identifier, product, dto);
  }

  async moveById(access: DeviceAccess, dto: MoveDeviceDto): Promise<{ data: DeviceView }> {
    const row = await this.devices.findRowById(access.deviceId);
    if (!row) throw DomainError.notFound();
    const from = { id: access.productId, name: row.product_name };
    return this.moveDevice(access, access.deviceId, row.identifier, from, dto);
  }

  private async moveDevice(
    access: OrgAccess,
    deviceId: string,
    identifier: string,
    from: { id: string; name: string },
    dto: MoveDeviceDto,
  ): Promise<{ data: DeviceView }> {
    const org = await this.orgs.findByName(dto.new_org_name);
    const role = org ? await this.memberships.findRole(org.id, access.actor.userId) : null;
    if (!org || !role) throw DomainError.notFound();
    if (!roleSatisfies(role, 'manage')) throw DomainError.roleTooLow();
    const target = await this.products.findByName(org.id, dto.new_product_name);
    if (!target) throw DomainError.notFound();
    if (target.id === from.id) throw DomainError.invalidField('new_product_name', ALREADY_THE_PRODUCT);
    const details = {
      from: { org: access.orgName, product: from.name },
      to: { org: org.name, product: target.name },
    };
    await this.transactions.run(async (tx) => {
      if (!(await this.devices.move(deviceId, from.id, org.id, target.id, tx))) throw DomainError.notFound();
      await this.membership.leaveForMove(deviceId, tx);
      await this.pendingUpdates.deleteForDevice(deviceId, tx);
      await this.irohEndpoints.moveDeviceEndpoints(deviceId, org.id, tx);
      for (const orgId of new Set([access.orgId, org.id])) {
        await this.audit.record(tx, {
          orgId,
          actor: access.actor,
          action: 'device.move',
          targetType: 'device',
          targetId: identifier,
          details,
        });
      }
    });
    // It reconnects and joins under its new product; a device that is offline will when it comes back.
    await this.commands.run(deviceId, 'reconnect');
    const row = await this.devices.findRowById(deviceId);
    if (!row) throw DomainError.notFound();
    return { data: deviceView(row) };
  }

  /** `DELETE .../penalty`: out of the deployment penalty box, automatic updates on again (audited). */
  async clearPenaltyBox(access: OrgAccess, productName: string, identifier: string): Promise<void> {
    const deviceId = await this.findId(access, productName, identifier);
    await this.recordPenaltyCleared(access, deviceId, identifier);
  }

  async clearPenaltyBoxById(access: DeviceAccess): Promise<void> {
    await this.recordPenaltyCleared(access, access.deviceId, null);
  }

  /** `GET /api/devices/{identifier}/scripts`: the scripts of the device's product (paginated as the product's). */
  listScripts(
    access: DeviceAccess,
    query: RawQuery,
  ): Promise<{ data: ScriptView[]; pagination: PaginationView }> {
    return this.scripts.listInProduct(access.productId, query);
  }

  /**
   * `POST .../devices/{identifier}/scripts/{name_or_id}?timeout=`: runs the product's script on the device (by
   * name, else by id, as NervesHub) and answers its output. 404 for an unknown script; 403 "device not available
   * or responding" when no socket could run it or the device did not answer in time (NervesHub's answers).
   */
  async runScript(
    access: OrgAccess,
    productName: string,
    identifier: string,
    nameOrId: string,
    timeout: unknown,
  ): Promise<string> {
    const timeoutMs = scriptTimeout(timeout);
    const product = await this.products.findInOrg(access, productName);
    const device = await this.devices.findByIdentifier(product.id, identifier);
    if (!device) throw DomainError.notFound();
    return this.runScriptOn(product.id, device.id, nameOrId, timeoutMs);
  }

  async runScriptById(access: DeviceAccess, nameOrId: string, timeout: unknown): Promise<string> {
    return this.runScriptOn(access.productId, access.deviceId, nameOrId, scriptTimeout(timeout));
  }

  private async runScriptOn(
    productId: string,
    deviceId: string,
    nameOrId: string,
    timeoutMs: number,
  ): Promise<string> {
    const script = await this.scripts.findRunnable(productId, nameOrId);
    if (!script) throw DomainError.notFound();
    const output = await this.scriptRuns.run(deviceId, script.text, timeoutMs);
    if (output === null) throw DomainError.deviceUnavailable();
    return output;
  }

  /** `POST /api/orgs/.../devices/{identifier}/code`: as the short route. */
  async sendConsoleCodeInProduct(
    access: OrgAccess,
    productName: string,
    identifier: string,
    dto: ConsoleCodeDto,
  ): Promise<void> {
    const deviceId = await this.findId(access, productName, identifier);
    await this.sendCode(deviceId, dto);
  }

  private async runCommand(
    access: OrgAccess,
    deviceId: string,
    identifier: string | null,
    command: DeviceCommand,
  ): Promise<void> {
    if (!(await this.commands.run(deviceId, command))) throw DomainError.conflict(DEVICE_NOT_CONNECTED);
    await this.transactions.run(async (tx) =>
      this.audit.record(tx, {
        orgId: access.orgId,
        actor: access.actor,
        action: `device.${command}`,
        targetType: 'device',
        targetId: await this.auditTarget(deviceId, identifier, tx),
        details: {},
      }),
    );
  }

  private async recordPenaltyCleared(
    access: OrgAccess,
    deviceId: string,
    identifier: string | null,
  ): Promise<void> {
    await this.transactions.run(async (tx) => {
      if (!(await this.devices.clearPenaltyBox(deviceId, tx))) throw DomainError.notFound();
      await this.audit.record(tx, {
        orgId: access.orgId,
        actor: access.actor,
        action: 'device.penalty_clear',
        targetType: 'device',
        targetId: await this.auditTarget(deviceId, identifier, tx),
        details: {},
      });
    });
  }

  /** How audit entries name the device: its identifier (read in `tx` when the short route gave only its id). */
  private async auditTarget(deviceId: string, identifier: string | null, tx: Tx): Promise<string> {
    return identifier ?? (await this.devices.findIdentifierById(deviceId, tx)) ?? deviceId;
  }

  /** The id of the product's device, or 404 (product or device unknown, or not the caller's). */
  private async findId(access: OrgAccess, productName: string, identifier: string): Promise<string> {
    const product = await this.products.findInOrg(access, productName);
    const device = await this.devices.findByIdentifier(product.id, identifier);
    if (!device) throw DomainError.notFound();
    return device.id;
  }

  private async recordUpgrade(
    access: OrgAccess,
    deviceId: string,
    identifier: string | null,
    productId: string,
    uuid: string,
  ): Promise<void> {
    const firmwareId = UUID_PATTERN.test(uuid)
      ? await this.firmware.findIdByUuid(productId, uuid.toLowerCase())
      : undefined;
    if (!firmwareId) throw DomainError.invalidField('uuid', UNKNOWN_FIRMWARE);
    let target: string;
    try {
      target = await this.transactions.run(async (tx) => {
        await this.firmware.requestUpdate(deviceId, firmwareId, access.actor.userId, tx);
        // As NervesHub: a device a person upgrades by hand leaves automatic updates until turned on again.
        await this.devices.disableUpdates(deviceId, tx);
        const targetId = await this.auditTarget(deviceId, identifier, tx);
        await this.audit.record(tx, {
          orgId: access.orgId,
          actor: access.actor,
          action: 'device.upgrade',
          targetType: 'device',
          targetId,
          details: { firmware_uuid: uuid.toLowerCase() },
        });
        return targetId;
      });
    } catch (err) {
      // Deleted since it was read: the firmware (as if it had never matched), or the device or caller's user.
      const gone = this.firmware.deletedUpdateTarget(err);
      if (gone === 'firmware') throw DomainError.invalidField('uuid', UNKNOWN_FIRMWARE);
      if (gone !== undefined) throw DomainError.notFound();
      throw err;
    }
    this.live.deviceUpdate({ productId, identifier: target }, 'pending', null, uuid.toLowerCase());
    await this.updates.pendingUpdateChanged(deviceId);
  }

  private async load(product: ProductRecord, identifier: string) {
    const row = await this.devices.findRowByIdentifier(product.id, identifier);
    return row ? deviceView(row) : null;
  }

  private location(access: OrgAccess, product: ProductRecord, identifier: string): string {
    return `/api/orgs/${pathSegment(access.orgName)}/products/${pathSegment(product.name)}/devices/${pathSegment(identifier)}`;
  }
}

/** NervesHub's default wait for a script's answer. */
export const DEFAULT_SCRIPT_TIMEOUT_MS = 30_000;
/** The longest wait a caller may ask for: an HTTP request held open longer than this is not a support call. */
export const MAX_SCRIPT_TIMEOUT_MS = 300_000;

/** The `timeout` query parameter: milliseconds, an integer from 1 to MAX_SCRIPT_TIMEOUT_MS (422 otherwise). */
function scriptTimeout(value: unknown): number {
  if (value === undefined) return DEFAULT_SCRIPT_TIMEOUT_MS;
  const ms = typeof value === 'string' && /^\d{1,9}$/.test(value) ? Number(value) : Number.NaN;
  if (!(ms >= 1 && ms <= MAX_SCRIPT_TIMEOUT_MS)) {
    throw DomainError.invalidField(
      'timeout',
      `must be an integer from 1 to ${MAX_SCRIPT_TIMEOUT_MS} (milliseconds)`,
    );
  }
  return ms;
}
