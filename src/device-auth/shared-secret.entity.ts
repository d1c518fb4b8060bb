import { Column, Entity, Index, JoinColumn, ManyToOne } from 'typeorm';
import { BigIdColumn, InsertedAtColumn } from '../database/columns';
import { Device } from '../devices/device.entity';
import { Product } from '../products/product.entity';

/**
 * Shared secrets for NH1 device authentication. The secret itself is kept encrypted with the server key
 * (AES-256-GCM): HMAC verification needs the plain secret, so hashing is not an option, and a database leak alone
 * must not hand secrets out. Product-level and device-level secrets differ only in what they belong to.
 */
abstract class SharedSecretColumns {
  @BigIdColumn()
  id: string;

  /** `nhp_...` or `nhd_...`, sent by devices in `x-nh-key`. */
  @Column({ type: 'varchar', length: 64, unique: true })
  key: string;

  @Column({ name: 'secret_encrypted', type: 'bytea' })
  secretEncrypted: Buffer;

  @Column({ name: 'deactivated_at', type: 'timestamptz', nullable: true })
  deactivatedAt: Date | null;

  @InsertedAtColumn()
  insertedAt: Date;
}

@Entity('product_shared_secrets')
@Index('product_shared_secrets_product_id_idx', ['productId'])
export class ProductSharedSecret extends SharedSecretColumns {
  @Column({ name: 'product_id', type: 'bigint' })
  productId: string;

  @ManyToOne(() => Product, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'product_id' })
  product?: Product;
}

@Entity('device_shared_secrets')
@Index('device_shared_secrets_device_id_idx', ['deviceId'])
export class DeviceSharedSecret extends SharedSecretColumns {
  @Column({ name: 'device_id', type: 'bigint' })
  deviceId: string;

  @ManyToOne(() => Device, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'device_id' })
  device?: Device;
}
