import type { INestApplication } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { TokensService } from '../../src/auth/tokens.service';
import type { TokenScope } from '../../src/auth/token-scope';
import type { Role } from '../../src/common/auth/roles';
import { OrgsService } from '../../src/orgs/orgs.service';
import { SigningKeysService } from '../../src/signing-keys/signing-keys.service';
import { Membership } from '../../src/orgs/membership.entity';
import type { User } from '../../src/users/user.entity';
import { UsersService } from '../../src/users/users.service';
import { buildFw, type BuildFwOptions, type FwupKeyPair, generateFwupKeyPair } from './fw-builder';

export interface TestUser {
  user: User;
  token: string;
  auth: { Authorization: string };
}

let counter = 0;
export const unique = (prefix: string) => `${prefix}${++counter}${randomBytes(3).toString('hex')}`;

/** A firmware as the upload answered it. */
export interface UploadedFirmware {
  uuid: string;
  product: string;
  platform: string;
  architecture: string;
  version: string;
  author: string | null;
}

/**
 * Builders that go through the real code, so fixtures obey the same rules as the API. Users, tokens, organizations,
 * memberships and signing keys come from the services (there is no sign-up route); products, devices and firmware
 * from the public HTTP API, called by a member whose role allows it.
 */
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

  private http() {
    return request(this.app.getHttpServer());
  }

  /** A fresh fwup key pair, registered by `by` (an admin) with `POST /api/orgs/{org}/keys`. */
  async registeredKey(by: TestUser, org: string, name = unique('key-')): Promise<FwupKeyPair> {
    const key = generateFwupKeyPair();
    await this.http()
      .post(`/api/orgs/${org}/keys`)
      .set(by.auth)
      .send({ name, key: key.publicKey })
      .expect(201);
    return key;
  }

  /** A product of `org`, created by `by` (manage or admin) with `POST .../products`; returns its name. */
  async product(by: TestUser, org: string, name = unique('product'), settings: object = {}): Promise<string> {
    await this.http()
      .post(`/api/orgs/${org}/products`)
      .set(by.auth)
      .send({ ...settings, name })
      .expect(201);
    return name;
  }

  /** A device of `org`/`product`, created by `by` with `POST .../devices` (`body`: description, tags, ...). */
  async device(
    by: TestUser,
    org: string,
    product: string,
    identifier = unique('device-'),
    body: object = {},
  ): Promise<string> {
    await this.http()
      .post(`/api/orgs/${org}/products/${product}/devices`)
      .set(by.auth)
      .send({ ...body, identifier })
      .expect(201);
    return identifier;
  }

  /** Many devices at once (a few requests in flight at a time), each as `device()` makes it (with `body`). */
  async devices(
    by: TestUser,
    org: string,
    product: string,
    identifiers: readonly string[],
    body: object = {},
  ): Promise<void> {
    for (let i = 0; i < identifiers.length; i += 8) {
      await Promise.all(identifiers.slice(i, i + 8).map((id) => this.device(by, org, product, id, body)));
    }
  }

  /**
   * A firmware of `org`/`product`: a real fwup archive built by fw-builder, signed with `key` (by default a fresh
   * key that `by`, then an admin, registers with `POST .../keys`) and uploaded by `by` with `POST .../firmwares`,
   * so that the server derives everything (uuid, version sort key, ...) as for any upload.
   */
  async firmware(
    by: TestUser,
    org: string,
    product: string,
    options: BuildFwOptions & { version?: string; key?: FwupKeyPair } = {},
  ): Promise<UploadedFirmware> {
    const { version = '1.0.0', key: given, ...build } = options;
    const key = given ?? (await this.registeredKey(by, org));
    const dir = await mkdtemp(join(tmpdir(), 'fleethub-fixture-fw-'));
    try {
      const built = await buildFw(join(dir, 'firmware.fw'), {
        signWith: key.privateKey,
        ...build,
        meta: { product, version, ...build.meta },
      });
      const res = await this.http()
        .post(`/api/orgs/${org}/products/${product}/firmwares`)
        .set(by.auth)
        .attach('firmware', built.path)
        .expect(201);
      return res.body.data as UploadedFirmware;
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
}
