import { Inject, Injectable, Logger } from '@nestjs/common';
import { AuditService } from '../audit/audit.service';
import type { OrgAccess } from '../common/auth/actor';
import { roleSatisfies } from '../common/auth/roles';
import { DomainError, type FieldErrors } from '../common/errors/domain-error';
import { BLANK } from '../common/errors/messages';
import { isRetryableConflict } from '../common/errors/postgres-errors';
import { MAX_TAGS } from '../common/validation/fields';
import { normaliseTags, UUID_PATTERN } from '../common/values';
import { Transactions, type Tx } from '../database/transactions';
import { DeploymentMembershipService } from '../deployments/deployment-membership.service';
import { FirmwareRecordsService } from '../firmware/firmware-records.service';
import { PendingUpdatesRepository } from '../firmware/pending-updates.repository';
import { IrohEndpointsRepository } from '../iroh/iroh-endpoints.repository';
import { LiveEvents } from '../live/live-events';
import { MembershipsRepository } from '../orgs/memberships.repository';
import { OrgsService } from '../orgs/orgs.service';
import type { ProductRecord } from '../products/product-record';
import { ProductsService } from '../products/products.service';
import { WebhookOutbox } from '../webhooks/webhook-outbox';
import type { BulkAction, BulkChange, BulkEvents, BulkSelection } from './device-bulk.query';
import { DeviceCommands, UpdateNotifier } from './device-console';
import { parseDeviceFilters } from './device-list.query';
import { ALREADY_THE_PRODUCT, UNKNOWN_FIRMWARE } from './devices.errors';
import { type BulkChangeResult, DevicesRepository } from './devices.repository';
import type { BulkDevicesDto, BulkDevicesResultView } from './dto/bulk-devices.dto';

/**
 * Devices per window when a bulk change goes over a filter: the next this many selected devices by id (read by
 * primary-key range from where the last window stopped), each window changed in a transaction of its own, so that
 * no transaction holds more than this many device rows locked (devices joining, and the gateway's presence writes,
 * wait at most one window: about half a second) and no statement comes near the 30 s statement timeout, at any
 * fleet size.
 */
export const BULK_WINDOW_DEVICES = 5000;
/** The window size DeviceBulkService uses (a provider, so that tests can cross windows with a few devices). */
export const BULK_WINDOW = Symbol('BULK_WINDOW');
/** A window that lost a race to a deadlock or a serialization failure is run again, at most this often in all. */
const WINDOW_ATTEMPTS = 4;

export const BOTH_SELECTIONS = 'give either identifiers or filters, not both';
export const NO_SELECTION = "can't be blank: give identifiers or filters";
export const TOO_MANY_TAGS = (devices: number) =>
  `would give ${devices} device(s) more than ${MAX_TAGS} tags`;

/** What a bulk request does, checked: the change, and what it needs besides. */
type Plan =
  | { action: 'add_tags' | 'remove_tags'; change: BulkChange; tags: string[] }
  | { action: 'upgrade'; change: BulkChange; firmwareId: string; uuid: string }
  | {
      action: 'move';
      change: BulkChange;
      to: { orgId: string; org: string; productId: string; product: string };
    }
  | { action: 'enable_updates' | 'disable_updates' | 'clear_penalty_box'; change: BulkChange };

/**
 * `POST .../devices/bulk`: one action on many devices of a product, named by identifiers (at most 1,000: one
 * statement, one transaction) or by the device list's filters (any number: windows of BULK_WINDOW_DEVICES devices
 * read by primary-key range, each changed by one statement in its own transaction). Each statement is set-based
 * (device-bulk.query.ts); the follow-ups of the per-device actions happen per window, set-wise too: deployment
 * group membership after tag changes, the pending updates of an upgrade and the gateway's push of them, a move's
 * group, pending updates and network identities and the reconnection of the moved devices. Audited once per request,
 * with its counts; each changed device gets its webhook event (one INSERT ... SELECT per window, none when no
 * webhook wants them).
 */
@Injectable()
export class DeviceBulkService {
  private readonly logger = new Logger(DeviceBulkService.name);

