import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { Queryable } from '../database/transactions';

export interface OrgPolicyRow {
  require_two_factor: boolean;
  max_token_lifetime_days: number | null;
  allowed_token_scopes: string[];
  updated_at: Date | null;
}

/** What an organization without a row of its own has. */
export const DEFAULT_POLICY: OrgPolicyRow = {
  require_two_factor: false,
  max_token_lifetime_days: null,
  allowed_token_scopes: ['all', 'read'],
  updated_at: null,
};

export interface OrgPolicyChange {
  requireTwoFactor?: boolean;
  maxTokenLifetimeDays?: number | null;
  allowedTokenScopes?: string[];
}

const COLUMNS = 'require_two_factor, max_token_lifetime_days, allowed_token_scopes, updated_at';

/** The `org_policies` table (read on every organization request by the guard's access query, not here). */
@Injectable()
export class OrgPoliciesRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async find(orgId: string): Promise<OrgPolicyRow> {
    const rows: OrgPolicyRow[] = await this.db.query(
      `SELECT ${COLUMNS} FROM org_policies WHERE org_id = $1`,
      [orgId],
    );
    return rows[0] ?? DEFAULT_POLICY;
  }

  /** Changes only the fields given (an absent row starts from the defaults); the row after the change. */
  async upsert(orgId: string, change: OrgPolicyChange, tx: Queryable): Promise<OrgPolicyRow> {
    const rows: OrgPolicyRow[] = await tx.query(
      `INSERT INTO org_policies AS p (org_id, require_two_factor, max_token_lifetime_days, allowed_token_scopes)
       VALUES ($1, COALESCE($2, false), CASE WHEN $3 THEN $4::integer END, COALESCE($5, '{all,read}'::text[]))
       ON CONFLICT (org_id) DO UPDATE SET
         require_two_factor = COALESCE($2, p.require_two_factor),
         max_token_lifetime_days = CASE WHEN $3 THEN $4::integer ELSE p.max_token_lifetime_days END,
         allowed_token_scopes = COALESCE($5, p.allowed_token_scopes),
         updated_at = now()
       RETURNING ${COLUMNS}`,
      [
        orgId,
        change.requireTwoFactor ?? null,
        change.maxTokenLifetimeDays !== undefined,
        change.maxTokenLifetimeDays ?? null,
        change.allowedTokenScopes ?? null,
      ],
    );
    return rows[0];
  }
}
