import { readFile } from 'node:fs/promises';
import { Command, Option } from 'nest-commander';
import { commonNameOf, issue, loadIssuer } from './cert-generator';
import { type DeviceCertificates, Simulator, type SimulatorOptions, UPDATE_DEFAULTS } from './simulator';
import { describeUpdateStats } from './simulated-update';
import { CliCommand, UsageError } from './cli-command';

export interface SimulateOptions {
  url?: string;
  key?: string;
  secret?: string;
  cert?: string;
  ca?: string;
  issuerCert?: string;
  issuerKey?: string;
  devices?: string;
  prefix?: string;
  duration?: string;
  applyMs?: string;
  failShare?: string;
  seed?: string;
  platform?: string;
  architecture?: string;
  firmwareVersion?: string;
  logsPerSecond?: string;
  healthEvery?: string;
  firmwareDir?: string;
}

const MAX_DEVICES = 100_000;

@Command({
  name: 'simulate',
  description:
    'Connect simulated devices to a fleethub server (NH1 product key, or client certificates over mTLS): join, ' +
    'heartbeat, a remote IEx console, support scripts, telemetry, iroh, and updates (download, size and SHA-256 ' +
    'check, apply (fwup deltas too, with --firmware-dir), rejoin on the new firmware; a share can fail)',
})
export class SimulateCommand extends CliCommand<SimulateOptions> {
  protected async execute(o: SimulateOptions): Promise<void> {
    const url = this.required(o.url, '--url');
    try {
      const parsed = new URL(url);
      if (!['http:', 'https:', 'ws:', 'wss:'].includes(parsed.protocol)) throw new Error();
    } catch {
      throw new UsageError('--url must be an http(s):// or ws(s):// URL');
    }
    const devices = Number(o.devices ?? '1');
    if (!/^\d+$/.test(o.devices ?? '1') || devices < 1 || devices > MAX_DEVICES) {
      throw new UsageError(`--devices must be a whole number from 1 to ${MAX_DEVICES}`);
    }
    const credentials = await this.credentials(o, url, devices);
    const duration = o.duration === undefined ? null : Number(o.duration);
    if (duration !== null && (!/^\d+$/.test(o.duration ?? '') || duration < 1)) {
      throw new UsageError('--duration must be a whole number of seconds');
    }
    const simulator = new Simulator({
      url,
      ...credentials.options,
      devices,
      prefix: o.prefix ?? 'sim-',
      log: (line) => process.stderr.write(`${line}\n`),
      ...updateOptions(o),
      ...telemetryOptions(o),
    });
    simulator.start();
    this.print(`simulating ${devices} device(s) against ${url}${credentials.describe}; Ctrl-C to stop`);
    await new Promise<void>((resolve) => {
      const status = setInterval(() => {
        this.print(`${simulator.connected}/${devices} connected`);
      }, 10_000);
      const finish = () => {
        clearInterval(status);
        process.off('SIGINT', finish);
        process.off('SIGTERM', finish);
        resolve();
      };
      process.once('SIGINT', finish);
      process.once('SIGTERM', finish);
      if (duration !== null) setTimeout(finish, duration * 1000);
    });
    const connected = simulator.connected;
    const stats = simulator.updateStats();
    await simulator.stop();
    this.print(`stopped: ${connected}/${devices} were connected, ${stats.completions} update(s) installed`);
    const archives = simulator.archiveStats();
    if (archives.verified + archives.refused > 0) {
      this.print(`archives: ${archives.verified} downloaded and verified, ${archives.refused} refused`);
    }
    this.print(describeUpdateStats(stats));
  }

