import { Webhook } from 'standardwebhooks';
import { retryDelayMs } from './webhook-dispatcher';
import { newSecret, signature, signedHeaders } from './webhook-signature';

describe('webhook signatures (Standard Webhooks)', () => {
  const body = JSON.stringify({ id: 'evt_1', type: 'device.created', data: { identifier: 'sim-0001' } });
  const now = () => Math.floor(Date.now() / 1000);

  it('verify with the standardwebhooks library', () => {
    const secret = newSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const headers = signedHeaders([secret], 'evt_1', now(), body);
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
  });

  it('match the specification example', () => {
    // The example of the Standard Webhooks specification (its secret, id, timestamp, payload and signature).
    const example = signature(
      'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      'msg_p5jXN8AQM9LWM0D4loKWxJek',
      1614265330,
      '{"test": 2432232314}',
    );
    expect(example).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  });

  it('fail with another secret, another body or another id', () => {
    const secret = newSecret();
    const headers = signedHeaders([secret], 'evt_1', now(), body);
    expect(() => new Webhook(newSecret()).verify(body, headers)).toThrow();
    expect(() => new Webhook(secret).verify(body.replace('0001', '0002'), headers)).toThrow();
    expect(() => new Webhook(secret).verify(body, { ...headers, 'webhook-id': 'evt_2' })).toThrow();
  });

  it('during a rotation, verify with either secret', () => {
    const [current, previous] = [newSecret(), newSecret()];
    const headers = signedHeaders([current, previous], 'evt_1', now(), body);
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect(new Webhook(current).verify(body, headers)).toEqual(JSON.parse(body));
    expect(new Webhook(previous).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(newSecret()).verify(body, headers)).toThrow();
  });
});

describe('retryDelayMs', () => {
  it('doubles from the base, with jitter in the upper half, up to the maximum', () => {
    expect(retryDelayMs(1, 1000, 60_000, () => 0)).toBe(500);
    expect(retryDelayMs(1, 1000, 60_000, () => 1)).toBe(1000);
    expect(retryDelayMs(4, 1000, 60_000, () => 1)).toBe(8000);
    expect(retryDelayMs(4, 1000, 60_000, () => 0)).toBe(4000);
    expect(retryDelayMs(30, 1000, 60_000, () => 1)).toBe(60_000);
    expect(retryDelayMs(10_000, 1000, 60_000, () => 0.5)).toBe(45_000);
  });
});
