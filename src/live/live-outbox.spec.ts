import type { LiveEvent } from './live-event';
import { decodeBusMessage, LiveOutbox, MAX_MESSAGE_BYTES, MAX_QUEUED_LINES, packEvents } from './live-outbox';

function connection(identifier: string, status: 'connected' | 'disconnected', product = '10'): LiveEvent {
  return { name: 'device.connection', product, data: { identifier, connection_status: status, at: 'x' } };
}

function line(device: string, data: string): LiveEvent {
  return { name: 'device.console', product: '10', device, data: { identifier: device, data } };
}

/** An outbox whose sends wait until released, recording what was sent. */
function outbox() {
  const sent: string[] = [];
  const waiting: (() => void)[] = [];
  const failures: unknown[] = [];
  let fail = false;
  const box = new LiveOutbox(
    'me',
    (payload) =>
      new Promise<void>((resolve, reject) => {
        waiting.push(() => {
          if (fail) return reject(new Error('bus down'));
          sent.push(payload);
          resolve();
        });
      }),
    (err) => failures.push(err),
    0,
  );
  const release = async () => {
    for (let quiet = 0; quiet < 3;) {
      quiet = waiting.length === 0 ? quiet + 1 : 0;
      while (waiting.length > 0) waiting.shift()!();
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  };
  /** Lets the one send waiting now finish (and its consequences run). */
  const releaseOne = async () => {
    waiting.shift()?.();
    await new Promise((resolve) => setTimeout(resolve, 5));
  };
  return { box, sent, release, releaseOne, failures, failNext: (value: boolean) => (fail = value) };
}

describe('LiveOutbox', () => {
  it('sends one message at a time; what comes meanwhile goes together, statuses coalesced', async () => {
    const { box, sent, release } = outbox();
    box.event(connection('a', 'connected'));
    box.event(connection('a', 'disconnected'));
    box.event(connection('b', 'connected'));
    box.event(connection('a', 'connected'));
    await release();
    expect(sent.map((text) => decodeBusMessage(text))).toEqual([
      { k: 'ev', from: 'me', e: [connection('a', 'connected')] },
      { k: 'ev', from: 'me', e: [connection('b', 'connected'), connection('a', 'connected')] },
    ]);
  });

  it('drops the oldest lines beyond its bound and tells the receivers how many', async () => {
    const { box, sent, release } = outbox();
    box.event(line('7', 'first'));
    for (let i = 0; i < MAX_QUEUED_LINES + 5; i++) box.event(line('7', `l${i}`));
    await release();
    const messages = sent.map((text) => decodeBusMessage(text)!);
    expect(messages[1]).toEqual({ k: 'skip', from: 'me', d: [['7', 5]] });
    const lines = messages.flatMap((m) => (m.k === 'ev' ? m.e : []));
    expect(lines).toHaveLength(1 + MAX_QUEUED_LINES);
    expect(lines.at(-1)).toEqual(line('7', `l${MAX_QUEUED_LINES + 4}`));
  });

  it('says which products lost events when a send failed, then goes on', async () => {
    const { box, sent, release, releaseOne, failures, failNext } = outbox();
    box.event(connection('a', 'connected', '10'));
    failNext(true);
    await releaseOne();
    expect(failures).toHaveLength(1);
    failNext(false);
    const announced = box.control({ k: 'want', p: ['12'], d: [] });
    box.event(connection('b', 'connected', '12'));
    await release();
    await announced;
    // The loss notice and the interest announcement are independent (either may go first); the event follows both.
    const messages = sent.map((text) => decodeBusMessage(text)!);
    expect(
      messages
        .map((m) => m.k)
        .slice(0, 2)
        .sort(),
    ).toEqual(['lost', 'want']);
    expect(messages.map((m) => m.k)[2]).toBe('ev');
    expect(messages).toHaveLength(3);
    expect(messages.find((m) => m.k === 'lost')).toEqual({ k: 'lost', from: 'me', p: ['10'] });
  });

  it('packs events into messages under the NOTIFY limit', () => {
    const events = Array.from({ length: 200 }, (_, i) => line('7', `${i}`.repeat(100)));
    const payloads = packEvents('me', events);
    expect(payloads.length).toBeGreaterThan(1);
    for (const payload of payloads) expect(Buffer.byteLength(payload)).toBeLessThanOrEqual(MAX_MESSAGE_BYTES);
    expect(payloads.flatMap((p) => (decodeBusMessage(p) as { e: LiveEvent[] }).e)).toEqual(events);
  });

  it('refuses malformed messages', () => {
    for (const text of [
      '',
      'null',
      '{"k":"ev"}',
      '{"k":"want","from":"x","p":[1],"d":[]}',
      '{"k":"skip","from":"x","d":[["7",-1]]}',
    ])
      expect(decodeBusMessage(text)).toBeNull();
  });
});
