import { MAX_LARGE_JSON_BYTES } from '../common/http/large-json-body';
import { Injectable, Logger } from '@nestjs/common';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { AuditService } from '../audit/audit.service';
import { DeviceCertificatesService } from '../certificates/device-certificates.service';
import type { OrgAccess } from '../common/auth/actor';
import { DomainError } from '../common/errors/domain-error';
import { Created, pathSegment } from '../common/http/created';
import { normaliseTags, parseBigId } from '../common/values';
import { Transactions, type Tx } from '../database/transactions';
import { ProductsService } from '../products/products.service';
import type { OutboxEvent } from '../webhooks/webhook-event-types';
import { WebhookOutbox } from '../webhooks/webhook-outbox';
import type { DeviceImportError } from './device-import.entity';
import { type DeviceImportRow, DeviceImportsRepository } from './device-imports.repository';
import type { DeviceImportView } from './dto/device-import.dto';
import { type ManifestEntry, readTrustAndGoEntry, TRUST_AND_GO } from './trust-and-go';

/** Entries per request: 10,000 as the issue asks, with room. */
export const MAX_IMPORT_ENTRIES = 20_000;
export const MAX_IMPORT_BYTES = MAX_LARGE_JSON_BYTES;
const BATCH = 500;
const MAX_LISTED_ERRORS = 1000;
const PARSE_SLICE = 20;

