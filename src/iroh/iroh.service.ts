import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager } from 'typeorm';
import { AuditService } from '../audit/audit.service';
import type { OrgAccess } from '../common/auth/actor';
import { DomainError } from '../common/errors/domain-error';
import {
  isForeignKeyViolation,
  isRetryableConflict,
  isUniqueViolation,
} from '../common/errors/postgres-errors';
import { Created, pathSegment } from '../common/http/created';
import { readRows } from '../database/read-rows';
import { type PaginationView, paginationView } from '../common/http/pagination';
import { isPlainObject } from '../common/validation/validation.pipe';
import { normaliseEmail } from '../users/user-fields';
import type { CreateIrohEndpointDto } from './dto/create-iroh-endpoint.dto';
import type {
  IdentityReason,
  IdentityReportResult,
  ReportedIdentity,
  ReportingDevice,
} from './dto/device-identity';
import type { IrohEndpointView } from './dto/iroh-endpoint.view';
import {
  checkDetails,
  checkInstance,
  DEFAULT_INSTANCE,
  IROH_SERVICE,
  normaliseEndpointId,
} from './dto/iroh-fields';
import { type EndpointRow, endpointView, OWNER_JOINS, RECORD_COLUMNS } from './endpoint-view';
import { type IrohListQuery, irohListStatements } from './iroh-list.query';

export const ALREADY_REGISTERED = 'That endpoint id is already registered.';
export const NOT_A_MEMBER = 'does not belong to a member of this organization';

/** NervesHub processes at most this many entries of one report; the rest are skipped. */
export const MAX_REPORTED_IDENTITIES = 10;
/** A report that loses a race (unique violation, deadlock) is re-read and decided again, at most this often. */
const REPORT_ATTEMPTS = 3;

/** The row currently holding a key, locked while a report is decided. */
interface HolderRow {
  id: string;
  org_id: string;
  service: string;
  instance: string;
  device_id: string | null;
  user_id: string | null;
}

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

