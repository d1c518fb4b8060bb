import { Column, Entity, Index, JoinColumn, ManyToOne } from 'typeorm';
import { BigIdColumn, InsertedAtColumn, UpdatedAtColumn } from '../database/columns';
import type { ExtensionSettings } from '../common/extensions/extension-settings';
import { Org } from '../orgs/org.entity';
import { Product } from '../products/product.entity';
import { GatewayInstance } from '../gateway/gateway-instance.entity';

export const CONNECTION_STATUSES = ['connected', 'disconnected', 'not_seen'] as const;
export type ConnectionStatus = (typeof CONNECTION_STATUSES)[number];

/** `firmware_metadata` as the device reports it (all strings, any may be missing). */
export type FirmwareMetadata = Record<string, string | null>;

/**
 * Sort and filter indexes that TypeORM cannot describe (per-column DESC NULLS LAST, GIN, trigram) are
 * declared with `synchronize: false` here and created in the migration; see docs/queries.md.
 */
@Entity('devices')
@Index('devices_product_id_identifier_idx', { synchronize: false })
@Index('devices_product_id_inserted_at_idx', { synchronize: false })
@Index('devices_product_id_last_communication_idx', { synchronize: false })
@Index('devices_product_id_firmware_version_idx', { synchronize: false })
@Index('devices_product_id_connection_status_idx', { synchronize: false })
@Index('devices_tags_gin_idx', { synchronize: false })
@Index('devices_identifier_trgm_idx', { synchronize: false })
@Index('devices_org_id_idx', ['orgId'])
@Index('devices_connected_instance_id_idx', ['connectedInstanceId'])
@Index('devices_product_id_connected_at_idx', { synchronize: false })
@Index('devices_product_id_updates_blocked_until_idx', { synchronize: false })
@Index('devices_product_id_id_idx', { synchronize: false })
export class Device {
  @BigIdColumn()
  id: string;

  @Column({ name: 'org_id', type: 'bigint' })
  orgId: string;

  @ManyToOne(() => Org, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'org_id' })
  org?: Org;

  @Column({ name: 'product_id', type: 'bigint' })
  productId: string;

  @ManyToOne(() => Product, { onDelete: 'RESTRICT' })
  @JoinColumn({ name: 'product_id' })
  product?: Product;

  /** Unique across the server, so that `/api/devices/{identifier}` is unambiguous. */
  @Column({ type: 'varchar', length: 255, unique: true })
  identifier: string;

  @Column({ type: 'text', nullable: true })
  description: string | null;

  @Column({ type: 'text', array: true, default: () => "'{}'" })
  tags: string[];

  @Column({ name: 'updates_enabled', type: 'boolean', default: true })
  updatesEnabled: boolean;

  @Column({ name: 'updates_blocked_until', type: 'timestamptz', nullable: true })
  updatesBlockedUntil: Date | null;

  @Column({
    name: 'connection_status',
    type: 'enum',
    enum: CONNECTION_STATUSES,
    enumName: 'device_connection_status',
    default: 'not_seen',
  })
  connectionStatus: ConnectionStatus;

  @Column({ name: 'last_communication', type: 'timestamptz', nullable: true })
  lastCommunication: Date | null;

  @Column({ name: 'firmware_metadata', type: 'jsonb', nullable: true })
  firmwareMetadata: FirmwareMetadata | null;

  /** Copied from firmware_metadata.version / .platform so that filters and sorts use plain indexes. */
  @Column({ name: 'firmware_version', type: 'varchar', length: 255, nullable: true })
  firmwareVersion: string | null;

  @Column({ name: 'firmware_platform', type: 'varchar', length: 255, nullable: true })
  firmwarePlatform: string | null;

  /**
   * `semverSortKey(firmware_version)` (byte-wise order is SemVer precedence), null when the version is not SemVer:
   * deployment groups' version requirements are compared on it in SQL.
   */
  @Column({ name: 'firmware_version_key', type: 'varchar', length: 1024, nullable: true, collation: 'C' })
  firmwareVersionKey: string | null;

  /** When the device's update attempts started (device failure rate and threshold, as NervesHub's). */
  @Column({ name: 'update_attempts', type: 'timestamptz', array: true, default: () => "'{}'" })
  updateAttempts: Date[];

  /** When the current connection joined (deployment queues are FIFO or LIFO by it); null while not connected. */
  @Column({ name: 'connected_at', type: 'timestamptz', nullable: true })
  connectedAt: Date | null;

  /** The gateway instance holding the device's socket while connected (see GatewayInstance). */
  @Column({ name: 'connected_instance_id', type: 'uuid', nullable: true })
  connectedInstanceId: string | null;

  @ManyToOne(() => GatewayInstance, { onDelete: 'SET NULL' })
  @JoinColumn({ name: 'connected_instance_id' })
  connectedInstance?: GatewayInstance | null;

  /** Extensions the device opts out of (NervesHub's device `extensions`: a key set to false); see ExtensionSettings. */
  @Column({ type: 'jsonb', default: () => "'{}'" })
  extensions: Partial<ExtensionSettings>;

  @InsertedAtColumn()
  insertedAt: Date;

  @UpdatedAtColumn()
  updatedAt: Date;
}
