import { Command, Option } from 'nest-commander';
import { Simulator } from './simulator';
import { CliCommand, UsageError } from './cli-command';

interface SimulateOptions {
  url?: string;
  key?: string;
  secret?: string;
  devices?: string;
  prefix?: string;
  duration?: string;
}

const MAX_DEVICES = 100_000;

@Command({
  name: 'simulate',
  description:
    'Connect simulated devices to a fleethub server (NH1 product key): join, heartbeat, console echo, updates, iroh',
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
    const key = this.required(o.key, '--key');
    const secret = this.required(o.secret, '--secret');
    const devices = Number(o.devices ?? '1');
    if (!/^\d+$/.test(o.devices ?? '1') || devices < 1 || devices > MAX_DEVICES) {
      throw new UsageError(`--devices must be a whole number from 1 to ${MAX_DEVICES}`);
    }
    const duration = o.duration === undefined ? null : Number(o.duration);
    if (duration !== null && (!/^\d+$/.test(o.duration ?? '') || duration < 1)) {
      throw new UsageError('--duration must be a whole number of seconds');
    }
    const simulator = new Simulator({
      url,
      key,
      secret,
      devices,
      prefix: o.prefix ?? 'sim-',
      log: (line) => process.stderr.write(`${line}\n`),
    });
    simulator.start();
    this.print(`simulating ${devices} device(s) against ${url}; Ctrl-C to stop`);
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
    const installed = simulator.devices.reduce((sum, d) => sum + d.installed, 0);
    await simulator.stop();
    this.print(`stopped: ${connected}/${devices} were connected, ${installed} update(s) installed`);
  }

  @Option({ flags: '--url <url>', description: 'Server base URL, e.g. http://127.0.0.1:4000' })
  parseUrl(value: string): string {
    return value;
  }
  @Option({ flags: '--key <key>', description: 'Product shared-secret key (nhp_...)' })
  parseKey(value: string): string {
    return value;
  }
  @Option({ flags: '--secret <secret>', description: 'The secret of that key' })
  parseSecret(value: string): string {
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
}
