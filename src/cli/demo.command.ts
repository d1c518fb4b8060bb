import { Command, Option } from 'nest-commander';
import { CliCommand, UsageError } from './cli-command';
import { DemoService } from './demo.service';

interface DemoCommandOptions {
  devices?: string;
}

export const DEFAULT_DEMO_DEVICES = 300;
const MAX_DEMO_DEVICES = 1_000_000;

/** `[#########...........]  120/300 devices` on stderr: redrawn in place on a terminal, a line per quarter otherwise. */
export function progressBar(
  stream: NodeJS.WriteStream = process.stderr,
): (done: number, total: number) => void {
  let lastQuarter = -1;
  return (done, total) => {
    const width = 30;
    const filled = total === 0 ? width : Math.round((done / total) * width);
    const line = `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total} devices`;
    if (stream.isTTY) {
      stream.write(`\r${line}${done === total ? '\n' : ''}`);
      return;
    }
    const quarter = total === 0 ? 4 : Math.floor((done / total) * 4);
    if (quarter !== lastQuarter) {
      lastQuarter = quarter;
      stream.write(`${line}\n`);
    }
  };
}

@Command({
  name: 'demo',
  description:
    'Create a demo organization: users, products, signed firmware, a fleet of devices, a deployment group rolling ' +
    'out, iroh endpoints; prints a token',
})
export class DemoCommand extends CliCommand<DemoCommandOptions> {
  constructor(private readonly demo: DemoService) {
    super();
  }

  protected async execute(o: DemoCommandOptions): Promise<void> {
    const devices = o.devices === undefined ? DEFAULT_DEMO_DEVICES : Number(o.devices);
    if (!/^\d+$/.test(o.devices ?? '0') || devices < 1 || devices > MAX_DEMO_DEVICES) {
      throw new UsageError(`--devices must be a whole number from 1 to ${MAX_DEMO_DEVICES}`);
    }
    const result = await this.demo.seed({ devices, progress: devices >= 1000 ? progressBar() : undefined });
    this.print(`created organization ${result.org} (admin: ${result.email}, password: "${result.password}")`);
    for (const product of result.products) {
      const versions = product.firmwares.map((f) => `${f.version} (${f.uuid})`).join(', ');
      this.print(`  product ${product.name}: firmware ${versions}`);
    }
    this.print(
      `  ${result.devices} devices (${result.connected} shown as connected), ${result.pendingUpdates} pending updates, ` +
        `${result.irohEndpoints} iroh endpoints`,
    );
    const group = result.deploymentGroup;
    this.print(
      `  deployment group ${group.name} (product ${group.product}, firmware ${group.version}): ${group.devices} devices, ` +
        `${group.updated} updated, ${group.updating} updating, ${group.blocked} in the penalty box`,
    );
    this.print(`Swagger UI: ${result.swaggerUrl} (Authorize with the token below)`);
    process.stderr.write(`token for ${result.email} (scope all); it is shown only once:\n`);
    this.print(result.token);
  }

  @Option({ flags: '--devices <n>', description: `How many devices (default ${DEFAULT_DEMO_DEVICES})` })
  parseDevices(value: string): string {
    return value;
  }
}
