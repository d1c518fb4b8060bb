import { Column, Entity, Index, JoinColumn, ManyToOne, Unique } from 'typeorm';
import { BigIdColumn, InsertedAtColumn, UpdatedAtColumn } from '../database/columns';
import { Org } from '../orgs/org.entity';
import { Product } from '../products/product.entity';

/**
 * A CA certificate an organization registered (with proof of possession of its key): devices whose certificates it
 * signed can authenticate, and with a JITP template they are created on their first connection. Looked up by
 * `(org, serial)` by the API and by key identifier (a device certificate's AKI is its CA's SKI) by the device socket.
 */
@Entity('ca_certificates')
@Unique('ca_certificates_org_id_serial_key', ['orgId', 'serial'])
@Index('ca_certificates_ski_idx', ['ski'])
@Index('ca_certificates_aki_idx', ['aki'])
@Index('ca_certificates_jitp_product_id_idx', ['jitpProductId'])
@Index('ca_certificates_expiry_pending_idx', ['notAfter'], { where: 'expiry_notified_at IS NULL' })
export class CaCertificate {
  @BigIdColumn()
  id: string;

  @Column({ name: 'org_id', type: 'bigint' })
  orgId: string;

  @ManyToOne(() => Org, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'org_id' })
  org?: Org;

  /** The serial number in decimal (at most 20 octets: 49 digits). */
  @Column({ type: 'varchar', length: 64 })
  serial: string;

  @Column({ type: 'bytea', nullable: true })
  aki: Buffer | null;

  /** Required of a CA certificate (RFC 5280 4.2.1.2); the device socket finds the CA by it. */
  @Column({ type: 'bytea' })
  ski: Buffer;

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

  @Column({ type: 'varchar', length: 255, nullable: true })
  description: string | null;

  @Column({ type: 'bytea' })
  der: Buffer;

  /** JITP: the product devices of this CA are created in (null: no JITP; also when that product was deleted). */
  @Column({ name: 'jitp_product_id', type: 'bigint', nullable: true })
  jitpProductId: string | null;

  @ManyToOne(() => Product, { onDelete: 'SET NULL' })
  @JoinColumn({ name: 'jitp_product_id' })
  jitpProduct?: Product | null;

  @Column({ name: 'jitp_tags', type: 'text', array: true, default: () => "'{}'" })
  jitpTags: string[];

  @Column({ name: 'jitp_description', type: 'varchar', length: 255, nullable: true })
  jitpDescription: string | null;

  /** When a device last authenticated through this CA (kept by the device socket). */
  @Column({ name: 'last_used', type: 'timestamptz', nullable: true })
  lastUsed: Date | null;

  @InsertedAtColumn()
  insertedAt: Date;

  @UpdatedAtColumn()
  updatedAt: Date;
}
