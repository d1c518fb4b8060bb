import {
  alarmsOf,
  alarmTransitions,
  healthStatus,
  Malformed,
  parseHealthReport,
  parseLocation,
  parseLogLine,
} from './report-payloads';

describe('report payloads', () => {
  const now = new Date('2026-11-27T12:00:00Z');
  const earliest = new Date('2026-11-24T00:00:00Z');

  it('reads a log line: level aliases, charlist messages, the time from `timestamp` or `meta.time`', () => {
    expect(
      parseLogLine({ level: 'WARN', message: 'x', timestamp: '2026-11-27T11:00:00Z' }, now, earliest),
    ).toEqual({
      level: 'warning',
      message: 'x',
      meta: {},
      loggedAt: new Date('2026-11-27T11:00:00Z'),
    });
    const micro = String(Date.parse('2026-11-26T10:00:00Z') * 1000);
    expect(
      parseLogLine({ level: 'info', message: [104, 'i'], meta: { time: micro } }, now, earliest),
    ).toMatchObject({
      message: 'hi',
      loggedAt: new Date('2026-11-26T10:00:00Z'),
    });
  });

  it('stamps a line with the arrival time when its own is outside the kept window', () => {
    for (const timestamp of ['2020-01-01T00:00:00Z', '2027-01-01T00:00:00Z', 'soon']) {
      expect(parseLogLine({ level: 'info', message: 'x', timestamp }, now, earliest)).toMatchObject({
        loggedAt: now,
      });
    }
  });

  it('truncates long messages, cleans unstorable text, refuses the malformed', () => {
    const long = parseLogLine({ level: 'info', message: 'é'.repeat(10_000) }, now, earliest);
    expect(long).not.toBeInstanceOf(Malformed);
    expect(Buffer.byteLength((long as { message: string }).message)).toBeLessThanOrEqual(8192);
    expect(parseLogLine({ level: 'info', message: 'a\u0000b\ud800' }, now, earliest)).toMatchObject({
      message: 'ab\ufffd',
    });
    for (const payload of [
      null,
      [],
      { level: 'loud', message: 'x' },
      { level: 'info' },
      { level: 'info', message: { a: 1 } },
      { level: 'info', message: 'x', meta: 'm' },
      { level: 'info', message: 'x', meta: { big: 'x'.repeat(5000) } },
      { level: 'info', message: 'x', meta: { 'a\u0000': 1 } },
    ]) {
      expect(parseLogLine(payload, now, earliest)).toBeInstanceOf(Malformed);
    }
  });

  it("computes NervesHub's health status from its thresholds", () => {
    expect(healthStatus({})).toEqual({ status: 'unknown', reasons: null });
    expect(healthStatus({ cpu_temp: 99 })).toEqual({ status: 'unknown', reasons: null });
    expect(healthStatus({ mem_used_percent: 10 })).toEqual({ status: 'healthy', reasons: null });
    expect(healthStatus({ mem_used_percent: 70, disk_used_percentage: 90 })).toEqual({
      status: 'unhealthy',
      reasons: {
        warning: { mem_used_percent: { value: 70, threshold: 70 } },
        unhealthy: { disk_used_percentage: { value: 90, threshold: 90 } },
      },
    });
  });

  it('reads a health report: numeric metrics only, alarms counted, the fleet metrics copied', () => {
    const parsed = parseHealthReport({
      value: {
        alarms: { a: 'x', b: 'y' },
        metrics: { cpu_temp: 50, load_1min: 'high', mem_used_percent: 1 },
      },
    });
    expect(parsed).toMatchObject({
      metrics: { cpu_temp: 50, mem_used_percent: 1 },
      alarmCount: 2,
      status: 'healthy',
      fleetMetrics: { cpu_temp: 50, load_1min: null, mem_used_percent: 1 },
    });
    for (const payload of [{}, { value: 1 }, { value: { metrics: [] } }, { value: { alarms: 'x' } }]) {
      expect(parseHealthReport(payload)).toBeInstanceOf(Malformed);
    }
  });

  it('reads a location or a location error', () => {
    expect(parseLocation({ source: 'geoip', latitude: 1.5, longitude: -2 })).toEqual({
      source: 'geoip',
      latitude: 1.5,
      longitude: -2,
    });
    expect(parseLocation({ error_code: 'x', error_description: 'y' })).toEqual({
      error_code: 'x',
      error_description: 'y',
    });
    for (const payload of [{ latitude: 91, longitude: 0 }, { latitude: '1', longitude: 2 }, {}, 'x']) {
      expect(parseLocation(payload)).toBeInstanceOf(Malformed);
    }
  });
});

describe('alarms of health reports', () => {
  it('reads an object of id → description, or a list of ids', () => {
    expect([...alarmsOf({ disk: 'full', net: null, odd: { level: 2 } })]).toEqual([
      ['disk', 'full'],
      ['net', null],
      ['odd', '{"level":2}'],
    ]);
    expect([...alarmsOf(['disk', { id: 1 }])]).toEqual([
      ['disk', null],
      ['{"id":1}', null],
    ]);
    expect(alarmsOf(null).size).toBe(0);
    expect(alarmsOf('x').size).toBe(0);
  });

  it('raised: new ids; cleared: ids gone (a new description is no transition)', () => {
    const before = alarmsOf({ disk: 'at 97%', net: null });
    const now = alarmsOf({ disk: 'at 99%', cpu: 'hot' });
    expect(alarmTransitions(before, now)).toEqual({ raised: [['cpu', 'hot']], cleared: [['net', null]] });
    expect(alarmTransitions(now, now)).toEqual({ raised: [], cleared: [] });
  });
});
