import type { IncomingHttpHeaders } from 'node:http';
import { Injectable, Logger } from '@nestjs/common';
import { AuditService } from '../audit/audit.service';
import { isForeignKeyViolation } from '../common/errors/postgres-errors';
import { LocalWindows } from '../common/http/rate-limiter';
import { DeviceRecordsService } from '../devices/device-records.service';
import { Transactions } from '../database/transactions';
import { DEVICE_IDENTIFIER_PATTERN } from '../devices/dto/device.dto';
import { type AuthenticatedDevice, DeviceAuthenticator } from './device-authenticator';
import {
  decodeNh1Payload,
  DerivedKeyCache,
  type Nh1Failure,
  nh1Salt,
  readNh1Headers,
  verifyNh1Token,
} from './nh1';
import { ServerKeyService } from './server-key.service';
import { type DeviceKeyRow, type ProductKeyRow, SharedSecretsRepository } from './shared-secrets.repository';

/** The identifier a token claims, read without checking it (only to look the device up with the key). */
function claimedIdentifier(token: string): string | null {
  const parts = token.length <= 2048 ? token.split('.') : [];
  if (parts.length !== 3 || !/^[A-Za-z0-9_-]+$/.test(parts[1])) return null;
  return decodeNh1Payload(Buffer.from(parts[1], 'base64url'))?.identifier ?? null;
}

/**
 * At most 20 failed attempts per minute per source address, counted in this process (fixed windows). Over the
 * limit, an address is refused without any work (no database lookup, no PBKDF2) until its window ends. Successes
 * are not counted and do not reset the count.
 */
export const DEVICE_AUTH_FAILURE_LIMIT = 20;
export const DEVICE_AUTH_FAILURE_WINDOW_MS = 60_000;
const MAX_COUNTED_ADDRESSES = 50_000;

type Reason =
  | Nh1Failure
  | 'rate_limited'
  | 'unknown_key'
  | 'undecryptable_secret'
  | 'bad_identifier'
  | 'identifier_in_other_product'
  | 'invalid_identifier'
  | 'product_gone'
  | 'registration_failed';

/** Thrown inside `authenticate` to stop at the first failure; never leaves it. */
class Refused extends Error {
  constructor(readonly reason: Reason) {
    super(reason);
  }
}

/**
 * NH1 shared-secret authentication of a device's websocket upgrade (device-protocol.md §2.3.5, §2.3.7):
 * the `x-nh-*` headers are checked, the active key is looked up (`nhp_` → product table, anything else →
 * device table), its secret decrypted and the signed token verified. A device key must name its own device;
 * a product key finds the device in its product or registers an unknown one there. Every failure resolves
 * to null and is logged at debug level with its reason (never a secret); only a failing database throws,
 * so that the caller can answer 503 instead of 401.
 */
@Injectable()
export class NH1DeviceAuthenticator extends DeviceAuthenticator {
  private readonly logger = new Logger('DeviceAuth');
  /** Failed attempts per source address. */
  private readonly failures = new LocalWindows(MAX_COUNTED_ADDRESSES);
  private readonly derived = new DerivedKeyCache();

  constructor(
    private readonly secrets: SharedSecretsRepository,
    private readonly devices: DeviceRecordsService,
    private readonly transactions: Transactions,
    private readonly serverKey: ServerKeyService,
    private readonly audit: AuditService,
  ) {
    super();
  }

