import { Injectable } from '@nestjs/common';
import { AuditService } from '../audit/audit.service';
import type { Actor } from '../common/auth/actor';
import { DomainError } from '../common/errors/domain-error';
import { ALREADY_TAKEN } from '../common/errors/messages';
import { isUniqueViolation } from '../common/errors/postgres-errors';
import { type Queryable, Transactions } from '../database/transactions';
import { ORG_NAME_PATTERN, type OrgView, type OrgWithRoleView } from './dto/org.dto';
import { MembershipsRepository } from './memberships.repository';
import type { Org } from './org.entity';
import { OrgsRepository } from './orgs.repository';

@Injectable()
export class OrgsService {
  constructor(
    private readonly orgs: OrgsRepository,
    private readonly memberships: MembershipsRepository,
    private readonly transactions: Transactions,
    private readonly audit: AuditService,
  ) {}

  /** Organization names by id, for those that exist (names never change). */
  async namesByIds(ids: string[]): Promise<Map<string, string>> {
    const rows = ids.length === 0 ? [] : await this.orgs.namesByIds(ids);
    return new Map(rows.map((row) => [String(row.id), row.name]));
  }

  /** Creates an organization whose first admin is `ownerId`, in one transaction. */
  async create(ownerId: string, rawName: string, actor: Actor | null = null): Promise<{ data: OrgView }> {
    const name = rawName.trim();
    if (!ORG_NAME_PATTERN.test(name)) {
      throw DomainError.invalidField('name', 'must be 1-64 characters: letters, digits, "_" or "-"');
    }
    try {
      await this.transactions.run(async (tx) => {
        const org = await this.orgs.insert(name, tx);
        await this.memberships.insertOwner(org.id, ownerId, tx);
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
      if (isUniqueViolation(err)) throw DomainError.invalidField('name', ALREADY_TAKEN);
      throw err;
    }
    return { data: { name } };
  }

  createFor(actor: Actor, name: string): Promise<{ data: OrgView }> {
    return this.create(actor.userId, name, actor);
  }

  /** The ids of the organizations a user belongs to (for an account's own audit entries). */
  idsOfMember(userId: string, tx?: Queryable): Promise<string[]> {
    return this.memberships.orgIdsOfUser(userId, tx);
  }

  async listFor(actor: Actor): Promise<{ data: OrgWithRoleView[] }> {
    return { data: await this.memberships.listOrgsOfUser(actor.userId) };
  }

  findByName(name: string): Promise<Org | null> {
    return this.orgs.findByName(name);
  }
}
