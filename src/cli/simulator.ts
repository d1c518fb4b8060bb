import { createHash } from 'node:crypto';
import { access, mkdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Xdelta3 } from '../firmware/deltas/xdelta3';
import { type InstallResult, installFirmwareFile } from './simulated-delta';
import { connect as netConnect, isIP, type NetConnectOpts } from 'node:net';
import { type ConnectionOptions, connect as tlsConnect } from 'node:tls';
import WebSocket from 'ws';
import { DerivedKeyCache, signNh1Headers } from '../device-auth/nh1';
import {
  ApplyingGauge,
  applyTime,
  type DeviceUpdateCounters,
  downloadFirmware,
  expectedFirmware,
  failsUpdate,
  updateStats,
  type UpdateStats,
} from './simulated-update';
import { runSimulatedScript, type ScriptAnswer, SimulatedConsole } from './simulated-script';
import { type ArchiveOutcome, archiveInfo, receiveArchive } from './simulated-archive';

/**
 * Simulated NervesHubLink devices for demos, tests and load tests: each one authenticates with NH1 headers,
 * joins `device`, `console` and (when asked) `extensions`, heartbeats, runs a remote IEx on its console (a prompt,
 * typed characters echoed, each line evaluated by the evaluator of simulated-script.ts), answers support
 * scripts (`scripts/run`, see simulated-script.ts), reports an iroh
 * endpoint id and a WireGuard key, health reports (when asked, or every `healthEveryMs`), a location, log lines
 * (`logsPerSecond`, when the product enables logging), and "installs" updates: it downloads the firmware, reports progress, and reconnects running it.
 *
 * Connection behaviour as NervesHubLink 2.x on Slipstream 1.x and Mint: a connection attempt that has not
 * connected (TCP, and TLS for wss) within 30 s fails (Mint's default connect timeout); the websocket upgrade's
 * answer is waited for without a limit; a heartbeat every 30 s, and a socket whose previous heartbeat is still
 * unanswered when the next is due is closed (Slipstream's heartbeat timeout); every failed attempt or closed
 * socket is retried after NervesHubLink's backoff (1 s doubling to 60 s, each plus up to 50 % jitter), reset by
 * a successful upgrade. `Retry-After` is ignored, as NervesHubLink does. A join answered with an error is sent
 * again 5 s later (NervesHubLink's `rejoin_after`).
 *
 * Updates as NervesHubLink's default (streaming) updater: on an `update` frame, `status_update` received and
 * started, the file streamed from `firmware_url` (never held in memory) with `fwup_progress` `updating` as it
 * arrives (at most every 500 ms, only when the integer grows), its size, part and whole-file SHA-256 checked
 * against the frame, then `applyMs` (jittered) for fwup's write and the reboot; then `fwup_progress` 100,
 * `status_update` completed, and the device disconnects and joins again at once with the frame's
 * `firmware_meta` (uuid, version, platform, architecture, product...). While it applies, a reconnect joins with
 * `currently_downloading_uuid` set, as NervesHubLink's does. A `failShare` of the devices (chosen by the seed,
 * the device and the firmware) report `failed` "FWUP error : ..." instead after the same wait and keep their
 * firmware.
 */

export interface SimulatorOptions {
  /** Server base URL (http(s):// or ws(s)://); a path other than `/` is used as the socket path. */
  url: string;
  /** Product key (`nhp_...`): devices are registered on first connect. Not with `certificates`. */
  key?: string;
  secret?: string;
  /**
   * mTLS instead of NH1: each device presents a client certificate (at `/socket/websocket` unless the URL has a
   * path), as NervesHubLink with a certificate does.
   */
  certificates?: DeviceCertificates;
  devices: number;
  /** The devices' identifiers (as many as `devices`); default `<prefix>0001`... */
  identifiers?: string[];
  prefix?: string;
  /** Default 30 000 ms, as NervesHubLink. */
  heartbeatMs?: number;
  /** Where progress lines go (default: nowhere). */
  log?: (line: string) => void;
  /** Time an update takes after its download (fwup's write and the reboot); default 3000 ms. */
  applyMs?: number;
  /** Spread of the apply time, a fraction of it either way (default 0.5: 1.5 s to 4.5 s for 3 s). */
  applyJitter?: number;
  /** Share of updates (0 to 1) that fail with an fwup error; which ones is fixed by `seed`. Default 0. */
  failShare?: number;
  /** Fixes the failing devices and the apply times (default "fleethub"). */
  seed?: string;
  /** The firmware the devices start on (default: uuid 00000000-..., version 0.0.0, platform and architecture sim). */
  firmware?: Partial<SimulatedFirmware>;
  /**
   * Where each device keeps the firmware file it installs (`<dir>/<identifier>.fw`): then it applies fwup deltas
   * as fwup does (xdelta3 against that file's resources) and checks every resource against the signed meta.conf.
   * Without it, a device checks the download's size and checksums only, whatever it is.
   */
  firmwareDir?: string;
  /** The xdelta3 program that applies deltas (default `xdelta3`). */
  xdelta3?: string;
  /** Log lines each device sends a second through `logging`, when its product enables it (default 0). */
  logsPerSecond?: number;
  /** A health report every this many ms besides the ones the server asks for (default 0: only when asked). */
  healthEveryMs?: number;
}