  /**
   * NH1 (`--key`, `--secret`), one device's certificate (`--cert`, `--key`: the identifier is its subject's common
   * name), or certificates made for every device by an issuing CA (`--issuer-cert`, `--issuer-key`: JITP at scale).
   */
  private async credentials(
    o: SimulateOptions,
    url: string,
    devices: number,
  ): Promise<{ options: Partial<SimulatorOptions>; describe: string }> {
    const tlsFlags = o.cert !== undefined || o.issuerCert !== undefined || o.issuerKey !== undefined;
    if (!tlsFlags) {
      if (o.ca !== undefined) throw new UsageError('--ca goes with --cert or --issuer-cert (mTLS)');
      return {
        options: { key: this.required(o.key, '--key'), secret: this.required(o.secret, '--secret') },
        describe: '',
      };
    }
    if (!/^(https|wss):/.test(url)) {
      throw new UsageError('--url must be https:// or wss:// with certificates (the mTLS device socket)');
    }
    if (o.secret !== undefined) throw new UsageError('--secret is for shared secrets, not with certificates');
    const read = async (flag: string, path: string) => {
      try {
        return await readFile(path, 'utf8');
      } catch {
        throw new UsageError(`${flag}: cannot read ${path}`);
      }
    };
    const ca = o.ca === undefined ? undefined : await read('--ca', o.ca);
    if (o.cert !== undefined) {
      if (o.issuerCert !== undefined || o.issuerKey !== undefined) {
        throw new UsageError('--cert (one device) or --issuer-cert/--issuer-key (many), not both');
      }
      if (devices !== 1) throw new UsageError('--cert is one device: leave out --devices');
      const cert = await read('--cert', o.cert);
      const key = await read('--key', this.required(o.key, '--key'));
      let identifier: string | null;
      try {
        identifier = commonNameOf(cert);
      } catch {
        throw new UsageError(`--cert: ${o.cert} is not a PEM certificate`);
      }
      if (!identifier)
        throw new UsageError('--cert: the certificate has no subject common name (the identifier)');
      const certificates: DeviceCertificates = { ca, forDevice: async () => ({ cert, key }) };
      return {
        options: { certificates, identifiers: [identifier] },
        describe: ` over mTLS as ${identifier}`,
      };
    }
    if (o.key !== undefined) throw new UsageError("--key goes with --cert; the issuer's key is --issuer-key");
    const issuerCert = await read('--issuer-cert', this.required(o.issuerCert, '--issuer-cert'));
    const issuerKey = await read('--issuer-key', this.required(o.issuerKey, '--issuer-key'));
    let issuer: Awaited<ReturnType<typeof loadIssuer>>;
    try {
      issuer = await loadIssuer(issuerCert, issuerKey);
    } catch {
      throw new UsageError('--issuer-cert/--issuer-key: not a PEM certificate and its private key');
    }
    const certificates: DeviceCertificates = {
      ca,
      forDevice: (identifier) => issue(issuer, { cn: identifier }),
    };
    return { options: { certificates }, describe: ' over mTLS (certificates made by the issuer)' };
  }

  @Option({ flags: '--url <url>', description: 'Server base URL, e.g. http://127.0.0.1:4000' })
  parseUrl(value: string): string {
    return value;
  }
  @Option({
    flags: '--key <key>',
    description: "Product shared-secret key (nhp_...); with --cert, the certificate's private key file (PEM)",
  })
  parseKey(value: string): string {
    return value;
  }
  @Option({ flags: '--secret <secret>', description: 'The secret of that key' })
  parseSecret(value: string): string {
    return value;
  }
  @Option({
    flags: '--cert <file>',
    description:
      "mTLS: one device's certificate (PEM, intermediates after it); the identifier is its common name",
  })
  parseCert(value: string): string {
    return value;
  }
  @Option({
    flags: '--ca <file>',
    description: "mTLS: the server's CA to trust (the generated FLEETHUB_DATA_DIR/device-tls/ca.pem)",
  })
  parseCa(value: string): string {
    return value;
  }
  @Option({
    flags: '--issuer-cert <file>',
    description:
      'mTLS: a CA certificate (PEM) that signs a new certificate for each of --devices (with --issuer-key)',
  })
  parseIssuerCert(value: string): string {
    return value;
  }
  @Option({ flags: '--issuer-key <file>', description: "mTLS: that CA's private key (PEM)" })
  parseIssuerKey(value: string): string {
    return value;
  }
  @Option({ flags: '--devices <n>', description: 'How many devices (default 1)' })
  parseDevices(value: string): string {
    return value;
  }
  @Option({ flags: '--prefix <prefix>', description: 'Identifier prefix (default sim-)' })
  parsePrefix(value: string): string {
    return value;
  }
  @Option({
    flags: '--duration <seconds>',
    description: 'Stop after this many seconds (default: until Ctrl-C)',
  })
  parseDuration(value: string): string {
    return value;
  }
  @Option({
    flags: '--apply-ms <ms>',
    description: `Time an update takes after its download, fwup write and reboot (default ${UPDATE_DEFAULTS.applyMs}, ±${UPDATE_DEFAULTS.applyJitter * 100} % per device)`,
  })
  parseApplyMs(value: string): string {
    return value;
  }
  @Option({
    flags: '--fail-share <share>',
    description:
      'Share of updates, 0 to 1, that fail with an fwup error and keep the old firmware (default 0)',
  })
  parseFailShare(value: string): string {
    return value;
  }
  @Option({
    flags: '--seed <seed>',
    description: `Fixes which devices fail and their apply times (default ${UPDATE_DEFAULTS.seed})`,
  })
  parseSeed(value: string): string {
    return value;
  }
  @Option({ flags: '--platform <platform>', description: 'Platform of the starting firmware (default sim)' })
  parsePlatform(value: string): string {
    return value;
  }
  @Option({
    flags: '--architecture <architecture>',
    description: 'Architecture of the starting firmware (default sim)',
  })
  parseArchitecture(value: string): string {
    return value;
  }
  @Option({
    flags: '--firmware-version <version>',
    description: 'Version of the starting firmware (default 0.0.0)',
  })
  parseFirmwareVersion(value: string): string {
    return value;
  }
  @Option({
    flags: '--firmware-dir <dir>',
    description:
      "Keep each device's installed firmware file here and apply fwup deltas as fwup does (xdelta3 against it), " +
      "checking every resource against the signed meta.conf (default: only the download's size and checksums)",
  })
  parseFirmwareDir(value: string): string {
    return value;
  }
  @Option({
    flags: '--logs-per-second <n>',
    description:
      'Log lines each device sends a second through the logging extension, when its product enables it ' +
      '(PATCH .../products/{product}/extensions {"logging": true}; default 0; the server keeps at most 5 a second ' +
      'per device)',
  })
  parseLogsPerSecond(value: string): string {
    return value;
  }
  @Option({
    flags: '--health-every <seconds>',
    description:
      'A health report every this many seconds besides the ones the server asks for (default: only when asked)',
  })
  parseHealthEvery(value: string): string {
    return value;
  }
}

