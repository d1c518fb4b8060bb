import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type DeepPartial } from 'typeorm';
import { isForeignKeyViolation, pgError } from '../common/errors/postgres-errors';
import { PreparedStatement, readRows } from '../database/read-rows';
import type { Queryable, Tx } from '../database/transactions';
import { Firmware } from './firmware.entity';

/** Read on every firmware download (prepared once per connection). */
const FIND_STORAGE_KEY = new PreparedStatement(
  `SELECT storage_key FROM firmwares WHERE id = $1 AND uuid = $2`,
);

/** The `firmwares` table: a product's uploaded firmware (the files themselves are in FirmwareStorage). */
@Injectable()
export class FirmwaresRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** A product's firmware, newest version first (SemVer precedence), ties by newest upload. */
  listForProduct(productId: string): Promise<Firmware[]> {
    return this.db.getRepository(Firmware).find({
      where: { productId },
      order: { versionSortKey: 'DESC', insertedAt: 'DESC' },
    });
  }

  /** A product's firmware by its (lower-case) uuid. */
  findByUuid(productId: string, uuid: string): Promise<Firmware | null> {
    return this.db.getRepository(Firmware).findOneBy({ productId, uuid });
  }

  /** The id of a product's firmware by its (lower-case) uuid. */
  async findIdByUuid(productId: string, uuid: string, tx: Queryable = this.db): Promise<string | undefined> {
    const rows = await tx.query<{ id: string }[]>(
      `SELECT id FROM firmwares WHERE product_id = $1 AND uuid = $2`,
      [productId, uuid],
    );
    return rows[0]?.id;
  }

  /** Where the file of firmware `id` is stored, provided its uuid is `uuid`. */
  async findStorageKey(id: string, uuid: string): Promise<string | undefined> {
    const [firmware] = await readRows<{ storage_key: string }>(this.db, FIND_STORAGE_KEY, [id, uuid]);
    return firmware?.storage_key;
  }

  /** Serialises uploads to one product until the transaction ends ("already taken" checks cannot race). */
  async lockProductUploads(productId: string, tx: Queryable): Promise<void> {
    await tx.query(`SELECT pg_advisory_xact_lock(hashtext('firmware'), hashtext($1))`, [productId]);
  }

  existsByUuid(productId: string, uuid: string, tx: Tx = this.db.manager): Promise<boolean> {
    return tx.getRepository(Firmware).existsBy({ productId, uuid });
  }

  existsByVersion(productId: string, version: string, tx: Tx = this.db.manager): Promise<boolean> {
    return tx.getRepository(Firmware).existsBy({ productId, version });
  }

  /** Inserts a firmware row; answers it as saved (id, inserted_at). */
  async insert(firmware: DeepPartial<Firmware>, tx: Tx): Promise<Firmware> {
    const repo = tx.getRepository(Firmware);
    return repo.save(repo.create(firmware));
  }

  /** Deletes a firmware by id; false when it was gone. A pending update targeting it is pg's foreign key error. */
  async delete(id: string, tx: Tx): Promise<boolean> {
    const result = await tx.getRepository(Firmware).delete({ id });
    return Boolean(result.affected);
  }

  /** Deletes every firmware row of a product; answers their storage keys (the files are the caller's). */
  async deleteAllOfProduct(productId: string, tx: Queryable): Promise<string[]> {
    // TypeORM answers a DELETE ... RETURNING with [rows, affected].
    const [firmware] = await tx.query<[{ storage_key: string }[], number]>(
      `DELETE FROM firmwares WHERE product_id = $1 RETURNING storage_key`,
      [productId],
    );
    return firmware.map((row) => row.storage_key);
  }

  /** Whether `err` is a deployment release's foreign key refusing the firmware's deletion. */
  isHeldByRelease(err: unknown): boolean {
    return (
      isForeignKeyViolation(err) &&
      (pgError(err) as { table?: string } | undefined)?.table === 'deployment_releases'
    );
  }
}
