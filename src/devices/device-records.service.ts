import { Injectable } from '@nestjs/common';
import type { Queryable } from '../database/transactions';
import type { Device, FirmwareMetadata } from './device.entity';
import {
  type DeviceJoin,
  type DeviceNames,
  type DisconnectedDevice,
  DevicesRepository,
} from './devices.repository';

export type { DeviceJoin } from './devices.repository';
export type { FirmwareMetadata } from './device.entity';

/**
 * What other features ask of the device records: the device gateway records joins and presence, the metrics count
 * connected devices. Apart from DevicesService (whose module imports the gateway's), so that the gateway and the
 * metrics can use it without a module cycle.
 */
@Injectable()
export class DeviceRecordsService {
  constructor(private readonly devices: DevicesRepository) {}

  /**
   * A `device` channel join, in one statement: stores the metadata (unchanged when null), marks the device
   * connected on `instanceId`, and reads the org's fwup public keys (when `withKeys`) and the device's pending
   * update. Null when the device no longer exists.
   */
  recordJoin(
    device: { deviceId: string; orgId: string },
    metadata: FirmwareMetadata | null,
    instanceId: string,
    withKeys: boolean,
  ): Promise<DeviceJoin | null> {
    return this.devices.recordJoin(device, metadata, instanceId, withKeys);
  }

  /** The product's device with this identifier, or null (the owner of a new device key). */
  findInProduct(productId: string, identifier: string): Promise<Device | null> {
    return this.devices.findByIdentifier(productId, identifier);
  }

  /** The device's extension settings and its product's (see allowedExtensions), or null when it is gone. */
  extensionSettings(deviceId: string): Promise<{ product: unknown; device: unknown } | null> {
    return this.devices.extensionSettings(deviceId);
  }

  /** The device with this identifier in any product (identifiers are unique), or null. */
  findProductByIdentifier(identifier: string): Promise<{ id: string; product_id: string } | null> {
    return this.devices.findProductByIdentifier(identifier);
  }

  /**
   * Registers a device in `tx` (NH1 registration by a product key; JITP, with the CA's template's tags and
   * description); its id, or none when it exists already.
   */
  registerIfAbsent(
    orgId: string,
    productId: string,
    identifier: string,
    tx: Queryable,
    template?: { tags: string[]; description: string | null },
  ): Promise<{ id: string }[]> {
    return this.devices.insertIfAbsent(orgId, productId, identifier, tx, template);
  }

  /**
   * Those of these devices that take updates now (`updates_enabled`, not in the penalty box): NervesHub sends a
   * device its group's archive only then.
   */
  takingUpdates(deviceIds: readonly string[]): Promise<Set<string>> {
    return this.devices.takingUpdates(deviceIds);
  }

  /** The instance holding the device's socket according to the database, or null when not connected. */
  holder(deviceId: string): Promise<string | null> {
    return this.devices.findHolder(deviceId);
  }

  /** The device is connected on `instanceId` (activity now). */
  markConnected(deviceId: string, instanceId: string): Promise<void> {
    return this.devices.markConnected(deviceId, instanceId);
  }

  /** The devices among `ids` still held by `instanceId` are disconnected (rows locked in id order). */
  markDisconnected(ids: readonly string[], instanceId: string): Promise<DisconnectedDevice[]> {
    return this.devices.markDisconnected(ids, instanceId);
  }

  /** Writes `last_communication` (ISO times `ats`) of the devices among `ids` still held by `instanceId`. */
  recordActivity(ids: readonly string[], ats: readonly string[], instanceId: string): Promise<void> {
    return this.devices.recordActivity(ids, ats, instanceId);
  }

  /** Every device held by `instanceId` becomes disconnected; answers those of the products `watched`. */
  disconnectAllHeldBy(instanceId: string, watched: readonly string[] = []): Promise<DisconnectedDevice[]> {
    return this.devices.disconnectAllHeldBy(instanceId, watched);
  }

  /** The devices `ids` are connected on `instanceId` again. */
  markConnectedAgain(ids: readonly string[], instanceId: string): Promise<void> {
    return this.devices.markConnectedAgain(ids, instanceId);
  }

  /**
   * Devices held by gateway instances whose lease ran out become disconnected (in `tx`); answers how many, and
   * those of the products `watched`.
   */
  disconnectFromExpiredInstances(
    tx: Queryable,
    watched: readonly string[] = [],
  ): Promise<{ reaped: number; watched: DisconnectedDevice[] }> {
    return this.devices.disconnectFromExpiredInstances(tx, watched);
  }

  /** How many devices are connected. */
  countConnected(): Promise<number> {
    return this.devices.countConnected();
  }

  /**
   * Orchestrated updates of `ids` ended badly: an attempt each; the penalty box always when the device reported the
   * failure (`penaliseAlways`), else at the rule's threshold or rate. Answers the devices in the penalty box.
   */
  recordUpdateFailures(
    ids: readonly string[],
    rule: { threshold: number; rateSeconds: number; rateAmount: number; penaltyMinutes: number },
    penaliseAlways: boolean,
    tx?: Queryable,
  ): Promise<string[]> {
    return this.devices.recordUpdateFailures(ids, rule, penaliseAlways, tx);
  }

  /** The identifiers of these devices, with their organization and product, by id (for the events naming them). */
  identifiersOf(ids: readonly string[], tx?: Queryable): Promise<DeviceNames[]> {
    return this.devices.identifiersOf(ids, tx);
  }

  /** The device's update completed: its update attempts and penalty box are cleared. */
  clearUpdateAttempts(id: string, tx?: Queryable): Promise<void> {
    return this.devices.clearUpdateAttempts(id, tx);
  }
}