  constructor(
    private readonly devices: DevicesRepository,
    private readonly transactions: Transactions,
    private readonly products: ProductsService,
    private readonly firmware: FirmwareRecordsService,
    private readonly commands: DeviceCommands,
    private readonly updates: UpdateNotifier,
    private readonly audit: AuditService,
    private readonly membership: DeploymentMembershipService,
    private readonly orgs: OrgsService,
    private readonly memberships: MembershipsRepository,
    private readonly pendingUpdates: PendingUpdatesRepository,
    private readonly irohEndpoints: IrohEndpointsRepository,
    private readonly live: LiveEvents,
    private readonly outbox: WebhookOutbox,
    @Inject(BULK_WINDOW) private readonly windowSize: number,
  ) {}

  async apply(
    access: OrgAccess,
    productName: string,
    dto: BulkDevicesDto,
  ): Promise<{ data: BulkDevicesResultView }> {
    const { selection, errors } = this.parseSelection(dto);
    Object.assign(errors, this.fieldErrors(dto));
    if (Object.keys(errors).length > 0) throw DomainError.invalid(errors);
    const product = await this.products.findInOrg(access, productName);
    const plan = await this.plan(access, product, dto);
    if (plan.action === 'add_tags' && 'filters' in selection) {
      const over = await this.devices.countOverTagLimit(product.id, selection, plan.tags, MAX_TAGS);
      if (over > 0) throw DomainError.invalidField('tags', TOO_MANY_TAGS(over));
    }
    const events = await this.webhookEvents(access, product, plan);
    const totals = { matched: 0, changed: 0 };
    // Where the next window starts (after this id; the identifiers need no window), and whether the filter
    // matched a full window already (the next ones are read in primary-key order only).
    let after: string | null = 'identifiers' in selection ? null : '0';
    let ordered = false;
    let committed = 0;
    try {
      for (;;) {
        const start = after;
        const inOrder = ordered;
        const result = await this.retrying(() =>
          this.transactions.run(async (tx) => {
            const window =
              start === null
                ? null
                : await this.devices.bulkWindow(product.id, selection, start, this.windowSize, inOrder, tx);
            const done = await this.devices.bulkChange(product.id, selection, plan.change, window, tx);
            if (done.overLimit > 0) throw DomainError.invalidField('tags', TOO_MANY_TAGS(done.overLimit));
            await this.followUp(access, product, plan, done, tx);
            if (events !== null && done.ids.length > 0)
              await this.outbox.emitSelected(tx, this.devices.bulkEventsSource(done.ids, events));
            // A window that came back full may have a next one; anything less was the last.
            const next =
              window !== null && window.length === this.windowSize ? window[window.length - 1] : null;
            // The last window's transaction records the request: the entry exists once everything committed.
            if (next === null) {
              await this.record(tx, access, product, plan, dto, {
                matched: totals.matched + done.matched,
                changed: totals.changed + changedBy(plan, done),
              });
            }
            return { done, next };
          }),
        );
        committed++;
        totals.matched += result.done.matched;
        totals.changed += changedBy(plan, result.done);
        await this.notify(product, plan, result.done);
        if (result.next === null) break;
        after = result.next;
        ordered = true;
      }
    } catch (err) {
      // Windows already committed stay changed: the audit log says so, with what they changed.
      if (committed > 0) {
        await this.transactions
          .run((tx) => this.record(tx, access, product, plan, dto, { ...totals, interrupted: true }))
          .catch((auditErr: unknown) =>
            this.logger.error({ err: auditErr }, 'an interrupted bulk change could not be audited'),
          );
      }
      throw err;
    }
    return { data: { action: plan.action, ...totals } };
  }

  /** `identifiers` or `filters`, exactly one; the filters read as the device list reads them. */
  private parseSelection(dto: BulkDevicesDto): { selection: BulkSelection; errors: FieldErrors } {
    const hasIds = dto.identifiers !== undefined && dto.identifiers !== null;
    const hasFilters = dto.filters !== undefined && dto.filters !== null;
    const none = { selection: { identifiers: [] }, errors: {} };
    if (hasIds && hasFilters) return { ...none, errors: { identifiers: [BOTH_SELECTIONS] } };
    if (!hasIds && !hasFilters) return { ...none, errors: { identifiers: [NO_SELECTION] } };
    if (hasIds) return { selection: { identifiers: [...new Set(dto.identifiers)] }, errors: {} };
    try {
      return { selection: { filters: parseDeviceFilters(dto.filters!) }, errors: {} };
    } catch (err) {
      if (err instanceof DomainError) return { ...none, errors: err.fields };
      throw err;
    }
  }

