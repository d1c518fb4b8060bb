import type { INestApplication } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { TokensService } from '../../src/auth/tokens.service';
import type { TokenScope } from '../../src/auth/access-token.entity';
import type { Role } from '../../src/common/auth/roles';
import { OrgsService } from '../../src/orgs/orgs.service';
import { SigningKeysService } from '../../src/signing-keys/signing-keys.service';
import { Membership } from '../../src/orgs/membership.entity';
import type { User } from '../../src/users/user.entity';
import { UsersService } from '../../src/users/users.service';
import { type FwupKeyPair, generateFwupKeyPair } from './fw-builder';

export interface TestUser {
  user: User;
  token: string;
  auth: { Authorization: string };
}

let counter = 0;
export const unique = (prefix: string) => `${prefix}${++counter}${randomBytes(3).toString('hex')}`;

/** Builders that go through the real services, so fixtures obey the same rules as the API. */
export class Fixtures {
  constructor(private readonly app: INestApplication) {}

  get db(): DataSource {
    return this.app.get(DataSource);
  }

  async user(
    options: { name?: string; email?: string; password?: string; scope?: TokenScope; expiresAt?: Date } = {},
  ): Promise<TestUser> {
    const username = unique('user');
    const user = await this.app.get(UsersService).create({
      email: options.email ?? `${username}@example.com`,
      username,
      name: options.name ?? `Name ${username}`,
      password: options.password,
    });
    const token = await this.app
      .get(TokensService)
      .create(user.id, { scope: options.scope ?? 'all', expiresAt: options.expiresAt ?? null });
    return { user, token, auth: { Authorization: `Bearer ${token}` } };
  }

  async token(user: User, options: { scope?: TokenScope; expiresAt?: Date } = {}): Promise<string> {
    return this.app.get(TokensService).create(user.id, options);
  }

  /** An organization owned (admin) by `owner`. */
  async org(owner: TestUser, name = unique('org')): Promise<string> {
    await this.app.get(OrgsService).create(owner.user.id, name);
    return name;
  }

  /** A fresh fwup key pair, its public key registered as the organization's signing key `name`. */
  async signingKey(orgName: string, name = 'release'): Promise<FwupKeyPair> {
    const key = generateFwupKeyPair();
    await this.app.get(SigningKeysService).createByOrgName(orgName, name, key.publicKey);
    return key;
  }

  async addMember(orgName: string, member: TestUser, role: Role): Promise<void> {
    const org = await this.app.get(OrgsService).findByName(orgName);
    await this.db.getRepository(Membership).insert({ orgId: org!.id, userId: member.user.id, role });
  }
}
