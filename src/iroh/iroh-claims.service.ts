import { Injectable, Logger } from '@nestjs/common';
import {
  isForeignKeyViolation,
  isRetryableConflict,
  isUniqueViolation,
} from '../common/errors/postgres-errors';
import { isPlainObject } from '../common/validation/validation.pipe';
import { type Tx, Transactions } from '../database/transactions';
import type {
  IdentityReason,
  IdentityReportResult,
  ReportedIdentity,
  ReportingDevice,
} from './dto/device-identity';
import {
  checkDetails,
  checkInstance,
  DEFAULT_INSTANCE,
  IROH_SERVICE,
  normaliseEndpointId,
} from './dto/iroh-fields';
import { type HolderRow, IrohEndpointsRepository } from './iroh-endpoints.repository';

/** NervesHub processes at most this many entries of one report; the rest are skipped. */
export const MAX_REPORTED_IDENTITIES = 10;
/** A report that loses a race (unique violation, deadlock) is re-read and decided again, at most this often. */
const REPORT_ATTEMPTS = 3;

/** A report entry that passed the checks. */
interface CheckedIdentity {
  identifier: string;
  instance: string;
  details: Record<string, unknown>;
}

/** A transaction that lost a race and may be decided again: unique violation, deadlock, serialization failure. */
function isRetryable(err: unknown): boolean {
  return isUniqueViolation(err) || isRetryableConflict(err);
}

/**
 * The claim rules (contract §7): what a device's report of the iroh endpoints it holds does to them. Called by
 * the device gateway; operators manage endpoints through IrohService.
 */
@Injectable()
export class IrohClaimsService {
  /** The log context the refusals always had (log queries and alerts select on it). */
  private readonly logger = new Logger('IrohService');

  constructor(
    private readonly endpoints: IrohEndpointsRepository,
    private readonly transactions: Transactions,
  ) {}

  /**
   * Applies a device's report of the iroh endpoints it holds (contract §7, the claim rules): the device
   * proved these keys by reporting them over its own authenticated connection. Each entry is decided in its
   * own transaction, on the locked row holding the key; the unique constraints settle races, after which the
   * entry is decided again on what won.
   * - nobody holds the key: a row for the device (replacing its previous key for that instance) → `created`;
   * - the device already holds it under that instance: details and last_reported_at refreshed → `updated`;
   * - an unowned operator row of the device's own organization: the device takes it over, and any other key
   *   it held for that instance is removed → `claimed`;
   * - held by a member, another device, another organization, or this device under another instance:
   *   nothing changes and a warning is logged → `refused`.
   * Entries that are not valid (endpoint id, instance, details) are `skipped`.
   */
  async reportDeviceIdentities(
    device: ReportingDevice,
    identities: readonly ReportedIdentity[],
  ): Promise<IdentityReportResult[]> {
    const results: IdentityReportResult[] = [];
    const entries: unknown[] = Array.isArray(identities) ? identities : [];
    for (const [index, entry] of entries.entries()) {
      const checked = this.checkReported(entry);
      if ('outcome' in checked) {
        results.push(checked);
      } else if (index >= MAX_REPORTED_IDENTITIES) {
        results.push({ ...this.described(checked), outcome: 'skipped', reason: 'too_many_identities' });
      } else {
        results.push(await this.decideReport(device, checked));
      }
    }
    return results;
  }

  /** A report entry with a valid endpoint id, instance and details, or the reason it is skipped. */
  private checkReported(entry: unknown): CheckedIdentity | IdentityReportResult {
    const raw = isPlainObject(entry) ? entry : {};
    const identifier = normaliseEndpointId(raw.identifier);
    const skipped = (reason: IdentityReason): IdentityReportResult => ({
      identifier: identifier ?? (typeof raw.identifier === 'string' ? raw.identifier : null),
      instance: typeof raw.instance === 'string' ? raw.instance : null,
      outcome: 'skipped',
      reason,
    });
    if (identifier === null) return skipped('invalid_identifier');
    // Devices are held to the API's rules, except that a blank instance means the default one.
    let instance = DEFAULT_INSTANCE;
    if (raw.instance !== undefined && raw.instance !== null) {
      if (typeof raw.instance !== 'string') return skipped('invalid_instance');
      const trimmed = raw.instance.trim();
      if (trimmed !== '') {
        if (checkInstance(trimmed) !== null) return skipped('invalid_instance');
        instance = trimmed;
      }
    }
    if (checkDetails(raw.details) !== null) return skipped('invalid_details');
    const details = isPlainObject(raw.details) ? raw.details : {};
    return { identifier, instance, details };
  }

