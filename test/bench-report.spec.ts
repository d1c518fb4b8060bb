import {
  cpuMsPerRequest,
  type Measurement,
  PUBLISHED_CHECKS_HEADING,
  renderFrameworkFloor,
  type ScenarioResult,
  withPublishedChecks,
} from '../bench/report';

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

describe('bench/report.ts: the framework floor (issue 31.3)', () => {
  const measurement = (requestsPerS: number, cpuPercent: number): Measurement => ({
    requests_per_s: requestsPerS,
    requests_total: requestsPerS * 3,
    latency_ms: { p50: 1, p90: 1, p99: 2, max: 5, mean: 1 },
    errors: 0,
    non_2xx: 0,
    server_cpu_percent: cpuPercent,
  });
  const scenario = (name: string, extra: Partial<ScenarioResult>): ScenarioResult => ({
    name,
    title: name,
    method: 'GET',
    path: `/${name}`,
    hot: true,
    check: null,
    load_average_before: 1,
    fleethub: measurement(9000, 99),
    ...extra,
  });

  it('gives CPU time per request from the CPU share and the throughput', () => {
    expect(cpuMsPerRequest(measurement(10_000, 100))).toBe(0.1);
    expect(cpuMsPerRequest(measurement(0, 100))).toBeNull();
  });

  it("publishes fleethub's ratio to the framework floor beside the ratio to the bare floor", () => {
    const lines: string[] = [];
    renderFrameworkFloor(
      [
        scenario('users_me', {
          floor: measurement(30_000, 75),
          ratio_to_floor: 0.3,
          framework_floor: measurement(12_000, 99),
          ratio_to_framework_floor: 0.75,
        }),
        scenario('devices_page1', { floor: measurement(1000, 50), ratio_to_floor: 0.9 }),
      ],
      lines,
    );
    const text = lines.join('\n');
    expect(text).toContain('### What fleethub adds to NestJS + Express');
    expect(text).toContain(
      '| `users_me` | 9000 | 12000 | 30000 | **0.75** | 0.3 | 0.11 ms / 0.083 ms / 0.025 ms |',
    );
    expect(text).not.toContain('devices_page1');
  });

  it('says nothing when no scenario was measured against the framework floor', () => {
    const lines: string[] = [];
    renderFrameworkFloor(
      [scenario('users_me', { floor: measurement(30_000, 75), ratio_to_floor: 0.3 })],
      lines,
    );
    expect(lines).toEqual([]);
  });
});
