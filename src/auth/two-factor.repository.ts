import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { Queryable } from '../database/transactions';

export interface TwoFactorRow {
  user_id: string;
  secret: string;
  confirmed_at: Date | null;
  last_used_step: string | null;
  backup_codes_left: number;
}

const COLUMNS = `user_id, secret, confirmed_at, last_used_step, cardinality(backup_code_hashes) AS backup_codes_left`;

/**
 * The `user_two_factor` table. Every change that a code allows is one conditional statement (no race). TypeORM
 * answers an UPDATE with `[rows, count]`, an INSERT with the rows.
 */
@Injectable()
export class TwoFactorRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async find(userId: string, tx: Queryable = this.db): Promise<TwoFactorRow | undefined> {
    const rows: TwoFactorRow[] = await tx.query(`SELECT ${COLUMNS} FROM user_two_factor WHERE user_id = $1`, [
      userId,
    ]);
    return rows[0];
  }

  /** Which of these users have two-factor sign-in on. */
  async enabledAmong(userIds: string[]): Promise<Set<string>> {
    const rows: { user_id: string }[] = await this.db.query(
      `SELECT user_id FROM user_two_factor WHERE user_id = ANY($1::bigint[]) AND confirmed_at IS NOT NULL`,
      [userIds],
    );
    return new Set(rows.map((r) => r.user_id));
  }

  /** A new pending enrolment, replacing a pending one; nothing when two-factor sign-in is already on. */
  async startEnrolment(userId: string, secret: string): Promise<boolean> {
    const rows: unknown[] = await this.db.query(
      `INSERT INTO user_two_factor (user_id, secret) VALUES ($1, $2)
       ON CONFLICT (user_id) DO UPDATE SET secret = EXCLUDED.secret, last_used_step = NULL,
         backup_code_hashes = '{}', updated_at = now()
         WHERE user_two_factor.confirmed_at IS NULL
       RETURNING user_id`,
      [userId, secret],
    );
    return rows.length === 1;
  }

  /**
   * Records `step` as used when it is later than the last code accepted, and (`confirm`) turns a pending
   * enrolment on with its backup codes. False when another request used this step or a later one first.
   */
  async useStep(
    userId: string,
    step: number,
    confirm?: { backupCodeHashes: string[] },
    tx: Queryable = this.db,
  ): Promise<boolean> {
    const [, updated]: [unknown[], number] = await tx.query(
      `UPDATE user_two_factor
          SET last_used_step = $2, updated_at = now()
              ${confirm ? ', confirmed_at = now(), backup_code_hashes = $3' : ''}
        WHERE user_id = $1 AND (last_used_step IS NULL OR last_used_step < $2)
          AND confirmed_at IS ${confirm ? '' : 'NOT'} NULL
       RETURNING user_id`,
      confirm ? [userId, step, confirm.backupCodeHashes] : [userId, step],
    );
    return updated === 1;
  }

  /** Removes one unused backup code; false when it was not (or no longer) among them. */
  async useBackupCode(userId: string, hash: string, tx: Queryable = this.db): Promise<boolean> {
    const [, updated]: [unknown[], number] = await tx.query(
      `UPDATE user_two_factor
          SET backup_code_hashes = array_remove(backup_code_hashes, $2), updated_at = now()
        WHERE user_id = $1 AND confirmed_at IS NOT NULL AND $2 = ANY(backup_code_hashes)
       RETURNING user_id`,
      [userId, hash],
    );
    return updated === 1;
  }

  async replaceBackupCodes(userId: string, hashes: string[], tx: Queryable): Promise<void> {
    await tx.query(
      `UPDATE user_two_factor SET backup_code_hashes = $2, updated_at = now() WHERE user_id = $1`,
      [userId, hashes],
    );
  }

  async delete(userId: string, tx: Queryable): Promise<void> {
    await tx.query(`DELETE FROM user_two_factor WHERE user_id = $1`, [userId]);
  }
}
