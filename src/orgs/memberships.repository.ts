import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { Role } from '../common/auth/roles';
import type { Queryable, Tx } from '../database/transactions';
import { Membership } from './membership.entity';

/** A member as listed: the user's email and name, and the role. */
export interface MemberRow {
  email: string;
  name: string;
  role: Role;
}

/** A member's row, locked for a change of role or a removal. */
export interface LockedMemberRow extends MemberRow {
  user_id: string;
}

/** The `org_memberships` table; reads that answer for memberships join the users and orgs they name. */
@Injectable()
export class MembershipsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** The first admin of a new organization. */
  insertOwner(orgId: string, userId: string, tx: Tx): Promise<unknown> {
    return tx.getRepository(Membership).insert({ orgId, userId, role: 'admin' });
  }

  /** A unique violation when the user is already a member. */
  async insert(orgId: string, userId: string, role: Role, tx: Queryable = this.db): Promise<void> {
    await tx.query(`INSERT INTO org_memberships (org_id, user_id, role) VALUES ($1, $2, $3)`, [
      orgId,
      userId,
      role,
    ]);
  }

  /** The user's organizations with the user's role, by name. */
  listOrgsOfUser(userId: string): Promise<{ name: string; role: Role }[]> {
    return this.db.query(
      `SELECT o.name, m.role FROM org_memberships m JOIN orgs o ON o.id = m.org_id
        WHERE m.user_id = $1 ORDER BY o.name`,
      [userId],
    );
  }

  /** The organization's members by email, with their user ids (for what other features keep per user). */
  listMembersWithIds(orgId: string): Promise<(MemberRow & { user_id: string })[]> {
    return this.db.query(
      `SELECT u.id AS user_id, u.email, u.name, m.role FROM org_memberships m JOIN users u ON u.id = m.user_id
        WHERE m.org_id = $1 ORDER BY u.email`,
      [orgId],
    );
  }

  /** The ids of the organizations the user belongs to. */
  async orgIdsOfUser(userId: string, tx: Queryable = this.db): Promise<string[]> {
    const rows: { org_id: string }[] = await tx.query(
      `SELECT org_id FROM org_memberships WHERE user_id = $1`,
      [userId],
    );
    return rows.map((r) => r.org_id);
  }

  /** The organization's members by email. */
  listMembers(orgId: string): Promise<MemberRow[]> {
    return this.db.query(
      `SELECT u.email, u.name, m.role FROM org_memberships m JOIN users u ON u.id = m.user_id
        WHERE m.org_id = $1 ORDER BY u.email`,
      [orgId],
    );
  }

  /** The user's role in the organization, or null when not a member. */
  async findRole(orgId: string, userId: string, tx: Queryable = this.db): Promise<Role | null> {
    const rows: { role: Role }[] = await tx.query(
      `SELECT role FROM org_memberships WHERE org_id = $1 AND user_id = $2`,
      [orgId, userId],
    );
    return rows[0]?.role ?? null;
  }

  /** Which of the (user, organization) pairs are memberships, as `user_id:org_id` keys. */
  async findMembershipKeys(userIds: readonly string[], orgIds: readonly string[]): Promise<string[]> {
    const rows: { key: string }[] = await this.db.query(
      `SELECT m.user_id || ':' || m.org_id AS key
         FROM unnest($1::bigint[], $2::bigint[]) AS p(user_id, org_id)
         JOIN org_memberships m ON m.user_id = p.user_id AND m.org_id = p.org_id`,
      [userIds, orgIds],
    );
    return rows.map((row) => row.key);
  }

  /** The member with this (normalised) email, or null. */
  async findMember(orgId: string, email: string): Promise<MemberRow | null> {
    const rows: MemberRow[] = await this.db.query(
      `SELECT u.email, u.name, m.role FROM org_memberships m JOIN users u ON u.id = m.user_id
        WHERE m.org_id = $1 AND u.email = $2`,
      [orgId, email],
    );
    return rows[0] ?? null;
  }

  /** The user id of the member with this (normalised) email, or null. */
  async findMemberUserId(orgId: string, email: string): Promise<string | null> {
    const rows: { user_id: string }[] = await this.db.query(
      `SELECT m.user_id FROM org_memberships m JOIN users u ON u.id = m.user_id
        WHERE m.org_id = $1 AND u.email = $2`,
      [orgId, email],
    );
    return rows[0]?.user_id ?? null;
  }

  /** Locks every admin row of the organization (in user order, so that concurrent lockers queue). */
  async lockAdmins(orgId: string, tx: Queryable): Promise<void> {
    await tx.query(
      `SELECT 1 FROM org_memberships WHERE org_id = $1 AND role = 'admin' ORDER BY user_id FOR UPDATE`,
      [orgId],
    );
  }

  /** The member with this (normalised) email, its membership row locked, or null. */
  async findMemberForUpdate(orgId: string, email: string, tx: Queryable): Promise<LockedMemberRow | null> {
    const rows: LockedMemberRow[] = await tx.query(
      `SELECT m.user_id, u.email, u.name, m.role
         FROM org_memberships m JOIN users u ON u.id = m.user_id
        WHERE m.org_id = $1 AND u.email = $2
        FOR UPDATE OF m`,
      [orgId, email],
    );
    return rows[0] ?? null;
  }

  /** How many admins the organization has besides `userId`. */
  async countOtherAdmins(orgId: string, userId: string, tx: Queryable): Promise<number> {
    const [{ count }]: { count: number }[] = await tx.query(
      `SELECT count(*)::int AS count FROM org_memberships WHERE org_id = $1 AND role = 'admin' AND user_id <> $2`,
      [orgId, userId],
    );
    return count;
  }

  async updateRole(orgId: string, userId: string, role: Role, tx: Queryable): Promise<void> {
    await tx.query(
      `UPDATE org_memberships SET role = $3, updated_at = now() WHERE org_id = $1 AND user_id = $2`,
      [orgId, userId, role],
    );
  }

  async delete(orgId: string, userId: string, tx: Queryable): Promise<void> {
    await tx.query(`DELETE FROM org_memberships WHERE org_id = $1 AND user_id = $2`, [orgId, userId]);
  }
}
