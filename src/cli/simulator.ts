import { createHash } from 'node:crypto';
import { connect as netConnect, isIP, type NetConnectOpts } from 'node:net';
import { type ConnectionOptions, connect as tlsConnect } from 'node:tls';
import WebSocket from 'ws';
import { DerivedKeyCache, signNh1Headers } from '../device-auth/nh1';

/**
 * Simulated NervesHubLink devices for demos, tests and load tests: each one authenticates with NH1 headers,
 * joins `device`, `console` and (when asked) `extensions`, heartbeats, echoes console input, reports an iroh
 * endpoint id, and "installs" updates: it downloads the firmware, reports progress, and reconnects running it.
 *
 * Connection behaviour as NervesHubLink 2.x on Slipstream 1.x and Mint: a connection attempt that has not
 * connected (TCP, and TLS for wss) within 30 s fails (Mint's default connect timeout); the websocket upgrade's
 * answer is waited for without a limit; a heartbeat every 30 s, and a socket whose previous heartbeat is still
 * unanswered when the next is due is closed (Slipstream's heartbeat timeout); every failed attempt or closed
 * socket is retried after NervesHubLink's backoff (1 s doubling to 60 s, each plus up to 50 % jitter), reset by
 * a successful upgrade. `Retry-After` is ignored, as NervesHubLink does. A join answered with an error is sent
 * again 5 s later (NervesHubLink's `rejoin_after`).
 */

export interface SimulatorOptions {
  /** Server base URL (http(s):// or ws(s)://); a path other than `/` is used as the socket path. */
  url: string;
  /** Product key (`nhp_...`): devices are registered on first connect. */
  key: string;
  secret: string;
  devices: number;
  prefix?: string;
  /** Default 30 000 ms, as NervesHubLink. */
  heartbeatMs?: number;
  /** Where progress lines go (default: nowhere). */
  log?: (line: string) => void;
}

type Frame = [string | null, string | null, string, string, Record<string, unknown>];

const INITIAL_UUID = '00000000-0000-5000-8000-000000000000';
const MAX_BACKOFF_MS = 60_000;
/** Mint's default `transport_opts[:timeout]`: TCP connect (and TLS handshake) of one attempt. */
export const CONNECT_TIMEOUT_MS = 30_000;
/** NervesHubLink's `rejoin_after`: a join answered with an error is sent again after this. */
export const REJOIN_AFTER_MS = 5_000;
/** Simulated devices of one product key that connect in the same second share one PBKDF2 derivation. */
const signingKeys = new DerivedKeyCache(64);

/** The websocket URL of the device socket for a server base URL. */
export function deviceSocketUrl(base: string): string {
  const url = new URL(base);
  url.protocol = url.protocol === 'https:' || url.protocol === 'wss:' ? 'wss:' : 'ws:';
  if (url.pathname === '/' || url.pathname === '') url.pathname = '/device-socket/websocket';
  url.searchParams.set('vsn', '2.0.0');
  return url.toString();
}

/** The simulated device's iroh endpoint id: stable per identifier (64 hex characters). */
export function simulatedIrohKey(identifier: string): string {
  return createHash('sha256').update(`fleethub-simulator:${identifier}`).digest('hex');
}

export class SimulatedDevice {
  firmwareUuid = INITIAL_UUID;
  version = '0.0.0';
  /** Updates installed, connections made (for tests and the summary). */
  installed = 0;
  connects = 0;
  private ws: WebSocket | null = null;
  private ref = 0;
  private joinRefs = new Map<string, string>();
  private keys: string[] = [];
  private heartbeat: NodeJS.Timeout | null = null;
  /** The ref of the heartbeat sent and not answered yet. */
  private heartbeatRef: string | null = null;
  private retry: NodeJS.Timeout | null = null;
  private failures = 0;
  private updating = false;
  private stopped = false;
  private pendingJoins = new Map<string, string>();
  private joinPayloads = new Map<string, Record<string, unknown>>();
  /** Sees every frame the device receives, before the device acts on it (load tests time `update` frames). */
  onReceive: ((topic: string, event: string) => void) | null = null;

  constructor(
    readonly identifier: string,
    private readonly options: Required<Omit<SimulatorOptions, 'log'>> & { log: (line: string) => void },
  ) {}

  get connected(): boolean {
    return this.ws?.readyState === WebSocket.OPEN && this.joinRefs.has('device');
  }