  private described(identity: CheckedIdentity): Pick<IdentityReportResult, 'identifier' | 'instance'> {
    return { identifier: identity.identifier, instance: identity.instance };
  }

  private async decideReport(
    device: ReportingDevice,
    identity: CheckedIdentity,
  ): Promise<IdentityReportResult> {
    for (let attempt = 1; ; attempt++) {
      try {
        const result = await this.transactions.run((tx) => this.applyReport(tx, device, identity));
        if (result.outcome === 'refused') {
          this.logger.warn(
            {
              device: device.identifier,
              orgId: device.orgId,
              endpointId: identity.identifier,
              instance: identity.instance,
              reason: result.reason,
            },
            'iroh endpoint report refused',
          );
        }
        return result;
      } catch (err) {
        if (isRetryable(err) && attempt < REPORT_ATTEMPTS) continue;
        if (isForeignKeyViolation(err)) {
          return { ...this.described(identity), outcome: 'refused', reason: 'device_not_found' };
        }
        throw err;
      }
    }
  }

  private async applyReport(
    tx: Tx,
    device: ReportingDevice,
    identity: CheckedIdentity,
  ): Promise<IdentityReportResult> {
    const described = this.described(identity);
    const holder = await this.endpoints.lockHolder(identity.identifier, tx);

    if (!holder) {
      await this.dropDeviceInstance(tx, device, identity.instance, identity.identifier);
      await this.endpoints.insertDeviceReported(
        {
          orgId: device.orgId,
          identifier: identity.identifier,
          service: IROH_SERVICE,
          instance: identity.instance,
          details: identity.details,
          deviceId: device.id,
        },
        tx,
      );
      return { ...described, outcome: 'created' };
    }

    const refusal = this.refusal(holder, device, identity);
    if (refusal) return { ...described, outcome: 'refused', reason: refusal };

    if (holder.device_id === device.id) {
      await this.endpoints.refreshReported(holder.id, identity.details, tx);
      return { ...described, outcome: 'updated' };
    }

    // An unowned operator row of the device's organization: the device proves the key and takes it over.
    await this.dropDeviceInstance(tx, device, identity.instance, identity.identifier);
    await this.endpoints.claimForDevice(holder.id, device.id, identity.instance, identity.details, tx);
    return { ...described, outcome: 'claimed' };
  }

  /** Why the device may not have the key `holder` holds, or null when it may (its own row, or a claim). */
  private refusal(
    holder: HolderRow,
    device: ReportingDevice,
    identity: CheckedIdentity,
  ): IdentityReason | null {
    if (holder.org_id !== device.orgId) return 'held_by_another_organization';
    if (holder.service !== IROH_SERVICE) return 'held_by_another_service';
    if (holder.device_id === device.id) {
      return holder.instance === identity.instance ? null : 'held_under_another_instance';
    }
    if (holder.device_id !== null) return 'held_by_another_device';
    if (holder.user_id !== null) return 'held_by_member';
    return null;
  }

  /**
   * Removes the key the device held for `instance`, other than `identifier` (a device has one key per
   * instance). Sparing `identifier` matters: a concurrent report of the same key that committed first is then
   * found by the unique constraint and decided again, rather than deleted and re-created.
   */
  private async dropDeviceInstance(
    tx: Tx,
    device: ReportingDevice,
    instance: string,
    identifier: string,
  ): Promise<void> {
    await this.endpoints.deleteDeviceInstanceExcept(device.id, IROH_SERVICE, instance, identifier, tx);
  }
}
