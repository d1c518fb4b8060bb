/**
 * fwup delta updates: the bytes a delta saves and the time its build takes, per firmware pair (`bash bench/run.sh
 * deltas [--size-mib N]`). Builds the benchmark's firmware (bench/fw.ts: one stored pseudo-random `rootfs.img`,
 * here declared delta-capable) in several versions and the delta from the first to each, with the server's own
 * builder (src/firmware/deltas/build-delta.ts: unzip, `xdelta3 -A -S` per delta-capable resource, zip, hashes);
 * the time is that build's (the server adds copying both files from the storage). Prints a Markdown table.
 * (That a delta decodes into its target is what test/firmware-deltas.e2e-spec.ts checks.)
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildDelta, DeltaBuildError } from '../src/firmware/deltas/build-delta';
import { Xdelta3 } from '../src/firmware/deltas/xdelta3';
import { buildSignedFw, type ChunkChange } from './fw';

const MIB = 1024 * 1024;
const mib = (bytes: number) => `${(bytes / MIB).toFixed(2)} MiB`;

interface Pair {
  name: string;
  changed: (chunk: number) => ChunkChange;
  /** The target's resource is this many MiB longer. */
  grownMib: number;
}

/** The pairs measured, for a source of `sizeMib` MiB. */
const pairs = (sizeMib: number): Pair[] => [
  { name: 'identical rootfs (metadata only)', changed: () => false, grownMib: 0 },
  {
    name: '1 % of the 1 MiB chunks with 4 KiB rewritten',
    changed: (n) => n % 100 === 7 && 'rewritten',
    grownMib: 0,
  },
  {
    name: '10 % of the chunks with 4 KiB rewritten',
    changed: (n) => n % 10 === 3 && 'rewritten',
    grownMib: 0,
  },
  { name: '5 % of the chunks new', changed: (n) => n % 20 === 5 && 'new', grownMib: 0 },
  {
    name: '1 % rewritten, 8 MiB of new data appended',
    changed: (n) => (n % 100 === 7 ? 'rewritten' : n >= sizeMib ? 'new' : false),
    grownMib: 8,
  },
  { name: 'every chunk new (another root filesystem)', changed: () => 'new', grownMib: 0 },
];

async function main(): Promise<void> {
  const arg = process.argv.indexOf('--size-mib');
  const sizeMib = arg > 0 ? Number(process.argv[arg + 1]) : 200;
  if (!Number.isInteger(sizeMib) || sizeMib < 1) throw new Error('--size-mib must be a whole number of MiB');
  const xdelta3 = new Xdelta3();
  if (!(await xdelta3.available())) throw new Error('xdelta3 is not installed (apt-get install xdelta3)');
  const { privateKey } = generateKeyPairSync('ed25519');
  const dir = await mkdtemp(join(tmpdir(), 'fleethub-bench-deltas-'));
  const rows: string[] = [];
  try {
    const source = await buildSignedFw(join(dir, 'source.fw'), {
      product: 'bench',
      version: '1.0.0',
      size: sizeMib * MIB,
      privateKey,
      delta: true,
    });
    for (const [i, pair] of pairs(sizeMib).entries()) {
      const target = await buildSignedFw(join(dir, `target-${i}.fw`), {
        product: 'bench',
        version: `1.${i + 1}.0`,
        size: (sizeMib + pair.grownMib) * MIB,
        privateKey,
        changed: pair.changed,
        delta: true,
      });
      const work = join(dir, `work-${i}`);
      const started = process.hrtime.bigint();
      const built = await buildDelta(xdelta3, source.path, target.path, work).catch((err: unknown) => {
        if (err instanceof DeltaBuildError && err.permanent) return err;
        throw err;
      });
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      const time = `${(ms / 1000).toFixed(2)} s`;
      if (built instanceof DeltaBuildError) {
        rows.push(
          `| ${pair.name} | ${mib(target.size)} | none: ${built.message} | 0 (full file) | ${time} |`,
        );
      } else {
        const saved = target.size - built.size;
        rows.push(
          `| ${pair.name} | ${mib(target.size)} | ${(built.size / 1024).toFixed(1)} KiB | ` +
            `${mib(saved)} (${((100 * saved) / target.size).toFixed(3)} %) | ${time} |`,
        );
      }
      await rm(work, { recursive: true, force: true });
      await rm(target.path, { force: true });
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  process.stdout.write(
    `fwup deltas of the benchmark firmware (${sizeMib} MiB rootfs.img, stored), built as the server builds them\n\n` +
      '| pair (source 1.0.0 → target) | target file | delta file | bytes saved | build time |\n' +
      '|---|---|---|---|---|\n' +
      `${rows.join('\n')}\n`,
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
