import {
  type BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  type OnModuleInit,
} from '@nestjs/common';
import { BrowserSessionAuthenticator } from '../browser-sessions/browser-session-authenticator';
import { TokenCache } from '../auth/token-cache';
import { TokensService } from '../auth/tokens.service';
import type { OrgAccess } from '../common/auth/actor';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-codes';
import { isForeignKeyViolation } from '../common/errors/postgres-errors';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { InstanceBus } from '../database/instance-bus/instance-bus';
import { Transactions } from '../database/transactions';
import { DeviceRecordsService } from '../devices/device-records.service';
import { ShutdownState } from '../health/shutdown-state';
import { MembershipsRepository } from '../orgs/memberships.repository';
import { ProductsService } from '../products/products.service';
import { DeploymentCountsWatcher } from './deployment-counts-watcher';
import type { EventsQuery } from './dto/events.query';
import { EventStream } from './event-stream';
import { EventStreamsRepository } from './event-streams.repository';
import { LiveEvents } from './live-events';
import { LIVE_TIMING, type LiveTiming } from './live-timing';
import { OverviewWatcher } from './overview-watcher';

/** After the shutdown ends a stream, how long its reader has to take what was handed to it before it is cut. */
const SHUTDOWN_GRACE_MS = 1000;

/**
 * The console's event streams: opened for a member of the product's organization (view is enough), counted
 * against the per-user limit across instances, fed by LiveEvents, the DeploymentCountsWatcher and (with
 * `overview=true`) the OverviewWatcher, and ended when
 * their caller may no longer see them (its token or session revoked, expired or idle, its membership gone), when
 * they cannot keep up, and when the instance stops (their clients reconnect to another).
 */
@Injectable()
export class EventStreamsService implements OnModuleInit, BeforeApplicationShutdown {
  private readonly logger = new Logger('LiveEvents');
  private readonly streams = new Set<EventStream>();
  private timers: NodeJS.Timeout[] = [];
  private stopping = false;

  constructor(
    private readonly products: ProductsService,
    private readonly devices: DeviceRecordsService,
    private readonly live: LiveEvents,
    private readonly counts: DeploymentCountsWatcher,
    private readonly overview: OverviewWatcher,
    private readonly records: EventStreamsRepository,
    private readonly transactions: Transactions,
    private readonly tokens: TokensService,
    private readonly sessions: BrowserSessionAuthenticator,
    private readonly memberships: MembershipsRepository,
    private readonly bus: InstanceBus,
    tokenCache: TokenCache,
    shutdown: ShutdownState,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(LIVE_TIMING) private readonly timing: LiveTiming,
  ) {
    tokenCache.onRevoked((tokenIds) => {
      for (const stream of [...this.streams]) if (tokenIds.has(stream.owner.tokenId)) stream.close();
    });
    shutdown.onDrain(() => this.endAll());
  }

  onModuleInit(): void {
    const every = (ms: number, task: () => void) => {
      const timer = setInterval(task, ms);
      timer.unref();
      this.timers.push(timer);
    };
    every(this.timing.keepaliveMs, () => this.keepalive());
    every(this.timing.revalidateMs, () => {
      this.revalidate().catch((err: unknown) => this.logger.warn({ err }, 'event streams not re-checked'));
    });
  }

  /** The instance stops: every stream ends (its client reconnects elsewhere) without holding the stop. */
  async beforeApplicationShutdown(): Promise<void> {
    for (const timer of this.timers) clearInterval(timer);
    this.timers = [];
    this.endAll();
    await this.records.deleteOfInstance(this.bus.instanceId).catch(() => undefined);
  }

  /** How many streams this instance serves, and what they hold back (tests and metrics). */
  get openStreams(): readonly EventStream[] {
    return [...this.streams];
  }

