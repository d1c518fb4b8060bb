import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { format, resolveConfig } from 'prettier';
import { withSection } from '../scripts/markdown-section';
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

/**
 * Replaces (or appends) one script's own section of docs/benchmarks.md, `<!-- check:NAME -->` … `<!-- /check:NAME -->`,
 * which `npm run bench` keeps when it rewrites the rest (withPublishedChecks); formatted as `npm run format:check`
 * expects.
 */
export async function publishSection(root: string, name: string, markdown: string): Promise<string> {
  const path = join(root, 'docs/benchmarks.md');
  const current = existsSync(path) ? await readFile(path, 'utf8') : '# Benchmarks\n';
  const check = `check:${name}`;
  const next = withSection(current, check, `<!-- ${check} -->\n\n${markdown}\n\n<!-- /${check} -->`);
  const options = (await resolveConfig(path)) ?? {};
  await writeFile(path, await format(next, { ...options, filepath: path }));
  return path;
}