@Injectable()
export class IrohService {
  private readonly logger = new Logger(IrohService.name);

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly audit: AuditService,
  ) {}

  /**
   * Registers an endpoint by hand (source `operator`), held by the organization or by one of its members.
   * The unique constraint on `identifier` decides a key registered anywhere (409), so concurrent creates of
   * one key give exactly one success.
   */
  async create(access: OrgAccess, dto: CreateIrohEndpointDto): Promise<Created<{ data: IrohEndpointView }>> {
    const identifier = normaliseEndpointId(dto.identifier)!;
    const userId = dto.user_email ? await this.memberId(access.orgId, dto.user_email) : null;
    let rows: EndpointRow[];
    try {
      rows = await this.db.transaction(async (tx) => {
        const inserted: EndpointRow[] = await tx.query(
          `WITH e AS (
             INSERT INTO iroh_endpoints (org_id, identifier, service, instance, details, source, user_id)
             VALUES ($1, $2, $3, $4, $5, 'operator', $6)
             RETURNING *
           )
           SELECT ${RECORD_COLUMNS} FROM e ${OWNER_JOINS}`,
          [
            access.orgId,
            identifier,
            IROH_SERVICE,
            dto.instance ?? DEFAULT_INSTANCE,
            dto.details ?? {},
            userId,
          ],
        );
        await this.audit.record(tx, {
          orgId: access.orgId,
          actor: access.actor,
          action: 'iroh_endpoint.create',
          targetType: 'iroh_endpoint',
          targetId: identifier,
          details: { instance: dto.instance ?? DEFAULT_INSTANCE, user_email: dto.user_email ?? null },
        });
        return inserted;
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw DomainError.conflict(ALREADY_REGISTERED);
      // The member's account was deleted between the lookup and the insert.
      if (isForeignKeyViolation(err) && userId !== null)
        throw DomainError.invalidField('user_email', NOT_A_MEMBER);
      throw err;
    }
    return new Created(`/api/orgs/${pathSegment(access.orgName)}/iroh_endpoints/${identifier}`, {
      data: endpointView(rows[0]),
    });
  }

  /** The org's iroh endpoints, newest first, narrowed by `owner` and `search`; paginated when asked. */
  async list(
    access: OrgAccess,
    query: IrohListQuery,
  ): Promise<{ data: IrohEndpointView[]; pagination?: PaginationView }> {
    const statements = irohListStatements(access.orgId, query);
    switch (statements.kind) {
      case 'all': {
        const rows = await readRows<EndpointRow>(this.db, statements.all.sql, statements.all.params);
        return { data: rows.map(endpointView) };
      }
      case 'searchPage': {
        const { sql, params } = statements.searchPage;
        const rows = await readRows<EndpointRow & { total: number }>(this.db, sql, params);
        const hits = rows.filter((row) => row.identifier !== null);
        return { data: hits.map(endpointView), pagination: paginationView(statements.page, rows[0].total) };
      }
      case 'page': {
        const [rows, [{ total }]] = await Promise.all([
          readRows<EndpointRow>(this.db, statements.rows.sql, statements.rows.params),
          readRows<{ total: number }>(this.db, statements.count.sql, statements.count.params),
        ]);
        return { data: rows.map(endpointView), pagination: paginationView(statements.page, total) };
      }
    }
  }

  async show(access: OrgAccess, rawIdentifier: string): Promise<{ data: IrohEndpointView }> {
    const identifier = normaliseEndpointId(rawIdentifier);
    if (identifier === null) throw DomainError.notFound();
    const rows: EndpointRow[] = await this.db.query(
      `SELECT ${RECORD_COLUMNS} FROM iroh_endpoints e ${OWNER_JOINS}
        WHERE e.org_id = $1 AND e.service = $2 AND e.identifier = $3`,
      [access.orgId, IROH_SERVICE, identifier],
    );
    if (!rows[0]) throw DomainError.notFound();
    return { data: endpointView(rows[0]) };
  }

  /** Removes the endpoint. A device-reported one comes back the next time the device reports it. */
  async remove(access: OrgAccess, rawIdentifier: string): Promise<void> {
    const identifier = normaliseEndpointId(rawIdentifier);
    if (identifier === null) throw DomainError.notFound();
    await this.db.transaction(async (tx) => {
      const [, deleted]: [unknown, number] = await tx.query(
        `DELETE FROM iroh_endpoints WHERE org_id = $1 AND service = $2 AND identifier = $3`,
        [access.orgId, IROH_SERVICE, identifier],
      );
      if (deleted === 0) throw DomainError.notFound();
      await this.audit.record(tx, {
        orgId: access.orgId,
        actor: access.actor,
        action: 'iroh_endpoint.delete',
        targetType: 'iroh_endpoint',
        targetId: identifier,
      });
    });
  }

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

  private async memberId(orgId: string, email: string): Promise<string> {
    const rows: { user_id: string }[] = await this.db.query(
      `SELECT m.user_id FROM org_memberships m JOIN users u ON u.id = m.user_id
        WHERE m.org_id = $1 AND u.email = $2`,
      [orgId, normaliseEmail(email)],
    );
    if (!rows[0]) throw DomainError.invalidField('user_email', NOT_A_MEMBER);
    return rows[0].user_id;
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
        const result = await this.db.transaction((tx) => this.applyReport(tx, device, identity));
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
    tx: EntityManager,
    device: ReportingDevice,
    identity: CheckedIdentity,
  ): Promise<IdentityReportResult> {
    const described = this.described(identity);
    const [holder]: HolderRow[] = await tx.query(
      `SELECT id, org_id, service, instance, device_id, user_id FROM iroh_endpoints
        WHERE identifier = $1 FOR UPDATE`,
      [identity.identifier],
    );

    if (!holder) {
      await this.dropDeviceInstance(tx, device, identity.instance, identity.identifier);
      await tx.query(
        `INSERT INTO iroh_endpoints
           (org_id, identifier, service, instance, details, source, device_id, last_reported_at)
         VALUES ($1, $2, $3, $4, $5, 'device_reported', $6, now())`,
        [device.orgId, identity.identifier, IROH_SERVICE, identity.instance, identity.details, device.id],
      );
      return { ...described, outcome: 'created' };
    }

    const refusal = this.refusal(holder, device, identity);
    if (refusal) return { ...described, outcome: 'refused', reason: refusal };

    if (holder.device_id === device.id) {
      await tx.query(
        `UPDATE iroh_endpoints SET details = $2, last_reported_at = now(), updated_at = now() WHERE id = $1`,
        [holder.id, identity.details],
      );
      return { ...described, outcome: 'updated' };
    }

    // An unowned operator row of the device's organization: the device proves the key and takes it over.
    await this.dropDeviceInstance(tx, device, identity.instance, identity.identifier);
    await tx.query(
      `UPDATE iroh_endpoints
          SET device_id = $2, source = 'device_reported', instance = $3, details = $4,
              last_reported_at = now(), updated_at = now()
        WHERE id = $1`,
      [holder.id, device.id, identity.instance, identity.details],
    );
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
    tx: EntityManager,
    device: ReportingDevice,
    instance: string,
    identifier: string,
  ): Promise<void> {
    await tx.query(
      `DELETE FROM iroh_endpoints WHERE device_id = $1 AND service = $2 AND instance = $3 AND identifier <> $4`,
      [device.id, IROH_SERVICE, instance, identifier],
    );
  }
}