  /**
   * Opens a stream of the product's events (and, with `device`, that device's console output and log lines).
   * 404 for a product or device not in the organization, 429 when the caller has FLEETHUB_EVENT_STREAMS_PER_USER
   * streams open already, 503 while the instance stops.
   */
  async open(access: OrgAccess, productName: string, query: EventsQuery): Promise<EventStream> {
    if (this.stopping) throw unavailable();
    const product = await this.products.findInOrg(access, productName);
    let deviceId: string | null = null;
    if (query.device !== undefined) {
      const device = await this.devices.findInProduct(product.id, query.device);
      if (!device) throw DomainError.notFound();
      deviceId = device.id;
    }
    const actor = access.actor;
    const limit = this.config.eventStreamsPerUser;
    let id: string | null;
    try {
      id = await this.transactions.run((tx) =>
        this.records.insertWithinLimit(actor.userId, this.bus.instanceId, product.id, limit, tx),
      );
    } catch (err) {
      // This instance's row is gone for a moment (its lease renewal had stalled): it comes back within seconds.
      if (isForeignKeyViolation(err)) throw unavailable();
      throw err;
    }
    if (id === null) {
      throw new DomainError(
        ErrorCode.RATE_LIMITED,
        `too many event streams open (at most ${limit} per user); close one and try again`,
        {},
        { 'Retry-After': '5' },
      );
    }
    const stream = new EventStream(id, product.id, deviceId, {
      userId: actor.userId,
      orgId: access.orgId,
      tokenId: actor.tokenId,
      sessionId: actor.sessionId ?? null,
    });
    const recordId = id;
    const unwatch: (() => void)[] = [];
    let ended = false;
    stream.once('close', () => {
      ended = true;
      this.streams.delete(stream);
      this.live.unlisten(stream);
      for (const stop of unwatch.splice(0)) stop();
      this.records.delete(recordId).catch((err: unknown) => {
        this.logger.warn({ err }, 'event stream record not deleted');
      });
    });
    // Nest ignores a stream's error once its response has been closed for it (the reader goes away).
    stream.on('error', () => undefined);
    this.streams.add(stream);
    try {
      await this.live.listen(stream);
      // Each watch is undone with the stream, at once if it ended meanwhile.
      const keep = (stop: () => void): void => {
        if (ended) stop();
        else unwatch.push(stop);
      };
      keep(await this.counts.watch(product.id, stream));
      if (query.overview === true) keep(await this.overview.watch(product.id, stream));
    } catch (err) {
      stream.fail('the stream could not start');
      throw err;
    }
    if (this.stopping) stream.close();
    return stream;
  }

  private keepalive(): void {
    const stalledBefore = Date.now() - this.timing.stallMs;
    for (const stream of this.streams) {
      if (stream.pending && stream.lastReadAt < stalledBefore) {
        stream.fail('the client took nothing for too long');
        continue;
      }
      stream.keepalive();
    }
  }

  /**
   * The tokens, sessions and memberships of every open stream, checked again (three statements for all of them):
   * a stream whose caller can no longer authenticate or is no longer a member ends. Revocations end streams at
   * once (TokenCache); this catches expiry, idleness and removed members.
   */
  private async revalidate(): Promise<void> {
    const streams = [...this.streams];
    if (streams.length === 0) return;
    const tokenIds = new Set<string>();
    const sessionIds = new Set<string>();
    const pairs = new Map<string, [string, string]>();
    for (const { owner } of streams) {
      if (owner.sessionId !== null) sessionIds.add(owner.sessionId);
      else tokenIds.add(owner.tokenId);
      pairs.set(`${owner.userId}:${owner.orgId}`, [owner.userId, owner.orgId]);
    }
    const [liveTokens, liveSessions, memberships] = await Promise.all([
      this.tokens.liveTokenIds([...tokenIds]),
      this.sessions.liveSessionIds([...sessionIds]),
      this.memberships.findMembershipKeys(
        [...pairs.values()].map(([user]) => user),
        [...pairs.values()].map(([, org]) => org),
      ),
    ]);
    const tokens = new Set(liveTokens);
    const sessions = new Set(liveSessions);
    const members = new Set(memberships);
    for (const stream of streams) {
      const { owner } = stream;
      const authenticated =
        owner.sessionId !== null ? sessions.has(owner.sessionId) : tokens.has(owner.tokenId);
      if (!authenticated || !members.has(`${owner.userId}:${owner.orgId}`)) stream.close();
    }
  }

  private endAll(): void {
    this.stopping = true;
    // A reader that does not take the last bytes soon does not hold the stop.
    for (const stream of [...this.streams]) stream.close(SHUTDOWN_GRACE_MS);
  }
}

function unavailable(): DomainError {
  return new DomainError(
    ErrorCode.SERVICE_UNAVAILABLE,
    'this instance is not serving event streams now, try again',
    {},
    { 'Retry-After': '2' },
  );
}
