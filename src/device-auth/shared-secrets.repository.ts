import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { PreparedStatement, readRows } from '../database/read-rows';
import type { Queryable, Tx } from '../database/transactions';
import { DeviceSharedSecret, ProductSharedSecret } from './shared-secret.entity';

// Read on every device connection (prepared once per pool connection).
const FIND_ACTIVE_PRODUCT_KEY = new PreparedStatement(
  `SELECT s.secret_encrypted, p.id AS product_id, p.org_id, d.id AS claimed_id, d.product_id AS claimed_product_id
     FROM product_shared_secrets s JOIN products p ON p.id = s.product_id
     LEFT JOIN devices d ON d.identifier = $2
    WHERE s.key = $1 AND s.deactivated_at IS NULL`,
);
const FIND_ACTIVE_DEVICE_KEY = new PreparedStatement(
  `SELECT s.secret_encrypted, d.id AS device_id, d.identifier, d.product_id, d.org_id
     FROM device_shared_secrets s JOIN devices d ON d.id = s.device_id
    WHERE s.key = $1 AND s.deactivated_at IS NULL`,
);

export type SecretRow = ProductSharedSecret | DeviceSharedSecret;

/** An active product key (`nhp_`) with its product, and the device holding the identifier a token claims. */
export interface ProductKeyRow {
  secret_encrypted: Buffer;
  product_id: string;
  org_id: string;
  /** The device with the identifier the token claims, looked up with the key (product keys only). */
  claimed_id?: string | null;
  claimed_product_id?: string | null;
}

/** An active device key (`nhd_`) with its device. */
export interface DeviceKeyRow extends ProductKeyRow {
  device_id: string;
  identifier: string;
}

/**
 * The `product_shared_secrets` and `device_shared_secrets` tables, and the device reads and registration that
 * NH1 authentication does with a key (a product key registers the unknown devices it authenticates).
 */
@Injectable()
export class SharedSecretsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** Inserts a key (a unique violation on a key collision). */
  insert<T extends SecretRow>(entity: new () => T, values: Partial<T>, tx: Tx): Promise<T> {
    const repo = tx.getRepository(entity);
    return repo.save(repo.create(values as T));
  }

  /** Every key of the product, deactivated ones included, oldest first. */
  listForProduct(productId: string): Promise<ProductSharedSecret[]> {
    return this.db
      .getRepository(ProductSharedSecret)
      .find({ where: { productId }, order: { insertedAt: 'ASC', id: 'ASC' } });
  }

  /** The product's key, its row locked, or undefined. */
  async lockProductKey(
    productId: string,
    key: string,
    tx: Queryable,
  ): Promise<{ id: string; deactivated_at: Date | null } | undefined> {
    const rows: { id: string; deactivated_at: Date | null }[] = await tx.query(
      `SELECT id, deactivated_at FROM product_shared_secrets WHERE product_id = $1 AND key = $2 FOR UPDATE`,
      [productId, key],
    );
    return rows[0];
  }

  async deactivateProductKey(id: string, tx: Queryable): Promise<void> {
    await tx.query(`UPDATE product_shared_secrets SET deactivated_at = now() WHERE id = $1`, [id]);
  }

  /** The active product key with its product, and the device holding `claimed` (any product), or null. */
  async findActiveProductKey(key: string, claimed: string | null): Promise<ProductKeyRow | null> {
    const rows = await readRows<ProductKeyRow>(this.db, FIND_ACTIVE_PRODUCT_KEY, [key, claimed]);
    return rows[0] ?? null;
  }

  /** The active device key with its device, or null. */
  async findActiveDeviceKey(key: string): Promise<DeviceKeyRow | null> {
    const rows = await readRows<DeviceKeyRow>(this.db, FIND_ACTIVE_DEVICE_KEY, [key]);
    return rows[0] ?? null;
  }
}