  async authenticate(
    headers: IncomingHttpHeaders,
    sourceAddress: string,
    receivedAt?: number,
  ): Promise<AuthenticatedDevice | null> {
    const now = Date.now();
    if ((this.failures.get(sourceAddress, now)?.hits ?? 0) >= DEVICE_AUTH_FAILURE_LIMIT) {
      this.logger.debug({ address: sourceAddress, reason: 'rate_limited' }, 'device authentication refused');
      return null;
    }
    let key: string | undefined;
    let identifier: string | undefined;
    try {
      const read = readNh1Headers(headers);
      if (!read.ok) throw new Refused(read.reason);
      key = read.request.key;
      const claimed = claimedIdentifier(read.request.signature);
      const found = await this.lookup(key, claimed);
      if (!found) throw new Refused('unknown_key');
      let secret: string;
      try {
        secret = this.serverKey.decrypt(found.secret_encrypted);
      } catch {
        throw new Refused('undecryptable_secret');
      }
      const { request } = read;
      const derived = await this.derived.deriveOffThread(
        secret,
        nh1Salt(request.alg, request.key, request.timeS),
        request.params,
      );
      // The signing time is judged against the request's arrival: time spent queued behind other connections
      // is the server's, and must not turn a fresh signature into an expired one (nor count as a failure).
      const verified = verifyNh1Token(request.signature, derived, receivedAt ?? now);
      if (!verified.ok) throw new Refused(verified.reason);
      identifier = verified.payload.identifier;
      if ('device_id' in found) {
        if (found.identifier !== identifier) throw new Refused('bad_identifier');
        return {
          deviceId: found.device_id,
          identifier,
          productId: found.product_id,
          orgId: found.org_id,
          registered: false,
        };
      }
      // The device looked up with the key is the one the verified token names (same bytes), or none exists.
      const known =
        claimed === identifier
          ? found.claimed_id
            ? { id: String(found.claimed_id), product_id: String(found.claimed_product_id) }
            : null
          : undefined;
      return await this.findOrRegister(found, key, identifier, known);
    } catch (err) {
      if (!(err instanceof Refused)) throw err;
      this.failures.hit(sourceAddress, DEVICE_AUTH_FAILURE_WINDOW_MS, now);
      this.logger.debug(
        { address: sourceAddress, key, identifier, reason: err.reason },
        'device authentication refused',
      );
      return null;
    }
  }

  /**
   * The active key with its product (and device), or null. A product key comes with the device holding the
   * identifier the token claims (not yet verified: nothing is decided on it before the token is).
   */
  private async lookup(key: string, claimed: string | null): Promise<ProductKeyRow | DeviceKeyRow | null> {
    return key.startsWith('nhp_')
      ? this.secrets.findActiveProductKey(key, claimed)
      : this.secrets.findActiveDeviceKey(key);
  }

  /**
   * The device with this identifier in the key's product, registered there when no device anywhere has the
   * identifier. Identifiers are unique across the server: one held by another product or organization is
   * refused. Concurrent first connections of one identifier all resolve to the one row that was inserted.
   */
  private async findOrRegister(
    product: ProductKeyRow,
    key: string,
    identifier: string,
    known?: { id: string; product_id: string } | null,
  ): Promise<AuthenticatedDevice> {
    const existing = known === undefined ? await this.findDevice(identifier) : known;
    if (existing) return this.inProduct(existing, product, identifier, false);
    if (!DEVICE_IDENTIFIER_PATTERN.test(identifier)) throw new Refused('invalid_identifier');
    let inserted: { id: string }[];
    try {
      inserted = await this.transactions.run(async (tx) => {
        const rows = await this.devices.registerIfAbsent(product.org_id, product.product_id, identifier, tx);
        if (rows[0]) {
          await this.audit.record(tx, {
            orgId: product.org_id,
            actor: null,
            action: 'device.register',
            targetType: 'device',
            targetId: identifier,
            details: { key },
          });
        }
        return rows;
      });
    } catch (err) {
      if (isForeignKeyViolation(err)) throw new Refused('product_gone');
      throw err;
    }
    if (inserted[0]) {
      return {
        deviceId: String(inserted[0].id),
        identifier,
        productId: product.product_id,
        orgId: product.org_id,
        registered: true,
      };
    }
    // Lost the race to a concurrent registration (or the device was created meanwhile): use that row.
    const winner = await this.findDevice(identifier);
    if (!winner) throw new Refused('registration_failed');
    return this.inProduct(winner, product, identifier, false);
  }

  private findDevice(identifier: string): Promise<{ id: string; product_id: string } | null> {
    return this.devices.findProductByIdentifier(identifier);
  }

  private inProduct(
    device: { id: string; product_id: string },
    product: ProductKeyRow,
    identifier: string,
    registered: boolean,
  ): AuthenticatedDevice {
    if (String(device.product_id) !== String(product.product_id)) {
      throw new Refused('identifier_in_other_product');
    }
    return {
      deviceId: String(device.id),
      identifier,
      productId: String(product.product_id),
      orgId: String(product.org_id),
      registered,
    };
  }
}
