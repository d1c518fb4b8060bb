import { Column, Entity, Index, JoinColumn, ManyToOne, Unique } from 'typeorm';
import { BigIdColumn, InsertedAtColumn, UpdatedAtColumn } from '../database/columns';
import { Device } from '../devices/device.entity';

/**
 * A client certificate registered for one device: the device socket accepts it (matched by fingerprint) as that
 * device. Its subject's common name is the device's identifier.
 */
@Entity('device_certificates')
@Unique('device_certificates_device_id_serial_key', ['deviceId', 'serial'])
@Unique('device_certificates_fingerprint_key', ['fingerprint'])
@Index('device_certificates_public_key_fingerprint_idx', ['publicKeyFingerprint'])
@Index('device_certificates_aki_idx', ['aki'])
export class DeviceCertificate {
  @BigIdColumn()
  id: string;

  @Column({ name: 'device_id', type: 'bigint' })
  deviceId: string;

  @ManyToOne(() => Device, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'device_id' })
  device?: Device;

  /** The serial number in decimal. */
  @Column({ type: 'varchar', length: 64 })
  serial: string;

  @Column({ type: 'bytea', nullable: true })
  aki: Buffer | null;

  @Column({ type: 'bytea', nullable: true })
  ski: Buffer | null;

  @Column({ name: 'not_before', type: 'timestamptz' })
  notBefore: Date;

  @Column({ name: 'not_after', type: 'timestamptz' })
  notAfter: Date;

  @Column({ type: 'bytea' })
  der: Buffer;

  /** Lower-case hex SHA-256 of the DER. */
  @Column({ type: 'varchar', length: 64 })
  fingerprint: string;

  /** Lower-case hex SHA-256 of the DER SubjectPublicKeyInfo. */
  @Column({ name: 'public_key_fingerprint', type: 'varchar', length: 64 })
  publicKeyFingerprint: string;

  /** When the device last authenticated with it (kept by the device socket). */
  @Column({ name: 'last_used', type: 'timestamptz', nullable: true })
  lastUsed: Date | null;

  @InsertedAtColumn()
  insertedAt: Date;

  @UpdatedAtColumn()
  updatedAt: Date;
}