  connect(): void {
    if (this.stopped) return;
    const headers = signNh1Headers({
      key: this.options.key,
      secret: this.options.secret,
      identifier: this.identifier,
      timeS: Math.floor(Date.now() / 1000),
      cache: signingKeys,
    });
    const url = deviceSocketUrl(this.options.url);
    const ws = new WebSocket(url, {
      headers: { ...headers },
      maxPayload: 16 * 1024 * 1024,
      createConnection: connectWithTimeout(url.startsWith('wss:')),
    });
    this.ws = ws;
    this.ref = 0;
    this.heartbeatRef = null;
    this.joinRefs.clear();
    this.pendingJoins.clear();
    ws.on('open', () => {
      this.failures = 0;
      this.connects++;
      this.join('device', {
        nerves_fw_uuid: this.firmwareUuid,
        nerves_fw_product: 'simulated',
        nerves_fw_version: this.version,
        nerves_fw_platform: 'sim',
        nerves_fw_architecture: 'sim',
        nerves_fw_author: 'fleethub simulator',
        nerves_fw_description: 'simulated device',
        nerves_fw_vcs_identifier: '',
        nerves_fw_misc: '',
        fwup_version: '1.10.1',
        device_api_version: '2.3.0',
        console_version: '2.0.0',
        fwup_public_keys: 'on_connect',
        currently_downloading_uuid: null,
        meta: { firmware_validated: true, firmware_auto_revert_detected: false },
      });
      this.join('console', { console_version: '2.0.0', device_api_version: '2.3.0' });
      this.heartbeat = setInterval(() => this.sendHeartbeat(ws), this.options.heartbeatMs);
    });
    ws.on('message', (data: Buffer) => {
      let frame: Frame;
      try {
        frame = JSON.parse(data.toString('utf8')) as Frame;
      } catch {
        return;
      }
      this.onReceive?.(frame[2], frame[3]);
      this.onFrame(frame).catch((err: unknown) => this.options.log(`${this.identifier}: ${String(err)}`));
    });
    ws.on('error', (err) => {
      this.options.log(`${this.identifier}: ${err.message}`);
    });
    ws.on('close', () => {
      if (this.heartbeat) clearInterval(this.heartbeat);
      this.heartbeat = null;
      if (this.ws === ws) this.ws = null;
      this.scheduleReconnect();
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retry) clearTimeout(this.retry);
    if (this.heartbeat) clearInterval(this.heartbeat);
    const ws = this.ws;
    if (!ws || ws.readyState === WebSocket.CLOSED) return;
    await new Promise<void>((resolve) => {
      ws.once('close', () => resolve());
      ws.close();
      setTimeout(() => {
        ws.terminate();
        resolve();
      }, 2000).unref();
    });
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.retry) return;
    // NervesHubLink's backoff: 1 s doubling to 60 s, plus up to 50 % jitter.
    const base = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** this.failures);
    this.failures++;
    this.retry = setTimeout(
      () => {
        this.retry = null;
        this.connect();
      },
      Math.round(base * (1 + Math.random() * 0.5)),
    );
  }

  /** As Slipstream: the previous heartbeat still unanswered closes the socket (then reconnect, with backoff). */
  private sendHeartbeat(ws: WebSocket): void {
    if (this.heartbeatRef !== null) {
      this.options.log(`${this.identifier}: heartbeat timeout`);
      ws.terminate();
      return;
    }
    if (ws.readyState !== WebSocket.OPEN) return;
    this.heartbeatRef = this.nextRef();
    ws.send(JSON.stringify([null, this.heartbeatRef, 'phoenix', 'heartbeat', {}]));
  }

  private nextRef(): string {
    return String(++this.ref);
  }

  private join(topic: string, payload: Record<string, unknown>): void {
    this.joinPayloads.set(topic, payload);
    const ref = this.nextRef();
    this.pendingJoins.set(ref, topic);
    this.ws?.send(JSON.stringify([ref, ref, topic, 'phx_join', payload]));
  }

  private send(topic: string | null, realTopic: string, event: string, payload: unknown): void {
    if (this.ws?.readyState !== WebSocket.OPEN) return;
    const joinRef = topic === null ? null : (this.joinRefs.get(topic) ?? null);
    this.ws.send(JSON.stringify([joinRef, this.nextRef(), realTopic, event, payload]));
  }

  private push(topic: string, event: string, payload: unknown): void {
    this.send(topic, topic, event, payload);
  }

  private async onFrame([, ref, topic, event, payload]: Frame): Promise<void> {
    if (event === 'phx_reply' && topic === 'phoenix') {
      if (ref !== null && ref === this.heartbeatRef) this.heartbeatRef = null;
      return;
    }
    if (event === 'phx_reply') {
      const joined = ref === null ? undefined : this.pendingJoins.get(ref);
      if (joined === undefined || ref === null) return;
      this.pendingJoins.delete(ref);
      if ((payload as { status?: unknown }).status !== 'ok') {
        const ws = this.ws;
        setTimeout(() => {
          const params = this.joinPayloads.get(joined);
          if (!this.stopped && this.ws === ws && ws?.readyState === WebSocket.OPEN && params) {
            this.join(joined, params);
          }
        }, REJOIN_AFTER_MS).unref();
        return;
      }
      this.joinRefs.set(joined, ref);
      if (joined === 'extensions') {
        const offered = (payload as { response?: unknown }).response;
        if (Array.isArray(offered) && offered.includes('network_identity')) {
          this.push('extensions', 'network_identity:attached', {});
        }
      }
      return;
    }
    switch (`${topic}/${event}`) {
      case 'device/fwup_public_keys':
        if (Array.isArray(payload.keys)) this.keys = payload.keys.filter((k) => typeof k === 'string');
        return;
      case 'device/extensions:get':
        this.join('extensions', { network_identity: '0.0.1' });
        return;
      case 'extensions/network_identity:request':
        this.push('extensions', 'network_identity:report', {
          identities: [
            { service: 'iroh', identifier: simulatedIrohKey(this.identifier), details: { simulated: true } },
          ],
        });
        return;
      case 'console/dn':
        if (typeof payload.data === 'string') this.push('console', 'up', { data: payload.data });
        return;
      case 'device/update':
        return this.update(payload);
      default:
        return;
    }
  }

  /** Downloads the firmware (the bytes are counted, not kept), reports progress, and "reboots" into it. */
  private async update(payload: Record<string, unknown>): Promise<void> {
    const meta = payload.firmware_meta as { uuid?: unknown; version?: unknown } | null;
    const url = payload.firmware_url;
    if (this.updating || typeof url !== 'string' || !meta || typeof meta.uuid !== 'string') return;
    if (this.keys.length === 0) {
      this.push('device', 'status_update', {
        status: 'failed',
        reason: 'Refusing unverified firmware : no public keys available',
      });
      return;
    }
    if (meta.uuid === this.firmwareUuid) {
      this.push('device', 'status_update', { status: 'ignored', reason: '' });
      return;
    }
    this.updating = true;
    try {
      this.push('device', 'status_update', { status: 'received' });
      this.push('device', 'status_update', { status: 'started', downloader_network_interface: 'eth0' });
      const res = await fetch(url, { headers: { 'User-Agent': 'NHL/simulator' } }).catch((err: unknown) => {
        this.push('device', 'status_update', {
          status: 'failed',
          reason: `Download failed : ${String(err)}`,
        });
        return null;
      });
      if (!res) return;
      const total = Number(res.headers.get('content-length'));
      if (!res.ok || !res.body || !Number.isFinite(total)) {
        await res.body?.cancel();
        this.push('device', 'status_update', {
          status: 'failed',
          reason: `Download failed : HTTP ${res.status}`,
        });
        return;
      }
      let received = 0;
      let reported = -1;
      for await (const chunk of res.body) {
        received += (chunk as Uint8Array).length;
        const percent = total === 0 ? 100 : Math.floor((received / total) * 100);
        if (percent >= reported + 10) {
          reported = percent;
          this.push('device', 'fwup_progress', { stage: 'updating', value: percent });
        }
      }
      if (received !== total) {
        this.push('device', 'status_update', { status: 'failed', reason: 'Download failed : short body' });
        return;
      }
      this.push('device', 'fwup_progress', { stage: 'updating', value: 100 });
      this.push('device', 'status_update', { status: 'completed' });
      this.firmwareUuid = meta.uuid;
      if (typeof meta.version === 'string') this.version = meta.version;
      this.installed++;
      this.options.log(`${this.identifier}: installed ${this.version} (${this.firmwareUuid}); rebooting`);
      // "Reboot": reconnect at once, announcing the new firmware.
      this.failures = 0;
      this.ws?.close();
    } finally {
      this.updating = false;
    }
  }
}

