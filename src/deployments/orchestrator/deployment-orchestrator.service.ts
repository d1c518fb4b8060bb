import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { Counter, Gauge } from 'prom-client';
import { AuditService } from '../../audit/audit.service';
import { InstanceBus } from '../../database/instance-bus/instance-bus';
import { Transactions, type Tx } from '../../database/transactions';
import { DeviceRecordsService } from '../../devices/device-records.service';
import { FirmwareRecordsService } from '../../firmware/firmware-records.service';
import { DeviceRelay } from '../../gateway/device-relay';
import { type CompletedUpdate, type FailedOutcome, RolloutSignals } from '../../gateway/rollout-signals';
import { MetricsService } from '../../metrics/metrics.service';
import { ProductsService } from '../../products/products.service';
import type { OutboxEvent } from '../../webhooks/webhook-event-types';
import { WebhookOutbox } from '../../webhooks/webhook-outbox';
import { DEPLOYMENTS_CHANNEL } from '../deployment-events';
import { LeadershipLocksRepository } from './leadership-locks.repository';
import { DeploymentOrchestratorRepository, type FailureRule } from './orchestrator.repository';

export { DEPLOYMENTS_CHANNEL } from '../deployment-events';

/** The orchestrator's clock: how often it sweeps, how long triggers are gathered before a claim. */
export interface OrchestratorTiming {
  /** Leadership attempts, expiry, re-sends and claims of every led group. */
  sweepMs: number;
  /** A group's triggers within this window become one claim. */
  debounceMs: number;
  /** Devices coming online on this instance within this window are looked up (and published) together. */
  onlineBatchMs: number;
}

export const ORCHESTRATOR_TIMING = Symbol('ORCHESTRATOR_TIMING');
export const DEFAULT_ORCHESTRATOR_TIMING: OrchestratorTiming = {
  sweepMs: 2000,
  debounceMs: 50,
  onlineBatchMs: 50,
};

/** A led group with nothing to claim is checked for `deployment_group.finished` at most this often. */
const FINISH_CHECK_MS = 60_000;

/** Runs of one group: one at a time, triggers during a run make one more run after it. */
interface GroupRun {
  timer: NodeJS.Timeout | null;
  running: boolean;
  /** Callers waiting for a run that starts after their trigger. */
  waiting: (() => void)[];
}

/**
 * The rollout of deployment groups. Every instance records how updates ended (the instance holding the device's
 * socket hears it) and tells the group's leader through the instance bus; the leader of a group (a PostgreSQL
 * session advisory lock, see LeadershipLocksRepository) expires its updates, re-sends claimed updates not yet
 * delivered, and claims the next devices, at most `concurrent_updates` in flight. The claim itself is safe
 * whoever runs it (a transaction lock per group and the pending_updates primary key), so a change of leader
 * never lets a rollout exceed its concurrency nor send a device two update frames.
 */
