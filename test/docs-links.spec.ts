import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

/**
 * The repository is its users' only documentation: every relative link in README.md and docs/ must lead somewhere.
 * Checked: Markdown links and images (`[text](path#anchor)`), and file paths written as code (`docs/x.md`,
 * `src/.../y.ts`) that start at a top-level folder of the repository — the way the docs mostly name files.
 */
const root = join(__dirname, '..');
const TOP_LEVEL = ['docs', 'src', 'test', 'bench', 'scripts', 'migrations', 'docker', '.ci', 'bin'];
const CODE_PATH = new RegExp(
  `\`((?:${TOP_LEVEL.map((d) => d.replace('.', '\\.')).join('|')})/[^\`\\s*{}<>$]+)\``,
  'g',
);
/** Files the docs tell users to create themselves. */
const USER_CREATED = new Set(['docker/.env']);
const MARKDOWN_LINK = /!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g;

function documents(): string[] {
  const docs = readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => join('docs', name));
  const others = ['README.md', 'bench/README.md'].filter((path) => existsSync(join(root, path)));
  return [...others, ...docs];
}

/** Headings of a Markdown file as GitHub anchors them. */
function anchors(path: string): Set<string> {
  const text = readFileSync(path, 'utf8');
  const slugs = new Set<string>();
  for (const [, heading] of text.matchAll(/^#{1,6}\s+(.+)$/gm)) {
    slugs.add(
      heading
        .trim()
        .toLowerCase()
        .replace(/[^\p{L}\p{N}\s_-]/gu, '')
        .replace(/\s/g, '-'),
    );
  }
  return slugs;
}

/** Every link in one document that leads nowhere, as `target (reason)`. */
function deadLinks(document: string, text = readFileSync(join(root, document), 'utf8')): string[] {
  const dead: string[] = [];
  for (const [, target] of text.matchAll(MARKDOWN_LINK)) {
    if (/^[a-z][a-z+.-]*:/i.test(target)) continue; // http:, https:, mailto:
    const [path, anchor] = target.split('#', 2);
    const resolved = path === '' ? join(root, document) : join(root, dirname(document), decodeURI(path));
    if (!existsSync(resolved)) dead.push(`${target} (no such file)`);
    else if (anchor && resolved.endsWith('.md') && !anchors(resolved).has(anchor)) {
      dead.push(`${target} (no heading #${anchor} in ${relative(root, resolved)})`);
    }
  }
  for (const [, path] of text.matchAll(CODE_PATH)) {
    const file = path.replace(/[.,:;)]+$/, '');
    if (!USER_CREATED.has(file) && !existsSync(join(root, file))) dead.push(`${file} (no such file)`);
  }
  return dead;
}

describe('documentation links', () => {
  it.each(documents())('%s links only to what exists', (document) => {
    expect(deadLinks(document)).toEqual([]);
  });

  it('finds a dead link when there is one', () => {
    // The checker itself: guards against patterns that silently match nothing.
    const text =
      'See `docs/contract.md`, [the guide](missing-guide.md), [ok](decisions.md), [bad](decisions.md#nope).\n';
    expect(deadLinks('docs/probe.md', text)).toEqual([
      'missing-guide.md (no such file)',
      'decisions.md#nope (no heading #nope in docs/decisions.md)',
      'docs/contract.md (no such file)',
    ]);
  });
});