/**
 * `ws`'s own connect (net; tls with SNI for wss) that fails when the connection is not up within
 * CONNECT_TIMEOUT_MS. `path` is the request's path in these options, not a socket path.
 */
function connectWithTimeout(secure: boolean): typeof netConnect {
  return ((options: NetConnectOpts & { socketPath?: string; host?: string; servername?: string }) => {
    const socket = secure
      ? tlsConnect({
          ...(options as ConnectionOptions),
          path: undefined,
          servername: options.servername ?? (isIP(options.host ?? '') ? '' : options.host),
        })
      : netConnect({ ...options, path: options.socketPath } as NetConnectOpts);
    const timer = setTimeout(
      () => socket.destroy(new Error(`connect timeout after ${CONNECT_TIMEOUT_MS} ms`)),
      CONNECT_TIMEOUT_MS,
    );
    const done = () => clearTimeout(timer);
    socket.once(secure ? 'secureConnect' : 'connect', done);
    socket.once('close', done);
    return socket;
  }) as typeof netConnect;
}

/** N simulated devices named `<prefix>0001`... */
export class Simulator {
  readonly devices: SimulatedDevice[];

  constructor(options: SimulatorOptions) {
    const full = {
      prefix: 'sim-',
      heartbeatMs: 30_000,
      log: () => undefined,
      ...options,
    };
    const width = Math.max(4, String(options.devices).length);
    this.devices = Array.from(
      { length: options.devices },
      (_, i) => new SimulatedDevice(`${full.prefix}${String(i + 1).padStart(width, '0')}`, full),
    );
  }

  /** Connects every device, spread over a short ramp so that thousands do not arrive at once. */
  start(rampMs = Math.min(10_000, this.devices.length * 5)): void {
    this.devices.forEach((device, i) => {
      const delay = this.devices.length <= 1 ? 0 : Math.floor((rampMs * i) / this.devices.length);
      setTimeout(() => device.connect(), delay);
    });
  }

  get connected(): number {
    return this.devices.filter((d) => d.connected).length;
  }

  async stop(): Promise<void> {
    await Promise.all(this.devices.map((d) => d.stop()));
  }
}
