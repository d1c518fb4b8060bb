import { randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { AuditService } from '../audit/audit.service';
import type { OrgAccess } from '../common/auth/actor';
import { DomainError } from '../common/errors/domain-error';
import { isUniqueViolation } from '../common/errors/postgres-errors';
import { Created, pathSegment } from '../common/http/created';
import { isoOrNull } from '../common/values';
import { DeviceRecordsService } from '../devices/device-records.service';
import { Transactions } from '../database/transactions';
import { ProductsService } from '../products/products.service';
import type { SharedSecretCreatedView, SharedSecretView } from './dto/shared-secret.dto';
import { ServerKeyService } from './server-key.service';
import { DeviceSharedSecret, ProductSharedSecret } from './shared-secret.entity';
import { type SecretRow, SharedSecretsRepository } from './shared-secrets.repository';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** 43 Base62 characters carry 256 bits, and fit NervesHub's own format check (`[a-zA-Z0-9\-\/\+]{43}`). */
const RANDOM_LENGTH = 43;
const PRODUCT_PREFIX = 'nhp_';
const DEVICE_PREFIX = 'nhd_';
const PRODUCT_KEY_PATTERN = /^nhp_[0-9A-Za-z]{43}$/;

/** Uniformly random Base62 text (rejection sampling: bytes 248–255 are dropped). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += BASE62[byte % 62];
    }
  }
  return out;
}

function listView(row: SecretRow): SharedSecretView {
  return {
    key: row.key,
    inserted_at: row.insertedAt.toISOString(),
    deactivated_at: isoOrNull(row.deactivatedAt),
  };
}

/**
 * Product- and device-level shared secrets for NH1 device authentication. The secret is stored encrypted
 * with the server key (HMAC verification needs the plain value, so it cannot be hashed) and returned only
 * by the call that creates it.
 */
@Injectable()
export class SharedSecretsService {
  constructor(
    private readonly secrets: SharedSecretsRepository,
    private readonly devices: DeviceRecordsService,
    private readonly transactions: Transactions,
    private readonly products: ProductsService,
    private readonly serverKey: ServerKeyService,
    private readonly audit: AuditService,
  ) {}

  async createForProduct(
    access: OrgAccess,
    productName: string,
  ): Promise<Created<{ data: SharedSecretCreatedView }>> {
    const product = await this.products.findInOrg(access, productName);
    const { row, secret } = await this.insert(
      access,
      ProductSharedSecret,
      PRODUCT_PREFIX,
      { productId: product.id },
      {
        action: 'shared_secret.create',
        targetType: 'product',
        targetId: product.name,
      },
    );
    return new Created(
      `/api/orgs/${pathSegment(access.orgName)}/products/${pathSegment(product.name)}/shared_secrets/${row.key}`,
      { data: { key: row.key, secret, inserted_at: row.insertedAt.toISOString() } },
    );
  }

  /** Every key of the product, deactivated ones included, oldest first. */
  async listForProduct(access: OrgAccess, productName: string): Promise<{ data: SharedSecretView[] }> {
    const product = await this.products.findInOrg(access, productName);
    const rows = await this.secrets.listForProduct(product.id);
    return { data: rows.map(listView) };
  }

  /**
   * Deactivates a key of this product: devices can no longer authenticate with it. Idempotent: a key that
   * is already deactivated answers 204 again and keeps its first deactivation time. Unknown → 404.
   */
  async deactivateForProduct(access: OrgAccess, productName: string, key: string): Promise<void> {
    const product = await this.products.findInOrg(access, productName);
    if (!PRODUCT_KEY_PATTERN.test(key)) throw DomainError.notFound();
    await this.transactions.run(async (tx) => {
      const row = await this.secrets.lockProductKey(product.id, key, tx);
      if (!row) throw DomainError.notFound();
      if (row.deactivated_at) return;
      await this.secrets.deactivateProductKey(row.id, tx);
      await this.audit.record(tx, {
        orgId: access.orgId,
        actor: access.actor,
        action: 'shared_secret.deactivate',
        targetType: 'product',
        targetId: product.name,
        details: { key },
      });
    });
  }

  /** A device-level key (`nhd_`) for one device of the product. */
  async createForDevice(
    access: OrgAccess,
    productName: string,
    identifier: string,
  ): Promise<Created<{ data: SharedSecretCreatedView }>> {
    const product = await this.products.findInOrg(access, productName);
    const device = await this.devices.findInProduct(product.id, identifier);
    if (!device) throw DomainError.notFound();
    const { row, secret } = await this.insert(
      access,
      DeviceSharedSecret,
      DEVICE_PREFIX,
      { deviceId: device.id },
      {
        action: 'device_shared_secret.create',
        targetType: 'device',
        targetId: device.identifier,
      },
    );
    return new Created(
      `/api/orgs/${pathSegment(access.orgName)}/products/${pathSegment(product.name)}/devices/${pathSegment(
        identifier,
      )}/shared_secrets/${row.key}`,
      { data: { key: row.key, secret, inserted_at: row.insertedAt.toISOString() } },
    );
  }

  /** Inserts a new key and secret, with its audit entry (the key, never the secret) in the same transaction. */
  private async insert<T extends SecretRow>(
    access: OrgAccess,
    entity: new () => T,
    prefix: string,
    owner: Partial<T>,
    audit: { action: string; targetType: string; targetId: string },
  ): Promise<{ row: T; secret: string }> {
    const secret = randomBase62(RANDOM_LENGTH);
    for (let attempt = 1; ; attempt++) {
      try {
        const row = await this.transactions.run(async (tx) => {
          const saved = await this.secrets.insert(
            entity,
            {
              ...owner,
              key: prefix + randomBase62(RANDOM_LENGTH),
              secretEncrypted: this.serverKey.encrypt(secret),
              deactivatedAt: null,
            },
            tx,
          );
          await this.audit.record(tx, {
            orgId: access.orgId,
            actor: access.actor,
            ...audit,
            details: { key: saved.key },
          });
          return saved;
        });
        return { row, secret };
      } catch (err) {
        // 256 random bits do not collide; the retry only keeps a freak collision from becoming a 500.
        if (!isUniqueViolation(err) || attempt >= 3) throw err;
      }
    }
  }
}