/** The telemetry behaviour's defaults. */
export const TELEMETRY_DEFAULTS = { logsPerSecond: 0, healthEveryMs: 0 } as const;
/** The extensions a simulated device has (NervesHubLink's, and the `logging` that NervesHub serves). */
const SIMULATED_EXTENSIONS = { health: '0.0.1', geo: '0.0.1', logging: '0.0.1', network_identity: '0.0.1' };
const LOG_MESSAGES: [string, string][] = [
  ['info', 'vintage_net: wlan0 connected'],
  ['debug', 'heart: beat'],
  ['warning', 'ntp: clock adjusted by 120 ms'],
  ['info', 'app: sensor read'],
  ['error', 'app: sensor timeout'],
];

/** The firmware a simulated device reports in its join (the `nerves_fw_*` keys). */
export interface SimulatedFirmware {
  uuid: string;
  version: string;
  platform: string;
  architecture: string;
  product: string;
  author: string;
  description: string;
  vcs_identifier: string;
  misc: string;
}

/** The firmware as the device's Nerves KV holds it (its join reports these keys; scripts read them). */
function firmwareKv(fw: SimulatedFirmware): Record<string, string> {
  return {
    nerves_fw_uuid: fw.uuid,
    nerves_fw_product: fw.product,
    nerves_fw_version: fw.version,
    nerves_fw_platform: fw.platform,
    nerves_fw_architecture: fw.architecture,
    nerves_fw_author: fw.author,
    nerves_fw_description: fw.description,
    nerves_fw_vcs_identifier: fw.vcs_identifier,
    nerves_fw_misc: fw.misc,
  };
}

/** Where simulated devices get their client certificates from (mTLS). */
export interface DeviceCertificates {
  /** The server's CA (PEM) the devices trust; undefined: Node's default CAs. */
  ca?: string;
  /** A device's certificate (PEM, its intermediates after it) and key (PEM). */
  forDevice(identifier: string): Promise<{ cert: string; key: string }>;
}

/** What one SimulatedDevice needs: the SimulatorOptions with their defaults applied. */
export type DeviceOptions = Required<
  Omit<
    SimulatorOptions,
    'log' | 'firmware' | 'key' | 'secret' | 'certificates' | 'identifiers' | 'firmwareDir' | 'xdelta3'
  >
> & {
  firmwareDir?: string;
  xdelta3?: string;
  key?: string;
  secret?: string;
  certificates?: DeviceCertificates;
  log: (line: string) => void;
  firmware?: Partial<SimulatedFirmware>;
  /** Counts the devices applying an update at once (shared by the devices of one Simulator or process). */
  gauge?: ApplyingGauge;
};

/** The update behaviour's defaults. */
export const UPDATE_DEFAULTS = { applyMs: 3000, applyJitter: 0.5, failShare: 0, seed: 'fleethub' } as const;

/** How one update ended on the device. */
export type UpdateOutcome =
  | { result: 'installed'; uuid: string }
  | { result: 'failed'; uuid: string; reason: string }
  | { result: 'ignored'; uuid: string };

type Frame = [string | null, string | null, string, string, Record<string, unknown>];

