import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager } from 'typeorm';
import { AuditService } from '../audit/audit.service';
import type { Actor, OrgAccess } from '../common/auth/actor';
import type { Role } from '../common/auth/roles';
import { DomainError } from '../common/errors/domain-error';
import { isUniqueViolation } from '../common/errors/postgres-errors';
import { Org } from '../orgs/org.entity';
import { normaliseEmail } from '../users/users.errors';
import type { MemberView } from './dto/member.dto';

const LAST_ADMIN = 'an organization needs at least one admin: add another admin first';

@Injectable()
export class MembersService {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly audit: AuditService,
  ) {}

  async list(access: OrgAccess): Promise<{ data: MemberView[] }> {
    const rows: MemberView[] = await this.db.query(
      `SELECT u.email, u.name, m.role FROM org_memberships m JOIN users u ON u.id = m.user_id
        WHERE m.org_id = $1 ORDER BY u.email`,
      [access.orgId],
    );
    return { data: rows };
  }

  async add(access: OrgAccess, email: string, role: Role): Promise<{ data: MemberView }> {
    return { data: await this.insert(access.orgId, email, role, access.actor) };
  }

  /** For the CLI: the organization by name. */
  async addByOrgName(orgName: string, email: string, role: Role): Promise<MemberView> {
    const org = await this.db.getRepository(Org).findOneBy({ name: orgName });
    if (!org) throw DomainError.invalidField('org', 'does not exist');
    return this.insert(org.id, email, role, null);
  }

  async updateRole(access: OrgAccess, email: string, role: Role): Promise<{ data: MemberView }> {
    return this.db.transaction(async (tx) => {
      const member = await this.lockedMember(tx, access.orgId, email);
      if (member.role === 'admin' && role !== 'admin')
        await this.assertAnotherAdmin(tx, access.orgId, member.user_id);
      await tx.query(
        `UPDATE org_memberships SET role = $3, updated_at = now() WHERE org_id = $1 AND user_id = $2`,
        [access.orgId, member.user_id, role],
      );
      await this.audit.record(tx, {
        orgId: access.orgId,
        actor: access.actor,
        action: 'member.update',
        targetType: 'member',
        targetId: member.email,
        details: { role, previous_role: member.role },
      });
      return { data: { email: member.email, name: member.name, role } };
    });
  }

  async remove(access: OrgAccess, email: string): Promise<void> {
    await this.db.transaction(async (tx) => {
      const member = await this.lockedMember(tx, access.orgId, email);
      if (member.role === 'admin') await this.assertAnotherAdmin(tx, access.orgId, member.user_id);
      await tx.query(`DELETE FROM org_memberships WHERE org_id = $1 AND user_id = $2`, [
        access.orgId,
        member.user_id,
      ]);
      await this.audit.record(tx, {
        orgId: access.orgId,
        actor: access.actor,
        action: 'member.remove',
        targetType: 'member',
        targetId: member.email,
        details: { role: member.role },
      });
    });
  }

  private async insert(
    orgId: string,
    rawEmail: string,
    role: Role,
    actor: Actor | null,
  ): Promise<MemberView> {
    const email = normaliseEmail(rawEmail);
    const users: { id: string; email: string; name: string }[] = await this.db.query(
      `SELECT id, email, name FROM users WHERE email = $1`,
      [email],
    );
    const user = users[0];
    if (!user) throw DomainError.invalidField('email', 'does not belong to a registered user');
    try {
      await this.db.transaction(async (tx) => {
        await tx.query(`INSERT INTO org_memberships (org_id, user_id, role) VALUES ($1, $2, $3)`, [
          orgId,
          user.id,
          role,
        ]);
        await this.audit.record(tx, {
          orgId,
          actor,
          action: 'member.add',
          targetType: 'member',
          targetId: user.email,
          details: { role },
        });
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw DomainError.invalidField('email', 'is already a member');
      throw err;
    }
    return { email: user.email, name: user.name, role };
  }

  /**
   * Locks every admin row of the organization, then the member's row, so that two concurrent demotions
   * or removals cannot both pass the "another admin remains" check.
   */
  private async lockedMember(tx: EntityManager, orgId: string, rawEmail: string) {
    await tx.query(
      `SELECT 1 FROM org_memberships WHERE org_id = $1 AND role = 'admin' ORDER BY user_id FOR UPDATE`,
      [orgId],
    );
    const rows: { user_id: string; email: string; name: string; role: Role }[] = await tx.query(
      `SELECT m.user_id, u.email, u.name, m.role
         FROM org_memberships m JOIN users u ON u.id = m.user_id
        WHERE m.org_id = $1 AND u.email = $2
        FOR UPDATE OF m`,
      [orgId, normaliseEmail(rawEmail)],
    );
    if (!rows[0]) throw DomainError.notFound();
    return rows[0];
  }

  private async assertAnotherAdmin(tx: EntityManager, orgId: string, userId: string): Promise<void> {
    const [{ count }]: { count: number }[] = await tx.query(
      `SELECT count(*)::int AS count FROM org_memberships WHERE org_id = $1 AND role = 'admin' AND user_id <> $2`,
      [orgId, userId],
    );
    if (count === 0) throw DomainError.conflict(LAST_ADMIN);
  }
}
