import { Injectable } from '@nestjs/common';
import { AuditService } from '../audit/audit.service';
import type { Actor, OrgAccess } from '../common/auth/actor';
import { DomainError } from '../common/errors/domain-error';
import { ALREADY_TAKEN, BLANK } from '../common/errors/messages';
import { isUniqueViolation } from '../common/errors/postgres-errors';
import { Created, pathSegment } from '../common/http/created';
import { hasMoreCodePoints } from '../common/values';
import { Transactions } from '../database/transactions';
import { isValidSigningKey } from '../firmware/fwup';
import { OrgsService } from '../orgs/orgs.service';
import type { SigningKeyView } from './dto/signing-key.dto';
import type { SigningKey } from './signing-key.entity';
import { INVALID_KEY, NAME_TOO_LONG, ORG_DOES_NOT_EXIST } from './signing-keys.errors';
import { SigningKeysRepository } from './signing-keys.repository';

function view(key: SigningKey): SigningKeyView {
  return { name: key.name, key: key.key, inserted_at: key.insertedAt.toISOString() };
}

@Injectable()
export class SigningKeysService {
  constructor(
    private readonly keys: SigningKeysRepository,
    private readonly transactions: Transactions,
    private readonly orgs: OrgsService,
    private readonly audit: AuditService,
  ) {}

  async create(access: OrgAccess, name: string, key: string): Promise<Created<{ data: SigningKeyView }>> {
    const created = await this.insert(access.orgId, name, key, access.actor);
    return new Created(`/api/orgs/${pathSegment(access.orgName)}/keys/${pathSegment(created.name)}`, {
      data: view(created),
    });
  }

  /** For the CLI: the organization by name. */
  async createByOrgName(orgName: string, name: string, key: string): Promise<SigningKeyView> {
    const org = await this.orgs.findByName(orgName);
    if (!org) throw DomainError.invalidField('org', ORG_DOES_NOT_EXIST);
    return view(await this.insert(org.id, name.trim(), key.trim(), null));
  }

  async list(access: OrgAccess): Promise<{ data: SigningKeyView[] }> {
    const keys = await this.keys.listByName(access.orgId);
    return { data: keys.map(view) };
  }

  async show(access: OrgAccess, name: string): Promise<{ data: SigningKeyView }> {
    const key = await this.keys.findByName(access.orgId, name);
    if (!key) throw DomainError.notFound();
    return { data: view(key) };
  }

  async remove(access: OrgAccess, name: string): Promise<void> {
    await this.transactions.run(async (tx) => {
      if (!(await this.keys.deleteByName(access.orgId, name, tx))) throw DomainError.notFound();
      await this.audit.record(tx, {
        orgId: access.orgId,
        actor: access.actor,
        action: 'signing_key.delete',
        targetType: 'signing_key',
        targetId: name,
      });
    });
  }

  /** The organization's keys, for signature checks. */
  forOrg(orgId: string): Promise<SigningKey[]> {
    return this.keys.listForOrg(orgId);
  }

  private async insert(orgId: string, name: string, key: string, actor: Actor | null): Promise<SigningKey> {
    if (name === '' || hasMoreCodePoints(name, 255)) {
      throw DomainError.invalidField('name', name === '' ? BLANK : NAME_TOO_LONG);
    }
    if (!isValidSigningKey(key)) {
      throw DomainError.invalidField('key', INVALID_KEY);
    }
    try {
      return await this.transactions.run(async (tx) => {
        const saved = await this.keys.insert({ orgId, name, key }, tx);
        await this.audit.record(tx, {
          orgId,
          actor,
          action: 'signing_key.create',
          targetType: 'signing_key',
          targetId: name,
          details: { key },
        });
        return saved;
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw DomainError.invalidField('name', ALREADY_TAKEN);
      throw err;
    }
  }
}
