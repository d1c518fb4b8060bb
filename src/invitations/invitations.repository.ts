import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { Role } from '../common/auth/roles';
import type { Queryable } from '../database/transactions';

export interface PendingInvitationRow {
  email: string;
  role: Role;
  nonce: Buffer;
  invited_by_email: string | null;
  expires_at: Date;
  inserted_at: Date;
}

export interface LiveInvitationRow {
  id: string;
  org_id: string;
  org_name: string;
  email: string;
  role: Role;
}

/** The `org_invitations` table. A pending invitation: not accepted, not expired. */
@Injectable()
export class InvitationsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** A new invitation of `email`, replacing a pending (or expired, never accepted) one of the same email. */
  async replace(
    invitation: {
      orgId: string;
      email: string;
      role: Role;
      invitedById: string;
      nonce: Buffer;
      tokenHash: Buffer;
    },
    lifetimeSec: number,
    tx: Queryable,
  ): Promise<Date> {
    await tx.query(`DELETE FROM org_invitations WHERE org_id = $1 AND email = $2 AND accepted_at IS NULL`, [
      invitation.orgId,
      invitation.email,
    ]);
    const [row]: { expires_at: Date }[] = await tx.query(
      `INSERT INTO org_invitations (org_id, email, role, invited_by_id, nonce, token_hash, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, now() + make_interval(secs => $7)) RETURNING expires_at`,
      [
        invitation.orgId,
        invitation.email,
        invitation.role,
        invitation.invitedById,
        invitation.nonce,
        invitation.tokenHash,
        lifetimeSec,
      ],
    );
    return row.expires_at;
  }

  listPending(orgId: string): Promise<PendingInvitationRow[]> {
    return this.db.query(
      `SELECT i.email, i.role, i.nonce, u.email AS invited_by_email, i.expires_at, i.inserted_at
         FROM org_invitations i LEFT JOIN users u ON u.id = i.invited_by_id
        WHERE i.org_id = $1 AND i.accepted_at IS NULL AND i.expires_at > now()
        ORDER BY i.inserted_at DESC, i.id DESC`,
      [orgId],
    );
  }

  /** Deletes the pending invitation of `email`; false when there is none. */
  async deletePending(orgId: string, email: string, tx: Queryable): Promise<boolean> {
    const [, deleted] = await tx.query<[unknown, number]>(
      `DELETE FROM org_invitations WHERE org_id = $1 AND email = $2 AND accepted_at IS NULL AND expires_at > now()`,
      [orgId, email],
    );
    return deleted > 0;
  }

  async findPending(tokenHash: Buffer): Promise<LiveInvitationRow | undefined> {
    const rows: LiveInvitationRow[] = await this.db.query(
      `SELECT i.id, i.org_id, o.name AS org_name, i.email, i.role
         FROM org_invitations i JOIN orgs o ON o.id = i.org_id
        WHERE i.token_hash = $1 AND i.accepted_at IS NULL AND i.expires_at > now()`,
      [tokenHash],
    );
    return rows[0];
  }

  /** Marks a pending invitation accepted, once (concurrent acceptances: one wins); false otherwise. */
  async markAccepted(id: string, tx: Queryable): Promise<boolean> {
    const [, updated] = await tx.query<[unknown, number]>(
      `UPDATE org_invitations SET accepted_at = now()
        WHERE id = $1 AND accepted_at IS NULL AND expires_at > now()`,
      [id],
    );
    return updated === 1;
  }

  /** Drops invitations that expired without being accepted (an org's list never shows them). */
  async deleteExpired(orgId: string, tx: Queryable = this.db): Promise<void> {
    await tx.query(
      `DELETE FROM org_invitations WHERE org_id = $1 AND accepted_at IS NULL AND expires_at < now()`,
      [orgId],
    );
  }
}
