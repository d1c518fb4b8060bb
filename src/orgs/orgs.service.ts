import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AuditService } from '../audit/audit.service';
import type { Actor } from '../common/auth/actor';
import type { Role } from '../common/auth/roles';
import { DomainError } from '../common/errors/domain-error';
import { isUniqueViolation } from '../common/errors/postgres-errors';
import { ORG_NAME_PATTERN, type OrgView, type OrgWithRoleView } from './dto/org.dto';
import { Membership } from './membership.entity';
import { Org } from './org.entity';

@Injectable()
export class OrgsService {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly audit: AuditService,
  ) {}

  /** Creates an organization whose first admin is `ownerId`, in one transaction. */
  async create(ownerId: string, rawName: string, actor: Actor | null = null): Promise<{ data: OrgView }> {
    const name = rawName.trim();
    if (!ORG_NAME_PATTERN.test(name)) {
      throw DomainError.invalidField('name', 'must be 1-64 characters: letters, digits, "_" or "-"');
    }
    try {
      await this.db.transaction(async (tx) => {
        const org = await tx.getRepository(Org).save(tx.getRepository(Org).create({ name }));
        await tx.getRepository(Membership).insert({ orgId: org.id, userId: ownerId, role: 'admin' });
        await this.audit.record(tx, {
          orgId: org.id,
          actor,
          action: 'org.create',
          targetType: 'org',
          targetId: name,
          details: { owner_user_id: String(ownerId) },
        });
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw DomainError.invalidField('name', 'has already been taken');
      throw err;
    }
    return { data: { name } };
  }

  createFor(actor: Actor, name: string): Promise<{ data: OrgView }> {
    return this.create(actor.userId, name, actor);
  }

  async listFor(actor: Actor): Promise<{ data: OrgWithRoleView[] }> {
    const rows: { name: string; role: Role }[] = await this.db.query(
      `SELECT o.name, m.role FROM org_memberships m JOIN orgs o ON o.id = m.org_id
        WHERE m.user_id = $1 ORDER BY o.name`,
      [actor.userId],
    );
    return { data: rows };
  }

  findByName(name: string): Promise<Org | null> {
    return this.db.getRepository(Org).findOneBy({ name });
  }
}
