/**
 * `bash bench/run.sh republish`: writes docs/benchmarks.md again from bench/benchmarks.json as it is, measuring
 * nothing (after a change to the report's renderers, bench/report.ts).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ROOT } from './paths';
import { publish } from './publish';
import type { Report } from './report';

async function main(): Promise<void> {
  const report = JSON.parse(await readFile(join(ROOT, 'bench/benchmarks.json'), 'utf8')) as Report;
  await publish(ROOT, report);
  process.stderr.write('docs/benchmarks.md written from bench/benchmarks.json\n');
}

main().catch((err: unknown) => {
  process.stderr.write(`${String(err)}\n`);
  process.exit(1);
});