@Injectable()
export class DeploymentOrchestrator implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(DeploymentOrchestrator.name);
  private readonly runs = new Map<string, GroupRun>();
  private readonly online = new Set<string>();
  /** When this instance last tried to lead a group on a poke. */
  private readonly leadAttempts = new Map<string, number>();
  /** When this instance last checked a led group for the end of its rollout (outside completions). */
  private readonly finishChecks = new Map<string, number>();
  private onlineTimer: NodeJS.Timeout | null = null;
  private sweepTimer: NodeJS.Timeout | null = null;
  private sweepRunning: Promise<void> | null = null;
  private sweepQueued: Promise<void> | null = null;
  private stopped = false;
  private readonly paused: Counter;

  constructor(
    private readonly repo: DeploymentOrchestratorRepository,
    private readonly leadership: LeadershipLocksRepository,
    private readonly devices: DeviceRecordsService,
    private readonly firmwares: FirmwareRecordsService,
    private readonly transactions: Transactions,
    private readonly audit: AuditService,
    private readonly products: ProductsService,
    private readonly outbox: WebhookOutbox,
    private readonly relay: DeviceRelay,
    private readonly bus: InstanceBus,
    signals: RolloutSignals,
    metrics: MetricsService,
    @Inject(ORCHESTRATOR_TIMING) private readonly timing: OrchestratorTiming,
  ) {
    bus.subscribe(DEPLOYMENTS_CHANNEL, (payload) => this.onBus(payload));
    signals.onDeviceOnline((deviceId) => this.deviceOnline(deviceId));
    signals.onUpdateCompleted((completed) => this.updateCompleted(completed));
    signals.handleFailures((deviceId, outcome) => this.updateFailed(deviceId, outcome));
    this.paused = new Counter({
      name: 'fleethub_deployment_groups_paused_total',
      help: 'Deployment groups paused by fleethub because their release failed failure_threshold times',
      registers: [metrics.registry],
    });
    const inFlight: Gauge = new Gauge({
      name: 'fleethub_deployment_updates_in_flight',
      help: 'Updates started by deployment groups and not yet completed, failed or expired',
      registers: [metrics.registry],
      // Read at scrape time; NaN when the database cannot answer (the scrape still succeeds).
      collect: async () =>
        inFlight.set(await this.firmwares.countDeploymentUpdates().catch(() => Number.NaN)),
    });
  }

  onApplicationBootstrap(): void {
    this.sweepTimer = setInterval(() => void this.sweep(), this.timing.sweepMs);
    this.sweepTimer.unref();
    void this.sweep();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    if (this.onlineTimer) clearTimeout(this.onlineTimer);
    for (const run of this.runs.values()) {
      if (run.timer) clearTimeout(run.timer);
      for (const resolve of run.waiting) resolve();
      run.waiting = [];
    }
    await this.leadership.close();
  }

  /**
   * Its leader (wherever it is) runs a claim of the group soon: here when this instance leads it, else through a
   * poke on the instance bus.
   */
  async poke(groupId: string): Promise<void> {
    if (this.leadership.held.has(groupId)) {
      void this.schedule(groupId, this.timing.debounceMs);
      return;
    }
    await this.bus.publish(DEPLOYMENTS_CHANNEL, JSON.stringify({ group: groupId }));
  }

  /**
   * A sweep: expire updates past their time, take the lead of active groups nobody leads, give up groups no
   * longer active, and run every group led here (re-sends, claim). Resolves when it has finished: one runs at a
   * time, and a sweep asked for while one runs follows it (at most one waits).
   */
  sweep(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (this.sweepQueued) return this.sweepQueued;
    const previous = this.sweepRunning ?? Promise.resolve();
    const next: Promise<void> = previous.then(async () => {
      this.sweepQueued = null;
      this.sweepRunning = next;
      try {
        await this.sweepOnce();
      } finally {
        if (this.sweepRunning === next) this.sweepRunning = null;
      }
    });
    this.sweepQueued = next;
    return next;
  }

  private async sweepOnce(): Promise<void> {
    if (this.stopped) return;
    try {
      await this.expire();
      const active = await this.repo.activeGroupIds();
      const activeSet = new Set(active);
      await this.leadership.resign([...this.leadership.held].filter((id) => !activeSet.has(id)));
      await this.leadership.tryLead(active);
      await Promise.all([...this.leadership.held].map((id) => this.schedule(id, 0)));
    } catch (err) {
      this.logger.warn({ err }, 'deployment sweep failed');
    }
  }

  private onBus(payload: string): void {
    let groupId: unknown;
    try {
      groupId = (JSON.parse(payload) as { group?: unknown }).group;
    } catch {
      return;
    }
    if (typeof groupId !== 'string' && typeof groupId !== 'number') return;
    const id = String(groupId);
    if (!/^\d{1,19}$/.test(id) || this.stopped) return;
    if (this.leadership.held.has(id)) {
      void this.schedule(id, this.timing.debounceMs);
      return;
    }
    // A group nobody may lead yet (just created or activated): try now rather than at the next sweep; at most
    // once per half sweep, so that a leader elsewhere does not cost this instance a query per poke.
    const now = Date.now();
    if (now - (this.leadAttempts.get(id) ?? 0) < this.timing.sweepMs / 2) return;
    this.leadAttempts.set(id, now);
    if (this.leadAttempts.size > 10_000) this.leadAttempts.clear();
    this.leadership
      .tryLead([id])
      .then((led) => {
        if (led.length > 0) void this.schedule(id, this.timing.debounceMs);
      })
      .catch((err: unknown) => this.logger.warn({ err }, 'deployment leadership attempt failed'));
  }

  /**
   * Runs the group after `delayMs`, once for every trigger arriving meanwhile (a trigger during a run makes one
   * more run after it). Resolves when a run started after this trigger has finished.
   */
  private schedule(groupId: string, delayMs: number): Promise<void> {
    let run = this.runs.get(groupId);
    if (!run) {
      run = { timer: null, running: false, waiting: [] };
      this.runs.set(groupId, run);
    }
    const state = run;
    const done = new Promise<void>((resolve) => state.waiting.push(resolve));
    if (!state.running && !state.timer) {
      state.timer = setTimeout(() => {
        state.timer = null;
        void this.runGroup(groupId, state);
      }, delayMs);
    }
    return done;
  }

  private async runGroup(groupId: string, run: GroupRun): Promise<void> {
    const covered = run.waiting;
    run.waiting = [];
    if (this.stopped || !this.leadership.held.has(groupId)) {
      this.runs.delete(groupId);
      for (const resolve of [...covered, ...run.waiting]) resolve();
      return;
    }
    run.running = true;
    try {
      await this.resendUndelivered(groupId);
      const claimed = await this.claim(groupId);
      // Completions check the end of the rollout; this catches the rest (devices that left the group, or a
      // release its devices already ran), at most once a minute per group.
      const lastCheck = this.finishChecks.get(groupId) ?? 0;
      if (claimed.length === 0 && Date.now() - lastCheck >= FINISH_CHECK_MS) {
        this.finishChecks.set(groupId, Date.now());
        await this.finishIfDone(groupId);
      }
    } catch (err) {
      this.logger.warn({ err, groupId }, 'deployment rollout step failed');
    } finally {
      run.running = false;
      for (const resolve of covered) resolve();
    }
    if (run.waiting.length === 0) {
      this.runs.delete(groupId);
      return;
    }
    run.timer = setTimeout(() => {
      run.timer = null;
      void this.runGroup(groupId, run);
    }, this.timing.debounceMs);
  }

  /** Claims the group's next devices (one statement under the group's lock) and sends them their update. */
  async claim(groupId: string): Promise<string[]> {
    const claimed = await this.transactions.run(async (tx) => {
      const group = await this.repo.lockForClaim(groupId, tx);
      if (!group) return [];
      return this.firmwares.claimDeploymentUpdates(
        group.id,
        group.current_release_id,
        group.queue_management === 'LIFO',
        tx,
      );
    });
    if (claimed.length > 0) {
      this.logger.log(`deployment group ${groupId}: ${claimed.length} update(s) started`);
      await this.relay.deploymentUpdatesClaimed(claimed);
    }
    return claimed;
  }

  /**
   * Claimed updates whose device is connected but never got the frame (the claimer died before sending, or the
   * device was joining): sent again; the gateway sends only what was not delivered yet.
   */
  private async resendUndelivered(groupId: string): Promise<void> {
    const undelivered = await this.firmwares.undeliveredDeploymentUpdates(groupId);
    if (undelivered.length > 0) await this.relay.deploymentUpdatesClaimed(undelivered);
  }

  /**
   * Updates past `expires_at` (any group, paused ones included) end as failures: an attempt each, the release's
   * failed count; their groups' leaders are poked. Every instance runs it: a row is deleted by one of them only.
   */
  private async expire(): Promise<void> {
    const groups = await this.transactions.run(async (tx) => {
      const expired = await this.firmwares.expireDeploymentUpdates(tx);
      const byRelease = new Map<string, string[]>();
      for (const row of expired) {
        const ids = byRelease.get(row.deployment_release_id) ?? [];
        ids.push(row.device_id);
        byRelease.set(row.deployment_release_id, ids);
      }
      for (const [releaseId, deviceIds] of byRelease)
        await this.recordFailures(releaseId, deviceIds, false, tx);
      if (expired.length > 0) this.logger.warn(`${expired.length} deployment update(s) expired`);
      return new Set(expired.map((row) => row.deployment_group_id));
    });
    for (const groupId of groups) await this.poke(groupId);
  }

  /**
   * A device completed its orchestrated update: its attempts are cleared, the group's rollout may have finished,
   * and the group's leader is poked.
   */
  private async updateCompleted({ deviceId, groupId, attemptsCleared }: CompletedUpdate): Promise<void> {
    if (!attemptsCleared) await this.devices.clearUpdateAttempts(deviceId);
    await this.finishIfDone(groupId).catch((err: unknown) =>
      this.logger.warn({ err, groupId }, 'deployment finish check failed'),
    );
    await this.poke(groupId);
  }

  /**
   * When every device of the group that takes updates runs its current release and none is in flight, the
   * release is marked finished and `deployment_group.finished` written, in one transaction (once per release).
   */
  private async finishIfDone(groupId: string): Promise<void> {
    await this.transactions.run(async (tx) => {
      const finished = await this.repo.finishCurrentRelease(groupId, tx);
      if (!finished) return;
      this.logger.log(`deployment group ${finished.name}: release ${finished.release_number} finished`);
      await this.outbox.emit(tx, {
        orgId: finished.org_id,
        type: 'deployment_group.finished',
        product: finished.product,
        subject: `deployment_group:${finished.product}/${finished.name}`,
        data: {
          name: finished.name,
          product: finished.product,
          release: finished.release_number,
          firmware_uuid: finished.firmware_uuid,
          firmware_version: finished.firmware_version,
          devices: finished.devices,
          actor: { type: 'system' },
        },
      });
    });
  }

  /**
   * A device's delivered update failed or was ignored: the row goes and, for an orchestrated update, the failure
   * is recorded in the same transaction (a manual upgrade's: its `update.failed` event); then the group's leader
   * is poked. Answers whether there was a row.
   */
  private async updateFailed(deviceId: string, outcome: FailedOutcome): Promise<boolean> {
    const ended = await this.transactions.run(async (tx) => {
      const row = await this.firmwares.endDeliveredUpdateOf(deviceId, tx);
      if (row?.releaseId) await this.recordFailures(row.releaseId, [deviceId], true, tx);
      else if (row) await this.emitManualFailure(deviceId, row.firmware, tx);
      return row;
    });
    if (ended?.groupId) {
      this.logger.log(`deployment group ${ended.groupId}: device ${deviceId} update ${outcome}`);
      this.poke(ended.groupId).catch((err: unknown) => this.logger.warn({ err }, 'deployment poke failed'));
    }
    return ended !== null;
  }

  /**
   * Failed, ignored or expired updates of `releaseId`: an update attempt per device; the penalty box for a failure
   * the device reported (`reported`: failed or ignored, as NervesHub does) and, for any, at the group's device
   * failure threshold or rate; the release's failed count, and the group's pause at its `failure_threshold`
   * (audited, counted).
   */
  private async recordFailures(
    releaseId: string,
    deviceIds: string[],
    reported: boolean,
    tx: Tx,
  ): Promise<void> {
    const rule = await this.repo.failureRuleOfRelease(releaseId, tx);
    if (!rule) return;
    const penalised = await this.devices.recordUpdateFailures(
      deviceIds,
      {
        threshold: rule.device_failure_threshold,
        rateSeconds: rule.device_failure_rate_seconds,
        rateAmount: rule.device_failure_rate_amount,
        penaltyMinutes: rule.penalty_timeout_minutes,
      },
      reported,
      tx,
    );
    if (penalised.length > 0)
      this.logger.log(`deployment group ${rule.group_id}: ${penalised.length} device(s) in the penalty box`);
    await this.emitFailures(rule, deviceIds, new Set(penalised.map(String)), reported, tx);
    // Under the group's claim lock: a claim either commits before the pause or finds the group inactive, and
    // the claimed updates not sent yet are withdrawn with the pause, so that no update starts after it.
    await this.repo.lockClaims(rule.group_id, tx);
    const paused = await this.repo.addReleaseFailures(releaseId, deviceIds.length, tx);
    if (!paused) return;
    const withdrawn = await this.firmwares.withdrawUndeliveredDeploymentUpdates(paused.id, tx);
    await this.audit.record(tx, {
      orgId: paused.org_id,
      actor: null,
      action: 'deployment_group.pause',
      targetType: 'deployment_group',
      targetId: paused.name,
      details: {
        // Named for the audit log's readers and the webhook event's product filter.
        product: await this.products.nameById(paused.product_id, tx),
        reason: paused.paused_reason,
        release: paused.release_number,
        failed_count: paused.failed_count,
        withdrawn_updates: withdrawn,
      },
    });
    this.paused.inc();
    this.logger.warn(`deployment group ${paused.name} (${paused.id}): ${paused.paused_reason}`);
  }

  /**
   * The webhook events of failed updates, in their transaction: `update.failed` for each device, then
   * `device.penalty_box_entered` for those the failure put (or kept) in the penalty box. One statement for the
   * batch (an expiry may end many updates at once).
   */
  private async emitFailures(
    rule: FailureRule,
    deviceIds: string[],
    penalised: Set<string>,
    reported: boolean,
    tx: Tx,
  ): Promise<void> {
    const devices = await this.devices.identifiersOf(deviceIds, tx);
    const product = await this.products.nameById(rule.product_id, tx);
    const system = { type: 'system' };
    const events: OutboxEvent[] = [];
    for (const device of devices) {
      const subject = `device:${device.identifier}`;
      events.push({
        orgId: rule.org_id,
        type: 'update.failed',
        product,
        subject,
        data: {
          identifier: device.identifier,
          product,
          deployment_group: rule.group_name,
          release: rule.release_number,
          firmware_uuid: rule.firmware_uuid,
          firmware_version: rule.firmware_version,
          via: 'deployment_group',
          reason: reported ? 'reported' : 'expired',
          actor: system,
        },
      });
      if (penalised.has(String(device.id)))
        events.push({
          orgId: rule.org_id,
          type: 'device.penalty_box_entered',
          product,
          subject,
          data: {
            identifier: device.identifier,
            product,
            deployment_group: rule.group_name,
            penalty_timeout_minutes: rule.penalty_timeout_minutes,
            actor: system,
          },
        });
    }
    await this.outbox.emitMany(tx, events);
  }

  /**
   * The `update.failed` event of a manual upgrade the device reported failed or ignored, in its transaction (no
   * attempt counted, no penalty box: those are a deployment group's rules, as in NervesHub).
   */
  private async emitManualFailure(
    deviceId: string,
    firmware: { uuid: string; version: string },
    tx: Tx,
  ): Promise<void> {
    const [device] = await this.devices.identifiersOf([deviceId], tx);
    if (!device) return;
    const product = await this.products.nameById(device.product_id, tx);
    await this.outbox.emitMany(tx, [
      {
        orgId: device.org_id,
        type: 'update.failed',
        product,
        subject: `device:${device.identifier}`,
        data: {
          identifier: device.identifier,
          product,
          deployment_group: null,
          release: null,
          firmware_uuid: firmware.uuid,
          firmware_version: firmware.version,
          via: 'manual',
          reason: 'reported',
          actor: { type: 'system' },
        },
      },
    ]);
  }

  /** A device joined here: its group's leader is poked (devices gathered for `onlineBatchMs`). */
  private deviceOnline(deviceId: string): void {
    if (this.stopped) return;
    this.online.add(deviceId);
    this.onlineTimer ??= setTimeout(() => {
      this.onlineTimer = null;
      const ids = [...this.online];
      this.online.clear();
      this.repo
        .groupsOfDevices(ids)
        .then((groups) => Promise.all(groups.map((id) => this.poke(id))))
        .catch((err: unknown) => this.logger.warn({ err }, 'deployment online poke failed'));
    }, this.timing.onlineBatchMs);
  }
}