function view(row: DeviceImportRow): DeviceImportView {
  return {
    id: row.id,
    status: row.stale ? 'interrupted' : row.status === 'done' ? 'done' : 'running',
    format: row.format,
    tags: row.tags,
    total: row.total,
    processed: row.processed,
    created: row.created,
    unchanged: row.unchanged,
    failed: row.failed,
    errors: row.errors,
    inserted_at: row.inserted_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/**
 * NervesHub's `POST .../devices/import`: a Trust&GO manifest becomes devices with their certificates, as a job
 * on the instance that received it, in batches of 500 (one transaction each: devices, certificates, progress), its
 * progress and refused entries readable from any instance. Idempotent: an entry whose device exists in this
 * product with this certificate counts as `unchanged`.
 */
@Injectable()
export class DeviceImportsService {
  private readonly logger = new Logger(DeviceImportsService.name);
  private readonly running = new Set<Promise<void>>();

  constructor(
    private readonly imports: DeviceImportsRepository,
    private readonly products: ProductsService,
    private readonly certificates: DeviceCertificatesService,
    private readonly transactions: Transactions,
    private readonly audit: AuditService,
    private readonly outbox: WebhookOutbox,
  ) {}

  async start(
    access: OrgAccess,
    productName: string,
    manifest: unknown,
    format: string | string[] | undefined,
    tagsHeader: string | string[] | undefined,
  ): Promise<Created<{ data: DeviceImportView }>> {
    const product = await this.products.findInOrg(access, productName);
    if (format !== undefined && format !== TRUST_AND_GO) {
      throw DomainError.invalidField('format', `must be ${TRUST_AND_GO}`);
    }
    if (!Array.isArray(manifest) || manifest.length === 0 || manifest.length > MAX_IMPORT_ENTRIES) {
      throw DomainError.invalidField(
        'manifest',
        `must be a JSON array of 1 to ${MAX_IMPORT_ENTRIES} entries`,
      );
    }
    if (tagsHeader !== undefined && typeof tagsHeader !== 'string') {
      throw DomainError.invalidField('tags', 'must be one header of comma-separated tags');
    }
    const tags = normaliseTags(tagsHeader ?? null);
    const job = await this.transactions.run(async (tx) => {
      const row = await this.imports.insert(
        {
          productId: product.id,
          format: TRUST_AND_GO,
          tags,
          total: manifest.length,
          requestedById: access.actor.userId,
        },
        tx,
      );
      await this.audit.record(tx, {
        orgId: access.orgId,
        actor: access.actor,
        action: 'device.import',
        targetType: 'product',
        targetId: product.name,
        details: { job: row.id, entries: manifest.length, format: TRUST_AND_GO, tags },
      });
      return row;
    });
    const run = this.run(job.id, access, product, manifest as unknown[], tags)
      .catch((err: unknown) => this.logger.error({ err, job: job.id }, 'device import failed'))
      .finally(() => this.running.delete(run));
    this.running.add(run);
    return new Created(
      `/api/orgs/${pathSegment(access.orgName)}/products/${pathSegment(product.name)}/device_imports/${job.id}`,
      { data: view(job) },
    );
  }

  async show(access: OrgAccess, productName: string, rawId: string): Promise<{ data: DeviceImportView }> {
    const product = await this.products.findInOrg(access, productName);
    const id = parseBigId(rawId);
    const row = id === null ? undefined : await this.imports.find(product.id, id);
    if (!row) throw DomainError.notFound();
    return { data: view(row) };
  }

  /** Resolves once every job this instance runs has finished (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running]);
  }

  private async run(
    jobId: string,
    access: OrgAccess,
    product: { id: string; name: string },
    manifest: unknown[],
    tags: string[],
  ) {
    const { orgId } = access;
    const productId = product.id;
    const seen = new Map<string, number>();
    // `device.created` for each device a batch creates and `certificate.registered` for each certificate it
    // stores, each when a webhook wants it (asked once per job); a device's creation comes before its certificate.
    const targets = [{ orgId, product: product.name }];
    const [announceDevices, announceCertificates] = await Promise.all([
      this.outbox.wanted(targets, ['device.created']),
      this.outbox.wanted(targets, ['certificate.registered']),
    ]);
    const actor = { type: 'user', email: access.actor.email };
    const announce = async (
      created: Iterable<string>,
      registered: { identifier: string; serial: string; fingerprint: string }[],
      tx: Tx,
    ) => {
      const events: OutboxEvent[] = [];
      if (announceDevices) {
        for (const identifier of created)
          events.push({
            orgId,
            type: 'device.created',
            product: product.name,
            subject: `device:${identifier}`,
            data: { identifier, product: product.name, via: 'import', actor },
          });
      }
      if (announceCertificates) {
        for (const { identifier, serial, fingerprint } of registered)
          events.push({
            orgId,
            type: 'certificate.registered',
            product: product.name,
            subject: `device:${identifier}`,
            data: { kind: 'device', identifier, serial, fingerprint, actor },
          });
      }
      if (events.length > 0) await this.outbox.emitMany(tx, events);
    };
    for (let start = 0; start < manifest.length; start += BATCH) {
      const errors: DeviceImportError[] = [];
      const entries: { index: number; entry: ReadEntry }[] = [];
      for (let index = start; index < Math.min(start + BATCH, manifest.length); index++) {
        // Reading a certificate takes milliseconds: the event loop (device sockets, other requests) gets turns.
        if (index % PARSE_SLICE === 0) await yieldToEventLoop();
        const entry = readTrustAndGoEntry(manifest[index]);
        if ('error' in entry) {
          errors.push({ index, identifier: entry.identifier, error: entry.error });
          continue;
        }
        const first = seen.get(entry.identifier);
        if (first !== undefined) {
          errors.push({
            index,
            identifier: entry.identifier,
            error: `repeats the identifier of entry ${first}`,
          });
          continue;
        }
        seen.set(entry.identifier, index);
        entries.push({ index, entry });
      }
      const counts = await this.transactions.run(async (tx) => {
        const identifiers = entries.map(({ entry }) => entry.identifier);
        const inserted = await this.imports.insertDevices(orgId, productId, identifiers, tags, tx);
        const devices = await this.imports.findDevices(identifiers, tx);
        const items: { index: number; deviceId: string; identifier: string; cert: ReadEntry['cert'] }[] = [];
        for (const { index, entry } of entries) {
          const device = devices.get(entry.identifier);
          if (!device || device.product_id !== productId) {
            errors.push({
              index,
              identifier: entry.identifier,
              error: 'identifier is taken by a device of another product',
            });
          } else {
            items.push({ index, deviceId: device.id, identifier: entry.identifier, cert: entry.cert });
          }
        }
        const outcomes = await this.certificates.importForDevices(orgId, items, tx);
        const registered: { identifier: string; serial: string; fingerprint: string }[] = [];
        let unchanged = 0;
        outcomes.forEach((outcome, i) => {
          const item = items[i];
          if (outcome === 'added') {
            registered.push({
              identifier: item.identifier,
              serial: item.cert.serial,
              fingerprint: item.cert.fingerprint,
            });
          } else if (outcome === 'present') {
            if (!inserted.has(item.identifier)) unchanged++;
          } else {
            errors.push({
              index: item.index,
              identifier: item.identifier,
              error: `certificate ${outcome.refused}`,
            });
          }
        });
        await announce(inserted.keys(), registered, tx);
        errors.sort((x, y) => x.index - y.index);
        const batch = {
          processed: Math.min(BATCH, manifest.length - start),
          created: inserted.size,
          unchanged,
          errors,
        };
        await this.imports.recordBatch(jobId, batch, start + BATCH >= manifest.length, MAX_LISTED_ERRORS, tx);
        return batch;
      });
      this.logger.debug({ job: jobId, ...counts, errors: counts.errors.length }, 'device import batch');
    }
  }
}

/** An entry that could be read. */
type ReadEntry = Extract<ManifestEntry, { cert: unknown }>;
