import fs from 'node:fs';
import { createTestApp, type TestApp } from './support/test-app';

/**
 * Runs representative flows with logging at `debug` and asserts that no token, password or shared secret
 * created in them reaches the logs. pino writes with fs.write/fs.writeSync on fd 1 (sonic-boom); Nest's own
 * logger with process.stdout/stderr: all of them are captured.
 */
describe('secrets hygiene: nothing secret in the logs', () => {
  let t: TestApp;
  const captured: string[] = [];
  const capture = (chunk: unknown) => {
    if (typeof chunk === 'string') captured.push(chunk);
    else if (Buffer.isBuffer(chunk) || chunk instanceof Uint8Array)
      captured.push(Buffer.from(chunk).toString('utf8'));
  };
  const spies: jest.SpyInstance[] = [];

  beforeAll(async () => {
    type Write = (...args: unknown[]) => unknown;
    const fsAny = fs as unknown as Record<'writeSync' | 'write', Write>;
    const realWriteSync = fsAny.writeSync.bind(fs);
    const realWrite = fsAny.write.bind(fs);
    const byteLength = (data: unknown) =>
      typeof data === 'string' ? Buffer.byteLength(data) : (data as Uint8Array).length;
    spies.push(
      jest.spyOn(fsAny, 'writeSync').mockImplementation((fd: unknown, data: unknown, ...rest: unknown[]) => {
        if (fd !== 1 && fd !== 2) return realWriteSync(fd, data, ...rest);
        capture(data);
        return byteLength(data);
      }),
      jest.spyOn(fsAny, 'write').mockImplementation((fd: unknown, data: unknown, ...rest: unknown[]) => {
        if (fd !== 1 && fd !== 2) return realWrite(fd, data, ...rest);
        capture(data);
        const callback = rest[rest.length - 1];
        if (typeof callback === 'function')
          process.nextTick(() => (callback as Write)(null, byteLength(data), data));
        return undefined;
      }),
      jest.spyOn(process.stdout, 'write').mockImplementation((chunk: unknown) => {
        capture(chunk);
        return true;
      }),
      jest.spyOn(process.stderr, 'write').mockImplementation((chunk: unknown) => {
        capture(chunk);
        return true;
      }),
    );
    t = await createTestApp({ LOG_LEVEL: 'debug', FLEETHUB_RATE_LIMIT_AUTH_FAILURES_PER_MIN: '3' });
  });
  afterAll(async () => {
    await t.close();
    for (const spy of spies) spy.mockRestore();
  });

  it('keeps tokens, passwords and shared secrets out of the logs', async () => {
    const password = 'Hunter2-correct-horse-battery-staple';
    const ada = await t.fixtures.user({ password });
    const secrets: string[] = [password, ada.token];

    // Login (password in, token out), then use the token in every header form NervesHub clients send.
    const login = await t
      .http()
      .post('/api/users/auth')
      .send({ email: ada.user.email, password, note: 'hygiene' })
      .expect(200);
    const token: string = login.body.data.token;
    secrets.push(token);
    await t.http().get('/api/users/me').set('Authorization', `Bearer ${token}`).expect(200);
    await t.http().get('/api/users/me').set('Authorization', `token ${token}`).expect(200);
    // A token where it does not belong (the query string) and a wrong password.
    await t.http().get(`/api/users/me?token=${token}`).expect(401);
    await t
      .http()
      .post('/api/users/auth')
      .send({ email: ada.user.email, password: `${password}-wrong` })
      .expect(401);
    secrets.push(`${password}-wrong`);

    // Organization, product, shared secrets (product and device), signing key, device.
    const org = `hygiene-${Date.now()}`;
    await t.http().post('/api/orgs').set(ada.auth).send({ name: org }).expect(201);
    await t.fixtures.product(ada, org, 'p');
    await t
      .http()
      .post(`/api/orgs/${org}/products/p/devices`)
      .set(ada.auth)
      .send({ identifier: `d-${org}` })
      .expect(201);
    const productSecret = await t.http().post(`/api/orgs/${org}/products/p/shared_secrets`).set(ada.auth);
    if (productSecret.status === 201) secrets.push(productSecret.body.data.secret);
    const deviceSecret = await t
      .http()
      .post(`/api/orgs/${org}/products/p/devices/d-${org}/shared_secrets`)
      .set(ada.auth);
    if (deviceSecret.status === 201) secrets.push(deviceSecret.body.data.secret);

    // Failed bearer authentications, up to the rate limit.
    const forged = `nhu_${'Z'.repeat(46)}`;
    for (let i = 0; i < 5; i++) await t.http().get('/api/orgs').set('Authorization', `Bearer ${forged}`);
    secrets.push(forged);

    // A body that fails validation with a password in it.
    await t.http().post('/api/users/auth').send({ email: 5, password }).expect(422);

    await new Promise((resolve) => setTimeout(resolve, 200));
    const logs = captured.join('');
    // The capture works: request logs at debug/info are there.
    expect(logs).toContain('/api/users/me');
    expect(logs).toContain(`/api/orgs/${org}/products`);
    for (const secret of secrets) {
      expect({ secret: secret.slice(0, 8) + '…', found: logs.includes(secret) }).toEqual({
        secret: secret.slice(0, 8) + '…',
        found: false,
      });
    }
  });
});
