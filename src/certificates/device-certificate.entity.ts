import { Column, Entity, Index, JoinColumn, ManyToOne, Unique } from 'typeorm';
import { BigIdColumn, InsertedAtColumn, UpdatedAtColumn } from '../database/columns';
import { Device } from '../devices/device.entity';
import { CaCertificate } from './ca-certificate.entity';

/**
 * A client certificate registered for one device: the device socket accepts it (matched by fingerprint) as that
 * device. Its subject's common name is the device's identifier.
 */
@Entity('device_certificates')
@Unique('device_certificates_device_id_serial_key', ['deviceId', 'serial'])
@Unique('device_certificates_fingerprint_key', ['fingerprint'])
@Index('device_certificates_public_key_fingerprint_idx', ['publicKeyFingerprint'])
@Index('device_certificates_aki_idx', ['aki'])
@Index('device_certificates_ca_certificate_id_idx', ['caCertificateId'])
@Index('device_certificates_expiry_pending_idx', ['notAfter'], { where: 'expiry_notified_at IS NULL' })
export class DeviceCertificate {
  @BigIdColumn()
  id: string;

  @Column({ name: 'device_id', type: 'bigint' })
  deviceId: string;

  @ManyToOne(() => Device, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'device_id' })
  device?: Device;

  /**
   * The CA certificate on whose authority the device socket registered this certificate (a device's first connection
   * with a certificate that CA signed, JITP included); null when it was registered through the API. Such a
   * certificate is trusted only as long as that CA is (see CertificateDeviceAuthenticator), and deleting the CA
   * deletes it (revocation by deletion).
   */
  @Column({ name: 'ca_certificate_id', type: 'bigint', nullable: true })
  caCertificateId: string | null;

  @ManyToOne(() => CaCertificate, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'ca_certificate_id' })
  caCertificate?: CaCertificate | null;

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

  /**
   * When the expiry scan wrote `certificate.expiring` for it (null: not yet): sent once per certificate (a renewed
   * certificate is another row).
   */
  @Column({ name: 'expiry_notified_at', type: 'timestamptz', nullable: true })
  expiryNotifiedAt: Date | null;

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
