import { EventEmitter } from 'node:events';
import type { Request, Response } from 'express';
import { RequestDeadlines, trackRequests } from './request-end';

/** A response that emits `close` when `finish()` is called, as Node's does after sending. */
function exchange(url = '/api/x') {
  const req = { url, method: 'GET' } as Request;
  const res = Object.assign(new EventEmitter(), { req, writableFinished: false }) as unknown as Response & {
    writableFinished: boolean;
  };
  const finish = () => {
    res.writableFinished = true;
    res.emit('close');
  };
  return { req, res, finish };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('trackRequests with RequestDeadlines', () => {
  it('expires a request still open after the timeout, oldest first, and only it', async () => {
    const expired: Request[] = [];
    const deadlines = new RequestDeadlines(
      60,
      () => true,
      (req) => expired.push(req),
    );
    const track = trackRequests([], deadlines);
    const slow = exchange('/api/slow');
    const quick = exchange('/api/quick');
    track(slow.req, slow.res);
    track(quick.req, quick.res);
    quick.finish();
    await sleep(150);
    expect(expired).toEqual([slow.req]);
    slow.finish();
  });

  it('never expires a request it does not apply to, nor one that ended', async () => {
    const expired: Request[] = [];
    const deadlines = new RequestDeadlines(
      30,
      (req) => req.url.startsWith('/api/'),
      (req) => expired.push(req),
    );
    const track = trackRequests([], deadlines);
    const page = exchange('/console');
    const answered = exchange();
    track(page.req, page.res);
    track(answered.req, answered.res);
    answered.finish();
    await sleep(100);
    expect(expired).toEqual([]);
  });

  it('tells the finished listeners of a sent response with its duration, not of one whose connection went first', () => {
    const seen: number[] = [];
    const track = trackRequests(
      [(_req, _res, ms) => seen.push(ms)],
      new RequestDeadlines(
        0,
        () => true,
        () => undefined,
      ),
    );
    const sent = exchange();
    const dropped = exchange();
    track(sent.req, sent.res);
    track(dropped.req, dropped.res);
    sent.finish();
    dropped.res.emit('close');
    expect(seen).toHaveLength(1);
    expect(seen[0]).toBeGreaterThanOrEqual(0);
  });
});
