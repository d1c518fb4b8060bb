import { Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { InstanceBus } from '../database/instance-bus/instance-bus';
import {
  type ConnectionChange,
  type DeviceLogData,
  isLine,
  type LiveEvent,
  type LiveUpdateStatus,
} from './live-event';
import { type InterestKind, LocalInterest, RemoteInterest } from './live-interest';
import {
  decodeBusMessage,
  IDS_PER_MESSAGE,
  type LiveBusMessage,
  LiveOutbox,
  MAX_MESSAGE_BYTES,
  wellFormedEvent,
} from './live-outbox';

/** The instance bus channel of the live events. */
export const LIVE_CHANNEL = 'fleethub_live';
/** Each instance announces what it listens to this often… */
export const INTEREST_REFRESH_MS = 10_000;
/** …and the others trust an announcement this long. */
export const INTEREST_TTL_MS = 35_000;
/** Console output travels in pieces of at most this many code points. */
const CONSOLE_PIECE = 1000;
/** An event's JSON stays within this (the rest of a bus message is its envelope). */
const MAX_EVENT_BYTES = MAX_MESSAGE_BYTES - 200;

/** A device as the producers of events know it. */
export interface LiveDevice {
  productId: string;
  identifier: string;
}

/** What receives events: a product's (`deviceId` null), or a product's and one device's lines. */
export interface LiveListener {
  readonly productId: string;
  readonly deviceId: string | null;
  deliver(event: LiveEvent): void;
  /** `lines` of the device's output were dropped before they reached this instance. */
  skipped(lines: number): void;
  /** Events for this listener were lost (the bus fell behind or this instance stopped hearing it). */
  lost(): void;
}

/**
 * The console's live events between the instances of a deployment: producers (the device gateway, telemetry, the
 * devices API) publish what happens to a device wherever its socket is; listeners (event streams, the counts
 * watcher) receive the events of their product wherever they are.
 *
 * Nothing is published for a product or device nobody listens to: each instance announces on the bus which
 * products and devices its listeners want (when that changes, and every INTEREST_REFRESH_MS), and a producer
 * checks, in memory, whether anyone wants an event before building it. Events for listeners here are delivered
 * at once; events for other instances' listeners go through the LiveOutbox (ordered, coalesced, bounded, many
 * per NOTIFY).
 */
@Injectable()
export class LiveEvents implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('LiveEvents');
  private readonly local = new LocalInterest();
  private readonly remote = new RemoteInterest();
  private readonly byProduct = new Map<string, Set<LiveListener>>();
  private readonly byDevice = new Map<string, Set<LiveListener>>();
  private readonly outbox: LiveOutbox;
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly bus: InstanceBus) {
    this.outbox = new LiveOutbox(
      bus.instanceId,
      (payload) => bus.publish(LIVE_CHANNEL, payload),
      (err) => this.logger.warn({ err }, 'live events not published'),
    );
    bus.subscribe(LIVE_CHANNEL, (payload) => this.onBus(payload));
    bus.onStateChange((listening) => {
      if (listening) {
        // Announcements may have been missed while not listening: everyone says again what they want.
        void this.outbox.control({ k: 'hello' });
        this.announce();
      } else {
        // Events of other instances cannot reach the listeners here until the bus is back.
        for (const listeners of [...this.byProduct.values()]) {
          for (const listener of [...listeners]) listener.lost();
        }
      }
    });
  }

  onModuleInit(): void {
    this.timer = setInterval(() => {
      this.remote.sweep(Date.now());
      this.announce();
    }, INTEREST_REFRESH_MS);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** Whether a listener anywhere wants the product's events. */
  wantsProduct(productId: string): boolean {
    return this.local.has('product', productId) || this.remote.has('product', productId, Date.now());
  }

  /** Whether a listener anywhere wants the device's console output and log lines. */
  wantsDevice(deviceId: string): boolean {
    return this.local.has('device', deviceId) || this.remote.has('device', deviceId, Date.now());
  }

  /** The products that listeners here and elsewhere want (for statements that report many devices at once). */
  wantedProducts(): string[] {
    return [...new Set([...this.local.ids('product'), ...this.remote.ids('product', Date.now())])];
  }

  /**
   * Starts delivering the listener's events. Resolves once the other instances have been told (their producers
   * publish for it from the moment they hear it).
   */
  listen(listener: LiveListener): Promise<void> {
    const added: Record<InterestKind, string[]> = { product: [], device: [] };
    if (this.local.add('product', listener.productId)) added.product.push(listener.productId);
    add(this.byProduct, listener.productId, listener);
    if (listener.deviceId !== null) {
      if (this.local.add('device', listener.deviceId)) added.device.push(listener.deviceId);
      add(this.byDevice, listener.deviceId, listener);
    }
    if (added.product.length === 0 && added.device.length === 0) return Promise.resolve();
    return this.outbox.control({ k: 'want', p: added.product, d: added.device });
  }

  unlisten(listener: LiveListener): void {
    if (!remove(this.byProduct, listener.productId, listener)) return;
    const removed: Record<InterestKind, string[]> = { product: [], device: [] };
    if (this.local.remove('product', listener.productId)) removed.product.push(listener.productId);
    if (listener.deviceId !== null) {
      remove(this.byDevice, listener.deviceId, listener);
      if (this.local.remove('device', listener.deviceId)) removed.device.push(listener.deviceId);
    }
    if (removed.product.length > 0 || removed.device.length > 0) {
      void this.outbox.control({ k: 'unwant', p: removed.product, d: removed.device });
    }
  }

  /** Delivers the event to the listeners that want it, here and on the other instances. */
  publish(event: LiveEvent): void {
    this.deliverHere(event);
    const wanted = isLine(event)
      ? this.remote.has('device', event.device, Date.now())
      : this.remote.has('product', event.product, Date.now());
    if (wanted) this.outbox.event(event);
  }

  /** Delivers the event to the listeners of this instance only (what each instance computes for itself). */
  deliverHere(event: LiveEvent): void {
    const listeners = isLine(event) ? this.byDevice.get(event.device) : this.byProduct.get(event.product);
    if (!listeners) return;
    for (const listener of listeners) {
      try {
        listener.deliver(event);
      } catch (err) {
        this.logger.error({ err }, 'live event listener failed');
      }
    }
  }

  // What producers call: each checks first, in memory, that someone listens.

  /** The device's socket joined (`connected`) or its disconnection was recorded. */
  deviceConnection(device: LiveDevice, status: ConnectionChange, at = new Date()): void {
    if (!this.wantsProduct(device.productId)) return;
    this.publish({
      name: 'device.connection',
      product: device.productId,
      data: { identifier: device.identifier, connection_status: status, at: at.toISOString() },
    });
  }

  deviceUpdate(
    device: LiveDevice,
    status: LiveUpdateStatus,
    progress: number | null,
    firmwareUuid: string | null,
  ): void {
    if (!this.wantsProduct(device.productId)) return;
    this.publish({
      name: 'device.update',
      product: device.productId,
      data: { identifier: device.identifier, status, progress, firmware_uuid: firmwareUuid },
    });
  }

  /** Output the device printed on its console, in pieces that each fit a bus message. */
  deviceConsole(device: LiveDevice & { deviceId: string }, data: string): void {
    if (data === '' || !this.wantsDevice(device.deviceId)) return;
    const points = Array.from(data);
    for (let i = 0; i < points.length; i += CONSOLE_PIECE) {
      for (const piece of fitting(points.slice(i, i + CONSOLE_PIECE), (text) => ({
        name: 'device.console',
        product: device.productId,
        device: device.deviceId,
        data: { identifier: device.identifier, data: text },
      }))) {
        this.publish(piece);
      }
    }
  }

  /** A log line the device sent (as stored); a message too long for a bus message is shortened, with `…`. */
  deviceLog(
    device: LiveDevice & { deviceId: string },
    line: { level: string; message: string; loggedAt: Date },
  ): void {
    if (!this.wantsDevice(device.deviceId)) return;
    const event = (message: string): LiveEvent => ({
      name: 'device.log',
      product: device.productId,
      device: device.deviceId,
      data: {
        identifier: device.identifier,
        level: line.level,
        message,
        timestamp: line.loggedAt.toISOString(),
      } satisfies DeviceLogData,
    });
    let message = line.message;
    let shortened = false;
    while (Buffer.byteLength(JSON.stringify(event(message))) > MAX_EVENT_BYTES) {
      const points = Array.from(message);
      message = points.slice(0, Math.floor(points.length * 0.8)).join('');
      shortened = true;
    }
    this.publish(event(shortened ? `${message}…` : message));
  }

  /** Tells the other instances everything the listeners here want (refreshing their trust in it). */
  private announce(): void {
    const products = this.local.ids('product');
    const devices = this.local.ids('device');
    for (let i = 0; i < Math.max(products.length, devices.length); i += IDS_PER_MESSAGE) {
      void this.outbox.control({
        k: 'want',
        p: products.slice(i, i + IDS_PER_MESSAGE),
        d: devices.slice(i, i + IDS_PER_MESSAGE),
      });
    }
  }

  private onBus(payload: string): void {
    const message: LiveBusMessage | null = decodeBusMessage(payload);
    // This instance's own messages: its listeners had their events at once.
    if (!message || message.from === this.bus.instanceId) return;
    switch (message.k) {
      case 'ev':
        for (const event of message.e) if (wellFormedEvent(event)) this.deliverHere(event);
        return;
      case 'want': {
        const until = Date.now() + INTEREST_TTL_MS;
        this.remote.want('product', message.from, message.p, until);
        this.remote.want('device', message.from, message.d, until);
        return;
      }
      case 'unwant':
        this.remote.unwant('product', message.from, message.p);
        this.remote.unwant('device', message.from, message.d);
        return;
      case 'hello':
        if (!this.local.empty) this.announce();
        return;
      case 'lost':
        for (const product of message.p) {
          for (const listener of [...(this.byProduct.get(product) ?? [])]) listener.lost();
        }
        return;
      case 'skip':
        for (const [device, lines] of message.d) {
          for (const listener of this.byDevice.get(device) ?? []) listener.skipped(lines);
        }
        return;
    }
  }
}

function add(map: Map<string, Set<LiveListener>>, id: string, listener: LiveListener): void {
  let set = map.get(id);
  if (!set) map.set(id, (set = new Set()));
  set.add(listener);
}

function remove(map: Map<string, Set<LiveListener>>, id: string, listener: LiveListener): boolean {
  const set = map.get(id);
  if (!set?.delete(listener)) return false;
  if (set.size === 0) map.delete(id);
  return true;
}

/** The code points as events, split further until each event's JSON fits MAX_EVENT_BYTES. */
function fitting(points: string[], build: (text: string) => LiveEvent): LiveEvent[] {
  const event = build(points.join(''));
  if (points.length <= 1 || Buffer.byteLength(JSON.stringify(event)) <= MAX_EVENT_BYTES) return [event];
  const half = Math.ceil(points.length / 2);
  return [...fitting(points.slice(0, half), build), ...fitting(points.slice(half), build)];
}