const INITIAL_FIRMWARE: SimulatedFirmware = {
  uuid: '00000000-0000-5000-8000-000000000000',
  version: '0.0.0',
  platform: 'sim',
  architecture: 'sim',
  product: 'simulated',
  author: 'fleethub simulator',
  description: 'simulated device',
  vcs_identifier: '',
  misc: '',
};
/** NervesHubLink sends a progress value at most this often (and only when it grows). */
const PROGRESS_INTERVAL_MS = 500;
const MAX_BACKOFF_MS = 60_000;
/** Mint's default `transport_opts[:timeout]`: TCP connect (and TLS handshake) of one attempt. */
export const CONNECT_TIMEOUT_MS = 30_000;
/** NervesHubLink's `rejoin_after`: a join answered with an error is sent again after this. */
export const REJOIN_AFTER_MS = 5_000;
/** Simulated devices of one product key that connect in the same second share one PBKDF2 derivation. */
const signingKeys = new DerivedKeyCache(64);

/**
 * The websocket URL of the device socket for a server base URL: `/device-socket/websocket` (shared secrets) or, for
 * devices with certificates, `/socket/websocket` (NervesHubLink's paths) unless the URL has a path.
 */
export function deviceSocketUrl(base: string, defaultPath = '/device-socket/websocket'): string {
  const url = new URL(base);
  url.protocol = url.protocol === 'https:' || url.protocol === 'wss:' ? 'wss:' : 'ws:';
  if (url.pathname === '/' || url.pathname === '') url.pathname = defaultPath;
  url.searchParams.set('vsn', '2.0.0');
  return url.toString();
}

/** The simulated device's WireGuard public key: stable per identifier (44 base64 characters). */
export function simulatedWireguardKey(identifier: string): string {
  return createHash('sha256').update(`fleethub-simulator-wg:${identifier}`).digest('base64');
}

/** A number in [min, max) that changes with the device and the minute. */
function wobble(identifier: string, salt: string, min: number, max: number): number {
  const minute = Math.floor(Date.now() / 60_000);
  const hash = createHash('sha256').update(`${identifier}:${salt}:${minute}`).digest();
  return Math.round((min + (hash.readUInt32BE(0) / 2 ** 32) * (max - min)) * 10) / 10;
}

/** A health report as NervesHubLink's default one shapes it. */
export function simulatedHealth(identifier: string, version: string): Record<string, unknown> {
  const memUsed = wobble(identifier, 'mem', 20, 90);
  return {
    timestamp: new Date().toISOString(),
    metadata: { firmware_version: version, simulated: 'true' },
    alarms: memUsed > 85 ? { 'Elixir.MemoryHigh': 'memory use above 85 %' } : {},
    metrics: {
      cpu_temp: wobble(identifier, 'temp', 35, 80),
      cpu_usage_percent: wobble(identifier, 'cpu', 1, 95),
      load_1min: wobble(identifier, 'load', 0, 4),
      mem_used_percent: memUsed,
      mem_size_mb: 1024,
      disk_used_percentage: wobble(identifier, 'disk', 10, 60),
    },
    checks: {},
    connectivity: {
      wlan0: { type: 'wifi', present: true, state: 'connected', connection_status: 'internet' },
    },
  };
}

/** A GeoIP-like location, stable per device. */
export function simulatedLocation(identifier: string): Record<string, unknown> {
  const hash = createHash('sha256').update(`fleethub-simulator-geo:${identifier}`).digest();
  return {
    source: 'geoip',
    latitude: Math.round(((hash.readUInt32BE(0) / 2 ** 32) * 140 - 70) * 1e4) / 1e4,
    longitude: Math.round(((hash.readUInt32BE(4) / 2 ** 32) * 360 - 180) * 1e4) / 1e4,
  };
}

/** The simulated device's iroh endpoint id: stable per identifier (64 hex characters). */
export function simulatedIrohKey(identifier: string): string {
  return createHash('sha256').update(`fleethub-simulator:${identifier}`).digest('hex');
}