  /** The fields the action needs, present and well-formed (before any database work). */
  private fieldErrors(dto: BulkDevicesDto): FieldErrors {
    const errors: FieldErrors = {};
    const blank = (value: string | undefined) => value === undefined || value.trim() === '';
    switch (dto.action) {
      case 'add_tags':
      case 'remove_tags':
        if (normaliseTags(dto.tags).length === 0) errors.tags = [BLANK];
        break;
      case 'upgrade':
        if (blank(dto.uuid)) errors.uuid = [BLANK];
        else if (!UUID_PATTERN.test(dto.uuid!)) errors.uuid = [UNKNOWN_FIRMWARE];
        break;
      case 'move':
        if (blank(dto.new_org_name)) errors.new_org_name = [BLANK];
        if (blank(dto.new_product_name)) errors.new_product_name = [BLANK];
        break;
      case 'enable_updates':
      case 'disable_updates':
      case 'clear_penalty_box':
        break;
    }
    return errors;
  }

  /** The change, with what it refers to looked up (firmware; the target organization, product and role). */
  private async plan(access: OrgAccess, product: ProductRecord, dto: BulkDevicesDto): Promise<Plan> {
    const action: BulkAction = dto.action;
    switch (action) {
      case 'add_tags': {
        const tags = normaliseTags(dto.tags);
        return { action, tags, change: { kind: 'add_tags', tags, maxTags: MAX_TAGS } };
      }
      case 'remove_tags': {
        const tags = normaliseTags(dto.tags);
        return { action, tags, change: { kind: 'remove_tags', tags } };
      }
      case 'enable_updates':
      case 'disable_updates':
        return { action, change: { kind: 'updates_enabled', enabled: action === 'enable_updates' } };
      case 'clear_penalty_box':
        return { action, change: { kind: 'clear_penalty_box' } };
      case 'upgrade': {
        const uuid = dto.uuid!.toLowerCase();
        const firmwareId = await this.firmware.findIdByUuid(product.id, uuid);
        if (!firmwareId) throw DomainError.invalidField('uuid', UNKNOWN_FIRMWARE);
        return { action, uuid, firmwareId, change: { kind: 'upgrade' } };
      }
      case 'move': {
        // As the one-device move: manage on the target organization too (not a member there: the constant 404).
        const org = await this.orgs.findByName(dto.new_org_name!);
        const role = org ? await this.memberships.findRole(org.id, access.actor.userId) : null;
        if (!org || !role) throw DomainError.notFound();
        if (!roleSatisfies(role, 'manage')) throw DomainError.roleTooLow();
        const target = await this.products.findByName(org.id, dto.new_product_name!);
        if (!target) throw DomainError.notFound();
        if (target.id === product.id) throw DomainError.invalidField('new_product_name', ALREADY_THE_PRODUCT);
        return {
          action,
          to: { orgId: org.id, org: org.name, productId: target.id, product: target.name },
          change: { kind: 'move', orgId: org.id, productId: target.id },
        };
      }
    }
  }

  /**
   * The webhook event each changed device gets (as the one-device action would send it), or null when no enabled
   * webhook wants it: then the windows write no event and run no statement for them.
   */
  private async webhookEvents(
    access: OrgAccess,
    product: ProductRecord,
    plan: Plan,
  ): Promise<BulkEvents | null> {
    const actor = { type: 'user', email: access.actor.email };
    const event = (type: string, data: Record<string, unknown> = {}, withTags = false): BulkEvents => ({
      type,
      orgIds: [access.orgId],
      product: product.name,
      data: { ...data, actor },
      withTags,
    });
    let events: BulkEvents;
    switch (plan.action) {
      case 'add_tags':
      case 'remove_tags':
        events = event('device.updated', {}, true);
        break;
      case 'enable_updates':
      case 'disable_updates':
        events = event('device.updated', { changes: { updates_enabled: plan.action === 'enable_updates' } });
        break;
      case 'clear_penalty_box':
        events = event('device.penalty_box_cleared');
        break;
      case 'upgrade':
        events = event('update.requested', { firmware_uuid: plan.uuid });
        break;
      case 'move':
        events = {
          ...event('device.moved', {
            from: { org: access.orgName, product: product.name },
            to: { org: plan.to.org, product: plan.to.product },
          }),
          orgIds: [...new Set([access.orgId, plan.to.orgId])],
          product: plan.to.product,
        };
        break;
    }
    const targets = events.orgIds.map((orgId) => ({ orgId, product: events.product }));
    return (await this.outbox.wanted(targets, [events.type])) ? events : null;
  }

