import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { Tx } from '../database/transactions';
import { SigningKey } from './signing-key.entity';

/** The `signing_keys` table: an organization's ed25519 public keys. */
@Injectable()
export class SigningKeysRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** The organization's keys by name. */
  listByName(orgId: string): Promise<SigningKey[]> {
    return this.db.getRepository(SigningKey).find({ where: { orgId }, order: { name: 'ASC' } });
  }

  /** The organization's key with this name, or null. */
  findByName(orgId: string, name: string): Promise<SigningKey | null> {
    return this.db.getRepository(SigningKey).findOneBy({ orgId, name });
  }

  /** The organization's keys in the order they were added (signature checks). */
  listForOrg(orgId: string): Promise<SigningKey[]> {
    return this.db.getRepository(SigningKey).find({ where: { orgId }, order: { id: 'ASC' } });
  }

  /** Inserts a key; a name the organization holds already is pg's unique violation. */
  async insert(key: { orgId: string; name: string; key: string }, tx: Tx): Promise<SigningKey> {
    const repo = tx.getRepository(SigningKey);
    return repo.save(repo.create(key));
  }

  /** Deletes the organization's key by name; false when there was none. */
  async deleteByName(orgId: string, name: string, tx: Tx): Promise<boolean> {
    const result = await tx.getRepository(SigningKey).delete({ orgId, name });
    return Boolean(result.affected);
  }
}