export class SimulatedDevice implements DeviceUpdateCounters {
  /** The firmware it runs (reported in every join). */
  firmware: SimulatedFirmware;
  /** Updates installed, connections made, reboots asked for by the server, scripts run (tests, the summary). */
  installed = 0;
  connects = 0;
  reboots = 0;
  scriptRuns = 0;
  updateFrames = 0;
  downloads = 0;
  bytes = 0;
  failed = 0;
  /** Archives downloaded whose signature verified, and those refused (no keys, a bad file or signature). */
  archives = 0;
  archiveFailures = 0;
  /** Told how each `archive` message ended (tests). */
  onArchive: ((outcome: ArchiveOutcome) => void) | null = null;
  /** Updates that came as an fwup delta and were rebuilt and checked (with `firmwareDir`). */
  deltas = 0;
  /** Told how each update ended (after the device acted on it; for an install, before it reconnects). */
  onUpdateEnd: ((outcome: UpdateOutcome) => void) | null = null;
  /** The uuid of the firmware being downloaded or applied (sent as `currently_downloading_uuid`). */
  private applying: string | null = null;
  private rebooting = false;
  private abort = new AbortController();
  private ws: WebSocket | null = null;
  private ref = 0;
  private joinRefs = new Map<string, string>();
  private keys: string[] = [];
  /** `archive_public_keys` (NervesHubLink falls back to the fwup keys when it has none). */
  private archiveKeys: string[] = [];
  private heartbeat: NodeJS.Timeout | null = null;
  /** The ref of the heartbeat sent and not answered yet. */
  private heartbeatRef: string | null = null;
  private retry: NodeJS.Timeout | null = null;
  private failures = 0;
  private stopped = false;
  private pendingJoins = new Map<string, string>();
  private joinPayloads = new Map<string, Record<string, unknown>>();
  /** Timers of the attached extensions (log lines, health reports); cleared when the socket closes. */
  private telemetryTimers: NodeJS.Timeout[] = [];
  private logCount = 0;
  /** Log lines and reports sent (load tests count them). */
  readonly sent = { logLines: 0, healthReports: 0, locations: 0, identityReports: 0 };
  /** The client certificate, key and server CA of an mTLS device (loaded before its first connection). */
  private tls: { cert: string; key: string; ca?: string } | null = null;
  /** The remote IEx of the current connection (a new one each time the console channel joins). */
  private console = this.newConsole();
  /** Sees every frame the device receives, before the device acts on it (load tests time `update` frames). */
  onReceive: ((topic: string, event: string) => void) | null = null;

  constructor(
    readonly identifier: string,
    private readonly options: DeviceOptions,
  ) {
    this.firmware = { ...INITIAL_FIRMWARE, ...options.firmware };
  }

  get firmwareUuid(): string {
    return this.firmware.uuid;
  }

  get version(): string {
    return this.firmware.version;
  }

  get connected(): boolean {
    return this.ws?.readyState === WebSocket.OPEN && this.joinRefs.has('device');
  }

  connect(): void {
    if (this.stopped) return;
    const { certificates } = this.options;
    if (certificates && !this.tls) {
      certificates.forDevice(this.identifier).then(
        (tls) => {
          this.tls = { ...tls, ca: certificates.ca };
          this.open();
        },
        (err: unknown) => this.options.log(`${this.identifier}: no certificate: ${String(err)}`),
      );
      return;
    }
    this.open();
  }