  /** What the per-device actions do besides, for the devices of one window, in its transaction. */
  private async followUp(
    access: OrgAccess,
    product: ProductRecord,
    plan: Plan,
    done: BulkChangeResult,
    tx: Tx,
  ): Promise<void> {
    if (done.ids.length === 0) return;
    switch (plan.action) {
      case 'add_tags':
      case 'remove_tags':
        // Tags decide deployment group membership.
        await this.membership.recomputeDevices(product.id, done.ids, tx);
        return;
      case 'upgrade':
        try {
          await this.firmware.requestUpdates(done.ids, plan.firmwareId, access.actor.userId, tx);
        } catch (err) {
          // Deleted since it was looked up: the firmware (as if it had never matched), or the caller's user.
          const gone = this.firmware.deletedUpdateTarget(err);
          if (gone === 'firmware') throw DomainError.invalidField('uuid', UNKNOWN_FIRMWARE);
          if (gone !== undefined) throw DomainError.notFound();
          throw err;
        }
        return;
      case 'move':
        // As the one-device move: out of its group and updates of the old product; network identities follow.
        await this.membership.leaveForMoveMany(done.ids, tx);
        await this.pendingUpdates.deleteForDevices(done.ids, tx);
        await this.irohEndpoints.moveDevicesEndpoints(done.ids, plan.to.orgId, tx);
        return;
      case 'enable_updates':
      case 'disable_updates':
      case 'clear_penalty_box':
        return;
    }
  }

  /**
   * After a window's commit, what the gateway must do for its devices (in a few bus messages, not one each), and
   * the live events an upgrade makes (as for one device: the update is pending).
   */
  private async notify(product: ProductRecord, plan: Plan, done: BulkChangeResult): Promise<void> {
    if (plan.action === 'upgrade' && this.live.wantsProduct(product.id)) {
      for (const identifier of done.identifiers) {
        this.live.deviceUpdate({ productId: product.id, identifier }, 'pending', null, plan.uuid);
      }
    }
    if (done.connected.length === 0) return;
    if (plan.action === 'upgrade') await this.updates.pendingUpdatesChanged(done.connected);
    // Moved devices join again, under their new product.
    if (plan.action === 'move') await this.commands.reconnectMany(done.connected);
  }

  private async retrying<T>(work: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await work();
      } catch (err) {
        if (!isRetryableConflict(err) || attempt >= WINDOW_ATTEMPTS) throw err;
        await new Promise((resolve) => setTimeout(resolve, 10 * attempt + Math.random() * 40));
      }
    }
  }

  /** One audit entry for the request (in both organizations for a move, as the one-device move). */
  private async record(
    tx: Tx,
    access: OrgAccess,
    product: ProductRecord,
    plan: Plan,
    dto: BulkDevicesDto,
    counts: { matched: number; changed: number; interrupted?: boolean },
  ): Promise<void> {
    const details: Record<string, unknown> = {
      product: product.name,
      ...(dto.identifiers ? { identifiers: [...new Set(dto.identifiers)] } : { filters: dto.filters }),
      ...(plan.action === 'add_tags' || plan.action === 'remove_tags' ? { tags: plan.tags } : {}),
      ...(plan.action === 'upgrade' ? { firmware_uuid: plan.uuid } : {}),
      ...(plan.action === 'move'
        ? {
            from: { org: access.orgName, product: product.name },
            to: { org: plan.to.org, product: plan.to.product },
          }
        : {}),
      ...counts,
    };
    const orgIds = plan.action === 'move' ? new Set([access.orgId, plan.to.orgId]) : [access.orgId];
    for (const orgId of orgIds) {
      await this.audit.record(tx, {
        orgId,
        actor: access.actor,
        action: `device.bulk_${plan.action}`,
        targetType: 'product',
        targetId: product.name,
        details,
      });
    }
  }
}

/** Devices a window changed: every locked device for an upgrade or a move, else the rows written. */
function changedBy(plan: Plan, done: BulkChangeResult): number {
  return plan.action === 'upgrade' || plan.action === 'move' ? done.ids.length : done.written;
}
