import type { LiveEvent } from './live-event';
import { EventStream, StreamOverrun } from './event-stream';

const owner = { userId: '1', orgId: '2', tokenId: '3', sessionId: null };

function connection(identifier: string, status: 'connected' | 'disconnected'): LiveEvent {
  return {
    name: 'device.connection',
    product: '10',
    data: { identifier, connection_status: status, at: '2026-01-01T00:00:00.000Z' },
  };
}

function line(data: string): LiveEvent {
  return { name: 'device.console', product: '10', device: '7', data: { identifier: 'd', data } };
}

/** Everything the stream hands out from now on (as a reader that keeps up would take it). */
function drain(stream: EventStream): string {
  let text = '';
  let chunk: Buffer | null;
  while ((chunk = stream.read() as Buffer | null) !== null) text += chunk.toString('utf8');
  return text;
}

describe('EventStream', () => {
  it('opens with a comment, then hands out events as Server-Sent Events', () => {
    const stream = new EventStream('1', '10', null, owner);
    stream.deliver(connection('a', 'connected'));
    expect(drain(stream)).toBe(
      ': open\n\nevent: device.connection\ndata: {"identifier":"a","connection_status":"connected","at":"2026-01-01T00:00:00.000Z"}\n\n',
    );
  });

  it("ignores other products' events and lines of devices it was not opened for", () => {
    const stream = new EventStream('1', '10', null, owner);
    drain(stream);
    stream.deliver({ ...connection('a', 'connected'), product: '11' });
    stream.deliver(line('not for a product stream'));
    expect(drain(stream)).toBe('');
  });

  it('keeps only the latest status of each device while the reader does not take them', () => {
    const stream = new EventStream('1', '10', null, owner, {
      maxStatuses: 10,
      maxLineBytes: 1000,
      chunkBytes: 64,
    });
    stream.pause();
    for (let i = 0; i < 5; i++) {
      stream.deliver(connection('a', i % 2 === 0 ? 'connected' : 'disconnected'));
      stream.deliver(connection('b', i % 2 === 0 ? 'disconnected' : 'connected'));
    }
    const text = drain(stream);
    // What the buffer held before the pause, then one frame per device: the latest.
    expect(text.match(/"identifier":"a"/g)?.length).toBeLessThanOrEqual(2);
    expect(text.slice(text.lastIndexOf('"identifier":"a"'))).toContain('"connected"');
    expect(stream.queuedBytes).toBe(0);
  });

  it('drops the oldest lines beyond its bound and says how many before the lines that follow', () => {
    const stream = new EventStream('1', '10', '7', owner, {
      maxStatuses: 10,
      maxLineBytes: 1000,
      chunkBytes: 16,
    });
    drain(stream);
    // The Readable's own buffer takes one chunk; the rest waits in the stream's queue.
    for (let i = 0; i < 100; i++) stream.deliver(line(`line ${i} ${'x'.repeat(80)}`));
    expect(stream.queuedBytes).toBeLessThanOrEqual(1000);
    const text = drain(stream);
    const skipped = /event: stream\.skipped\ndata: \{"lines":(\d+)\}/.exec(text);
    expect(Number(skipped?.[1])).toBeGreaterThan(80);
    expect(text.indexOf('stream.skipped')).toBeLessThan(text.indexOf('line 99'));
    expect(text).toContain('line 99');
  });

  it('fails when more statuses wait than its bound: the client cannot keep up at all', () => {
    const stream = new EventStream('1', '10', null, owner, {
      maxStatuses: 3,
      maxLineBytes: 1000,
      chunkBytes: 16,
    });
    const errors: Error[] = [];
    stream.on('error', (err) => errors.push(err));
    drain(stream);
    for (let i = 0; i < 5; i++) stream.deliver(connection(`d${i}`, 'connected'));
    return new Promise<void>((resolve) => {
      stream.on('close', () => {
        expect(errors[0]).toBeInstanceOf(StreamOverrun);
        expect(stream.queuedBytes).toBe(0);
        resolve();
      });
    });
  });

  it('sends a keepalive comment only when nothing else waits', () => {
    const stream = new EventStream('1', '10', null, owner);
    drain(stream);
    stream.keepalive();
    expect(drain(stream)).toBe(': keepalive\n\n');
  });

  it('ends after what was handed out when closed, and takes no more events', async () => {
    const stream = new EventStream('1', '10', null, owner);
    let text = '';
    stream.on('data', (chunk) => (text += String(chunk)));
    const ended = new Promise((resolve) => stream.on('end', resolve));
    stream.close();
    stream.deliver(connection('a', 'connected'));
    await ended;
    expect(text).toBe(': open\n\n');
  });
});
