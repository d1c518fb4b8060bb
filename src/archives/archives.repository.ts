import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type DeepPartial } from 'typeorm';
import { isForeignKeyViolation, pgError } from '../common/errors/postgres-errors';
import type { Queryable, Tx } from '../database/transactions';
import { Archive } from './archive.entity';

/** An archive as devices are sent it, with the deployment group it is attached to (ArchiveRecordsService). */
export interface AttachedArchiveRow {
  deployment_group_id: string;
  product_id: string;
  id: string;
  uuid: string;
  version: string;
  description: string | null;
  platform: string;
  architecture: string;
  size: string;
  storage_key: string;
  inserted_at: Date;
}

const ATTACHED_COLUMNS = `a.deployment_group_id, ar.product_id, ar.id, ar.uuid, ar.version, ar.description,
  ar.platform, ar.architecture, ar.size, ar.storage_key, ar.inserted_at`;

/** The `archives` and `deployment_group_archives` tables (the files themselves are in FirmwareStorage). */
@Injectable()
export class ArchivesRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** A product's archives, newest version first (SemVer precedence), ties by newest upload. */
  listForProduct(productId: string): Promise<Archive[]> {
    return this.db.getRepository(Archive).find({
      where: { productId },
      order: { versionSortKey: 'DESC', insertedAt: 'DESC' },
    });
  }

  /** A product's archive by its (lower-case) uuid. */
  findByUuid(productId: string, uuid: string, tx: Tx = this.db.manager): Promise<Archive | null> {
    return tx.getRepository(Archive).findOneBy({ productId, uuid });
  }

  existsByUuid(productId: string, uuid: string, tx: Tx = this.db.manager): Promise<boolean> {
    return tx.getRepository(Archive).existsBy({ productId, uuid });
  }

  /** Serialises uploads to one product until the transaction ends ("already taken" cannot race). */
  async lockProductUploads(productId: string, tx: Queryable): Promise<void> {
    await tx.query(`SELECT pg_advisory_xact_lock(hashtext('archive'), hashtext($1))`, [productId]);
  }

  async insert(archive: DeepPartial<Archive>, tx: Tx): Promise<Archive> {
    const repo = tx.getRepository(Archive);
    return repo.save(repo.create(archive));
  }

  /**
   * Deletes an archive; false when it was gone. An attachment holding it is pg's foreign key error
   * (`isHeldByGroup`); a trigger records its file for removal in the same transaction.
   */
  async delete(id: string, tx: Tx): Promise<boolean> {
    const result = await tx.getRepository(Archive).delete({ id });
    return Boolean(result.affected);
  }

  /** Whether `err` is an attachment's foreign key refusing the archive's deletion. */
  isHeldByGroup(err: unknown): boolean {
    return (
      isForeignKeyViolation(err) &&
      (pgError(err) as { table?: string } | undefined)?.table === 'deployment_group_archives'
    );
  }

  /** Where the file of archive `id` is stored, provided its uuid is `uuid` (a device's download link). */
  async findStorageKey(id: string, uuid: string): Promise<string | undefined> {
    const rows = await this.db.query<{ storage_key: string }[]>(
      `SELECT storage_key FROM archives WHERE id = $1 AND uuid = $2`,
      [id, uuid],
    );
    return rows[0]?.storage_key;
  }

  /** The archive attached to the group, or null. */
  async attachedTo(groupId: string): Promise<Archive | null> {
    const [attached] = await this.db.query<{ archive_id: string }[]>(
      `SELECT archive_id FROM deployment_group_archives WHERE deployment_group_id = $1`,
      [groupId],
    );
    return attached ? this.db.getRepository(Archive).findOneBy({ id: attached.archive_id }) : null;
  }

  /**
   * Attaches the archive to the group, replacing the one it had; false when the group is gone meanwhile (its
   * foreign key).
   */
  async attach(groupId: string, archiveId: string, tx: Queryable): Promise<boolean> {
    try {
      await tx.query(
        `INSERT INTO deployment_group_archives (deployment_group_id, archive_id) VALUES ($1, $2)
         ON CONFLICT (deployment_group_id) DO UPDATE SET archive_id = EXCLUDED.archive_id, attached_at = now()`,
        [groupId, archiveId],
      );
      return true;
    } catch (err) {
      if (isForeignKeyViolation(err)) return false;
      throw err;
    }
  }

  /** Detaches the group's archive; the archive's uuid, or null when it had none. */
  async detach(groupId: string, tx: Queryable): Promise<string | null> {
    const [rows] = await tx.query<[{ uuid: string }[], number]>(
      `DELETE FROM deployment_group_archives a USING archives ar
        WHERE a.deployment_group_id = $1 AND ar.id = a.archive_id RETURNING ar.uuid`,
      [groupId],
    );
    return rows[0]?.uuid ?? null;
  }

  /** Every attachment with what devices are sent (one row per group that has an archive: a small table). */
  allAttached(): Promise<AttachedArchiveRow[]> {
    return this.db.query<AttachedArchiveRow[]>(
      `SELECT ${ATTACHED_COLUMNS}
         FROM deployment_group_archives a JOIN archives ar ON ar.id = a.archive_id`,
    );
  }
}