  /** One connection attempt (the certificate, if any, loaded). */
  private open(): void {
    if (this.stopped) return;
    const headers = this.tls
      ? {}
      : signNh1Headers({
          key: this.options.key ?? '',
          secret: this.options.secret ?? '',
          identifier: this.identifier,
          timeS: Math.floor(Date.now() / 1000),
          cache: signingKeys,
        });
    const url = deviceSocketUrl(this.options.url, this.tls ? '/socket/websocket' : undefined);
    const ws = new WebSocket(url, {
      headers: { ...headers },
      maxPayload: 16 * 1024 * 1024,
      createConnection: connectWithTimeout(url.startsWith('wss:')),
      ...(this.tls ?? {}),
    });
    this.ws = ws;
    this.ref = 0;
    this.heartbeatRef = null;
    this.joinRefs.clear();
    this.pendingJoins.clear();
    ws.on('open', () => {
      this.failures = 0;
      this.rebooting = false;
      this.connects++;
      this.join('device', {
        ...firmwareKv(this.firmware),
        fwup_version: '1.10.1',
        device_api_version: '2.3.0',
        console_version: '2.0.0',
        fwup_public_keys: 'on_connect',
        archive_public_keys: 'on_connect',
        currently_downloading_uuid: this.applying,
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
      this.stopTelemetry();
      if (this.heartbeat) clearInterval(this.heartbeat);
      this.heartbeat = null;
      if (this.ws === ws) this.ws = null;
      this.scheduleReconnect();
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort(new Error('stopped'));
    if (this.retry) clearTimeout(this.retry);
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.stopTelemetry();
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
    if (this.rebooting) {
      // Up again after the "reboot" (its time was part of the apply time): connect at once.
      this.rebooting = false;
      this.failures = 0;
      this.retry = setTimeout(() => {
        this.retry = null;
        this.connect();
      }, 0);
      return;
    }
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

  /** As NervesHubLink: each extension the server attaches starts and says so; logging starts sending lines. */
  private attachExtensions(offered: string[]): void {
    for (const key of offered) this.push('extensions', `${key}:attached`, {});
    this.stopTelemetry();
    const { logsPerSecond, healthEveryMs } = this.options;
    if (offered.includes('logging') && logsPerSecond > 0) {
      const every = 1000 / logsPerSecond;
      // A random phase, so that thousands of devices do not send in step.
      const start = setTimeout(() => {
        this.sendLogLine();
        this.telemetryTimers.push(setInterval(() => this.sendLogLine(), every));
      }, Math.random() * every);
      this.telemetryTimers.push(start);
    }
    if (offered.includes('health') && healthEveryMs > 0) {
      this.telemetryTimers.push(setInterval(() => this.sendHealthReport(), healthEveryMs));
    }
  }

  private stopTelemetry(): void {
    for (const timer of this.telemetryTimers) clearInterval(timer);
    this.telemetryTimers = [];
  }

  private sendLogLine(): void {
    const [level, message] = LOG_MESSAGES[this.logCount++ % LOG_MESSAGES.length];
    this.sent.logLines++;
    this.push('extensions', 'logging:send', {
      level,
      message: `${message} (#${this.logCount})`,
      meta: { time: String(Date.now() * 1000), simulated: 'true' },
    });
  }

  private sendHealthReport(): void {
    this.sent.healthReports++;
    this.push('extensions', 'health:report', {
      value: simulatedHealth(this.identifier, this.firmware.version),
    });
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
      if (joined === 'console') {
        this.console = this.newConsole();
        this.push('console', 'up', { data: this.console.prompt });
      }
      if (joined === 'extensions') {
        const offered = (payload as { response?: unknown }).response;
        if (Array.isArray(offered)) this.attachExtensions(offered.filter((k) => typeof k === 'string'));
      }
      return;
    }
    switch (`${topic}/${event}`) {
      case 'device/fwup_public_keys':
        if (Array.isArray(payload.keys)) this.keys = payload.keys.filter((k) => typeof k === 'string');
        return;
      case 'device/archive_public_keys':
        if (Array.isArray(payload.keys)) this.archiveKeys = payload.keys.filter((k) => typeof k === 'string');
        return;
      case 'device/archive':
        return this.archive(payload);
      case 'device/extensions:get':
        this.join('extensions', SIMULATED_EXTENSIONS);
        return;
      case 'extensions/network_identity:request':
        this.sent.identityReports++;
        this.push('extensions', 'network_identity:report', {
          identities: [
            { service: 'iroh', identifier: simulatedIrohKey(this.identifier), details: { simulated: true } },
            {
              service: 'wireguard',
              identifier: simulatedWireguardKey(this.identifier),
              instance: 'wg0',
              details: { simulated: true },
            },
          ],
        });
        return;
      case 'extensions/health:check':
        this.sendHealthReport();
        return;
      case 'extensions/geo:location:request':
        this.sent.locations++;
        this.push('extensions', 'geo:location:update', simulatedLocation(this.identifier));
        return;
      case 'console/dn':
        if (typeof payload.data === 'string') {
          const output = this.console.input(payload.data);
          if (output !== '') this.push('console', 'up', { data: output });
        }
        return;
      case 'device/scripts/run':
        // As NervesHubLink's support scripts manager: the answer is a push of the same event with the same ref.
        if (typeof payload.text === 'string' && typeof payload.ref === 'string') {
          this.scriptRuns++;
          this.push('device', 'scripts/run', { ref: payload.ref, ...this.runScript(payload.text) });
        }
        return;
      case 'device/update':
        return this.update(payload);
      case 'device/reboot':
        // As NervesHubLink: `rebooting` first, then the reboot (the socket closes, the device joins again).
        this.push('device', 'rebooting', {});
        this.reboots++;
        this.rebooting = true;
        this.ws?.close();
        return;
      default:
        return;
    }
  }

  /** An `archive` message: downloaded and its signature checked, as NervesHubLink's ArchiveManager does. */
  private async archive(payload: Record<string, unknown>): Promise<void> {
    const info = archiveInfo(payload);
    if (!info) return;
    const keys = this.archiveKeys.length > 0 ? this.archiveKeys : this.keys;
    const outcome = await receiveArchive(info, keys, { signal: this.abort.signal }).catch(
      (err: unknown): ArchiveOutcome => ({ ok: false, uuid: info.uuid, reason: String(err) }),
    );
    if (this.stopped) return;
    if (outcome.ok) {
      this.archives++;
      this.options.log(
        `${this.identifier}: archive ${outcome.version} (${outcome.uuid}) downloaded, ${outcome.bytes} bytes, signature verified`,
      );
    } else {
      this.archiveFailures++;
      this.options.log(`${this.identifier}: archive ${info.uuid} refused: ${outcome.reason}`);
    }
    this.onArchive?.(outcome);
  }

  private newConsole(): SimulatedConsole {
    return new SimulatedConsole(() => ({ identifier: this.identifier, kv: firmwareKv(this.firmware) }));
  }

  private runScript(text: string): ScriptAnswer {
    return runSimulatedScript({ identifier: this.identifier, kv: firmwareKv(this.firmware) }, text);
  }

  /**
   * An `update` frame, as NervesHubLink's UpdateManager and streaming updater handle it (device-protocol.md 7.2
   * to 7.4): ignored while an update runs; refused without fwup public keys; `ignored` when already on that
   * firmware; else downloaded, checked, applied (or failed, for the fail share) and "rebooted" into.
   */
  private async update(payload: Record<string, unknown>): Promise<void> {
    this.updateFrames++;
    const meta = payload.firmware_meta;
    const url = payload.firmware_url;
    if (this.applying !== null || typeof url !== 'string' || !isRecord(meta) || typeof meta.uuid !== 'string')
      return;
    const uuid = meta.uuid;
    if (this.keys.length === 0) {
      this.push('device', 'status_update', {
        status: 'failed',
        reason: 'Refusing unverified firmware : no public keys available',
      });
      this.failed++;
      this.onUpdateEnd?.({ result: 'failed', uuid, reason: 'no public keys' });
      return;
    }
    this.push('device', 'status_update', { status: 'received' });
    if (uuid === this.firmware.uuid) {
      this.push('device', 'status_update', { status: 'ignored', reason: '' });
      this.onUpdateEnd?.({ result: 'ignored', uuid });
      return;
    }
    this.applying = uuid;
    this.options.gauge?.begin();
    const outcome = await this.apply(url, uuid, meta, payload).finally(() => {
      this.applying = null;
      this.options.gauge?.end();
    });
    // Stopped mid-update (the end of a run): neither reported nor counted.
    if (this.stopped) return;
    if (outcome.result === 'failed') {
      this.failed++;
      this.push('device', 'status_update', { status: 'failed', reason: outcome.reason });
    }
    this.onUpdateEnd?.(outcome);
    if (outcome.result === 'installed') {
      // "Reboot": the socket closes and the device joins again at once, announcing the new firmware.
      this.rebooting = true;
      if (this.ws) this.ws.close();
      else this.scheduleReconnect();
    }
  }

  private firmwareFiles(dir: string): FirmwareFiles {
    const base = join(dir, this.identifier.replace(/[^A-Za-z0-9_.-]/g, '_'));
    return {
      dir,
      running: `${base}.fw`,
      download: `${base}.download`,
      next: `${base}.next.fw`,
      work: `${base}.work`,
    };
  }

  /**
   * The downloaded file "written" as fwup would: a delta rebuilt against the running firmware's file, every
   * resource checked against the signed meta.conf; the result becomes the running firmware's file.
   */
  private async installFile(files: FirmwareFiles): Promise<InstallResult> {
    const running = await access(files.running).then(
      () => files.running,
      () => null,
    );
    try {
      const result = await installFirmwareFile({
        downloaded: files.download,
        running,
        keys: this.keys,
        xdelta3: new Xdelta3(this.options.xdelta3),
        workDir: files.work,
        out: files.next,
      });
      if (result.ok) {
        await rename(files.next, files.running);
        if (result.delta) {
          this.deltas++;
          this.options.log(`${this.identifier}: applied an fwup delta, every resource checked`);
        }
      }
      return result;
    } finally {
      await rm(files.work, { recursive: true, force: true });
      await rm(files.download, { force: true });
      await rm(files.next, { force: true });
    }
  }

  private async apply(
    url: string,
    uuid: string,
    meta: Record<string, unknown>,
    payload: Record<string, unknown>,
  ): Promise<UpdateOutcome> {
    const { seed } = this.options;
    this.push('device', 'status_update', { status: 'started', downloader_network_interface: 'eth0' });
    this.downloads++;
    let counted = 0;
    let lastPercent = -1;
    let lastAt = 0;
    const files = this.options.firmwareDir ? this.firmwareFiles(this.options.firmwareDir) : null;
    if (files) await mkdir(files.dir, { recursive: true });
    const download = await downloadFirmware(url, expectedFirmware(payload), {
      saveTo: files?.download,
      signal: this.abort.signal,
      onBytes: (received, total) => {
        this.bytes += received - counted;
        counted = received;
        // The streaming updater's fwup progress: an integer that grows, at most every 500 ms; 100 comes last.
        const percent = total === 0 ? 99 : Math.min(99, Math.floor((received / total) * 100));
        const now = Date.now();
        if (percent > lastPercent && (lastPercent < 0 || now - lastAt >= PROGRESS_INTERVAL_MS)) {
          lastPercent = percent;
          lastAt = now;
          this.push('device', 'fwup_progress', { stage: 'updating', value: percent });
        }
      },
    });
    this.bytes += download.bytes - counted;
    if (!download.ok) return { result: 'failed', uuid, reason: download.reason };
    const wait = applyTime(seed, this.identifier, uuid, this.options.applyMs, this.options.applyJitter);
    const slept = await abortableSleep(wait, this.abort.signal);
    if (!slept) return { result: 'failed', uuid, reason: 'Unexpected error : stopped' };
    if (failsUpdate(seed, this.identifier, uuid, this.options.failShare)) {
      return { result: 'failed', uuid, reason: 'FWUP error : simulated failure (--fail-share)' };
    }
    if (files) {
      const installed = await this.installFile(files);
      if (!installed.ok) return { result: 'failed', uuid, reason: installed.reason };
    }
    this.push('device', 'fwup_progress', { stage: 'updating', value: 100 });
    this.push('device', 'status_update', { status: 'completed' });
    const text = (key: string, fallback: string) => (typeof meta[key] === 'string' ? meta[key] : fallback);
    const fw = this.firmware;
    this.firmware = {
      uuid,
      version: text('version', fw.version),
      platform: text('platform', fw.platform),
      architecture: text('architecture', fw.architecture),
      product: text('product', fw.product),
      author: text('author', fw.author),
      description: text('description', fw.description),
      vcs_identifier: text('vcs_identifier', fw.vcs_identifier),
      misc: text('misc', fw.misc),
    };
    this.installed++;
    this.options.log(`${this.identifier}: installed ${this.firmware.version} (${uuid}); rebooting`);
    return { result: 'installed', uuid };
  }
}

interface FirmwareFiles {
  dir: string;
  /** The firmware it runs (absent until it installed one). */
  running: string;
  download: string;
  next: string;
  work: string;
}

function withoutUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Resolves true after `ms`, or false as soon as `signal` aborts. */
function abortableSleep(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', done);
      resolve(true);
    }, ms);
    signal.addEventListener('abort', done, { once: true });
  });
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
  /** Devices applying an update now, and the most at once. */
  readonly gauge = new ApplyingGauge();

  constructor(options: SimulatorOptions) {
    const { identifiers, ...rest } = options;
    const full: DeviceOptions = {
      prefix: 'sim-',
      heartbeatMs: 30_000,
      log: () => undefined,
      ...UPDATE_DEFAULTS,
      ...TELEMETRY_DEFAULTS,
      ...withoutUndefined(rest),
      gauge: this.gauge,
    };
    const width = Math.max(4, String(options.devices).length);
    this.devices = Array.from(
      { length: options.devices },
      (_, i) =>
        new SimulatedDevice(identifiers?.[i] ?? `${full.prefix}${String(i + 1).padStart(width, '0')}`, full),
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

  /** Archives all devices downloaded and verified, and refused. */
  archiveStats(): { verified: number; refused: number } {
    let verified = 0;
    let refused = 0;
    for (const device of this.devices) {
      verified += device.archives;
      refused += device.archiveFailures;
    }
    return { verified, refused };
  }

  /** Update frames, downloads, bytes, completions, failures and concurrency of all devices. */
  updateStats(): UpdateStats {
    return updateStats(this.devices, this.gauge);
  }

  async stop(): Promise<void> {
    await Promise.all(this.devices.map((d) => d.stop()));
  }
}
