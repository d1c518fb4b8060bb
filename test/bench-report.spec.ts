import { PUBLISHED_CHECKS_HEADING, withPublishedChecks } from '../bench/report';

describe('bench/report.ts: docs/benchmarks.md rewritten by the harness', () => {
  const rendered = '# Benchmarks\n\n## How to run\n\nnpm run bench\n';

  it('keeps the sections other scripts published, after its own, as they were', () => {
    const rolling =
      '<!-- check:rolling-restart-haproxy -->\n### Rolling restart\n\n| a | b |\n<!-- /check:rolling-restart-haproxy -->';
    const current = `# Benchmarks\n\nold numbers\n\n${rolling}\n\n## Trailing\n`;
    const next = withPublishedChecks(rendered, current);
    expect(next).toBe(`${rendered.trimEnd()}\n\n${PUBLISHED_CHECKS_HEADING}\n\n${rolling}\n`);
    expect(next).not.toContain('old numbers');
  });

  it('is the rendered report alone when nothing else was published (or a block is not closed)', () => {
    expect(withPublishedChecks(rendered, '# Benchmarks\n\nold numbers\n')).toBe(rendered);
    expect(withPublishedChecks(rendered, '<!-- check:x -->\nunclosed\n')).toBe(rendered);
  });
});
