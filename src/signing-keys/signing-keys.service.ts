import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AuditService } from '../audit/audit.service';
import type { Actor, OrgAccess } from '../common/auth/actor';
import { DomainError } from '../common/errors/domain-error';
import { isUniqueViolation } from '../common/errors/postgres-errors';
import { Created, pathSegment } from '../common/http/created';
import { hasMoreCodePoints } from '../common/values';
import { isValidSigningKey } from '../firmware/fwup';
import { SigningKey } from '../firmware/signing-key.entity';
import { Org } from '../orgs/org.entity';
import type { SigningKeyView } from './dto/signing-key.dto';

function view(key: SigningKey): SigningKeyView {
  return { name: key.name, key: key.key, inserted_at: key.insertedAt.toISOString() };
}

@Injectable()
export class SigningKeysService {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
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
    const org = await this.db.getRepository(Org).findOneBy({ name: orgName });
    if (!org) throw DomainError.invalidField('org', 'does not exist');
    return view(await this.insert(org.id, name.trim(), key.trim(), null));
  }

  async list(access: OrgAccess): Promise<{ data: SigningKeyView[] }> {
    const keys = await this.db
      .getRepository(SigningKey)
      .find({ where: { orgId: access.orgId }, order: { name: 'ASC' } });
    return { data: keys.map(view) };
  }

  async remove(access: OrgAccess, name: string): Promise<void> {
    await this.db.transaction(async (tx) => {
      const result = await tx.getRepository(SigningKey).delete({ orgId: access.orgId, name });
      if (!result.affected) throw DomainError.notFound();
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
    return this.db.getRepository(SigningKey).find({ where: { orgId }, order: { id: 'ASC' } });
  }

  private async insert(orgId: string, name: string, key: string, actor: Actor | null): Promise<SigningKey> {
    if (name === '' || hasMoreCodePoints(name, 255)) {
      throw DomainError.invalidField(
        'name',
        name === '' ? "can't be blank" : 'should be at most 255 character(s)',
      );
    }
    if (!isValidSigningKey(key)) {
      throw DomainError.invalidField('key', 'must be a base64 ed25519 public key (32 bytes, 44 characters)');
    }
    try {
      return await this.db.transaction(async (tx) => {
        const repo = tx.getRepository(SigningKey);
        const saved = await repo.save(repo.create({ orgId, name, key }));
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
      if (isUniqueViolation(err)) throw DomainError.invalidField('name', 'has already been taken');
      throw err;
    }
  }
}
