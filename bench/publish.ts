import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { format, resolveConfig } from 'prettier';
import { renderMarkdown, type Report, withPublishedChecks } from './report';

// Apart from report.ts: Prettier cannot be loaded inside Jest (its CommonJS entry imports dynamically), and the
// report's renderers are unit-tested there (test/bench-report.spec.ts).

/**
 * Writes bench/benchmarks.json and docs/benchmarks.md from `report`, formatted as `npm run format:check` expects
 * (tables aligned by Prettier), the sections other scripts publish kept (withPublishedChecks).
 */
export async function publish(root: string, report: Report): Promise<void> {
  await writeFile(join(root, 'bench/benchmarks.json'), `${JSON.stringify(report, null, 2)}\n`);
  const mdPath = join(root, 'docs/benchmarks.md');
  const config = (await resolveConfig(mdPath)) ?? {};
  const current = existsSync(mdPath) ? await readFile(mdPath, 'utf8') : '';
  const markdown = withPublishedChecks(renderMarkdown(report), current);
  await writeFile(mdPath, await format(markdown, { ...config, filepath: mdPath }));
}