/** The telemetry flags, checked; unset ones are left to the simulator's defaults. */
export function telemetryOptions(o: SimulateOptions): Partial<SimulatorOptions> {
  const out: Partial<SimulatorOptions> = {};
  if (o.logsPerSecond !== undefined) {
    const rate = Number(o.logsPerSecond);
    if (!/^\d*\.?\d+$/.test(o.logsPerSecond) || !(rate >= 0 && rate <= 100))
      throw new UsageError('--logs-per-second must be a number from 0 to 100');
    out.logsPerSecond = rate;
  }
  if (o.healthEvery !== undefined) {
    if (!/^\d+$/.test(o.healthEvery) || Number(o.healthEvery) < 1 || Number(o.healthEvery) > 86_400)
      throw new UsageError('--health-every must be a whole number of seconds from 1 to 86400');
    out.healthEveryMs = Number(o.healthEvery) * 1000;
  }
  return out;
}

/** The update and starting-firmware flags, checked; unset ones are left to the simulator's defaults. */
export function updateOptions(o: SimulateOptions): Partial<SimulatorOptions> {
  const out: Partial<SimulatorOptions> = {};
  if (o.applyMs !== undefined) {
    if (!/^\d+$/.test(o.applyMs) || Number(o.applyMs) > 3_600_000)
      throw new UsageError('--apply-ms must be a whole number of milliseconds up to 3600000');
    out.applyMs = Number(o.applyMs);
  }
  if (o.failShare !== undefined) {
    const share = Number(o.failShare);
    if (!/^\d*\.?\d+$/.test(o.failShare) || !(share >= 0 && share <= 1))
      throw new UsageError('--fail-share must be a number from 0 to 1');
    out.failShare = share;
  }
  if (o.seed !== undefined) out.seed = o.seed;
  if (o.firmwareDir !== undefined) {
    if (o.firmwareDir.trim() === '') throw new UsageError('--firmware-dir must not be empty');
    out.firmwareDir = o.firmwareDir;
  }
  const firmware: NonNullable<SimulatorOptions['firmware']> = {};
  for (const [flag, value, field] of [
    ['--platform', o.platform, 'platform'],
    ['--architecture', o.architecture, 'architecture'],
    ['--firmware-version', o.firmwareVersion, 'version'],
  ] as const) {
    if (value === undefined) continue;
    if (value.trim() === '') throw new UsageError(`${flag} must not be empty`);
    firmware[field] = value;
  }
  if (Object.keys(firmware).length > 0) out.firmware = firmware;
  return out;
}
