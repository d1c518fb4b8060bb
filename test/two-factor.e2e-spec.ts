import { totpCode } from '../src/auth/totp';
import { fieldError, FORBIDDEN, UNAUTHORIZED } from './support/contract-bodies';
import type { TestUser } from './support/fixtures';
import { createTestApp, type TestApp } from './support/test-app';

const TWO_FACTOR = '/api/users/me/two_factor';
const PASSWORD = 'correct horse battery staple';
const CODE_REQUIRED = fieldError('code', "can't be blank: two-factor sign-in is on for this account");
const CODE_INVALID = fieldError('code', 'is invalid or was already used');
const STEP_MS = 30_000;

/**
 * Codes of three consecutive 30-second steps, all within the server's ±1 step for the next second or so: the
 * previous step's, the current one's and the next one's (the server refuses a step at or before the last it
 * accepted, so a test that needs several codes uses them in this order).
 */
async function threeCodes(secret: string): Promise<[string, string, string]> {
  if (Date.now() % STEP_MS > STEP_MS - 2_000) {
    await new Promise((resolve) => setTimeout(resolve, STEP_MS - (Date.now() % STEP_MS) + 50));
  }
  const now = Date.now();
  return [totpCode(secret, now - STEP_MS), totpCode(secret, now), totpCode(secret, now + STEP_MS)];
}

/** A code that is none of the ±1 step codes (so it is wrong whatever the clock). */
function wrongCode(secret: string): string {
  const now = Date.now();
  const good = new Set([-2, -1, 0, 1, 2].map((k) => totpCode(secret, now + k * STEP_MS)));
  for (let n = 0; ; n++) {
    const code = String(n).padStart(6, '0');
    if (!good.has(code)) return code;
  }
}

describe('two-factor sign-in (TOTP, RFC 6238)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ FLEETHUB_RATE_LIMIT_LOGIN_PER_MIN: '1000' });
  });
  afterAll(async () => {
    await t?.close();
  });

  const login = (who: TestUser, extra: Record<string, unknown> = {}) =>
    t
      .http()
      .post('/api/users/auth')
      .send({ email: who.user.email, password: PASSWORD, ...extra });
  const status = async (who: TestUser) =>
    (await t.http().get(TWO_FACTOR).set(who.auth).expect(200)).body.data as {
      enabled: boolean;
      enabled_at: string | null;
      backup_codes_left: number;
    };

  /** A user with two-factor sign-in on: its secret and its backup codes. */
  async function enrolled(): Promise<{ who: TestUser; org: string; secret: string; backupCodes: string[] }> {
    const who = await t.fixtures.user({ password: PASSWORD });
    const org = await t.fixtures.org(who);
    const secret = (
      (await t.http().post(TWO_FACTOR).set(who.auth).expect(200)).body.data as { secret: string }
    ).secret;
    const [code] = await threeCodes(secret);
    const res = await t.http().post(`${TWO_FACTOR}/confirm`).set(who.auth).send({ code }).expect(200);
    return { who, org, secret, backupCodes: (res.body.data as { backup_codes: string[] }).backup_codes };
  }

  const auditActions = async (org: string, admin: TestUser) =>
    (
      (await t.http().get(`/api/orgs/${org}/audit_logs`).set(admin.auth).expect(200)).body.data as {
        action: string;
        target_type: string;
        details: Record<string, unknown>;
      }[]
    ).filter((e) => e.action.startsWith('user.two_factor'));

  it('enrolment: a secret, its otpauth URI and a QR code; nothing changes at sign-in until a code confirms it', async () => {
    const who = await t.fixtures.user({ password: PASSWORD });
    const org = await t.fixtures.org(who);
    expect(await status(who)).toEqual({ enabled: false, enabled_at: null, backup_codes_left: 0 });

    const started = (await t.http().post(TWO_FACTOR).set(who.auth).expect(200)).body.data as Record<
      string,
      string
    >;
    expect(started.secret).toMatch(/^[A-Z2-7]{32}$/);
    const uri = new URL(started.otpauth_uri);
    expect(uri.protocol).toBe('otpauth:');
    expect(uri.searchParams.get('secret')).toBe(started.secret);
    expect(uri.searchParams.get('issuer')).toBe('fleethub');
    expect(decodeURIComponent(uri.pathname)).toContain(who.user.email);
    expect(started.qr_code_svg).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"[^>]*>.*<\/svg>\s*$/s);
    await login(who).expect(200); // pending: not required yet
    expect((await status(who)).enabled).toBe(false);

    // A wrong first code changes nothing and is audited; a right one turns it on with ten backup codes.
    await t
      .http()
      .post(`${TWO_FACTOR}/confirm`)
      .set(who.auth)
      .send({ code: wrongCode(started.secret) })
      .expect(422)
      .expect(CODE_INVALID);
    expect((await status(who)).enabled).toBe(false);
    const [code] = await threeCodes(started.secret);
    const confirmed = await t.http().post(`${TWO_FACTOR}/confirm`).set(who.auth).send({ code }).expect(200);
    const body = confirmed.body.data as { enabled: boolean; enabled_at: string; backup_codes: string[] };
    expect(body.enabled).toBe(true);
    expect(body.backup_codes).toHaveLength(10);
    expect(new Set(body.backup_codes).size).toBe(10);
    for (const c of body.backup_codes) expect(c).toMatch(/^[a-z2-9]{5}-[a-z2-9]{5}$/);
    expect(await status(who)).toEqual({ enabled: true, enabled_at: body.enabled_at, backup_codes_left: 10 });
    // Stored hashed, never as typed.
    const rows: { backup_code_hashes: string[]; secret: string }[] = await t.db.query(
      `SELECT backup_code_hashes, secret FROM user_two_factor WHERE user_id = $1`,
      [who.user.id],
    );
    expect(rows[0].backup_code_hashes).toHaveLength(10);
    for (const c of body.backup_codes)
      expect(rows[0].backup_code_hashes.join()).not.toContain(c.replace('-', ''));

    expect((await auditActions(org, who)).map((e) => [e.action, e.details])).toEqual([
      ['user.two_factor_enable', {}],
      ['user.two_factor_failure', { purpose: 'confirm' }],
    ]);
    // On: enrolling again is refused until it is turned off.
    await t.http().post(TWO_FACTOR).set(who.auth).expect(409);
  });

  it('sign-in then needs a code: missing or wrong is 422 naming `code`, a used code is refused (no replay)', async () => {
    const { who, secret } = await enrolled();
    // A wrong password is the usual 401, whether or not a code came with it: the code is judged only after it.
    await t
      .http()
      .post('/api/users/auth')
      .send({ email: who.user.email, password: 'wrong' })
      .expect(401)
      .expect(UNAUTHORIZED);
    await login(who).expect(422).expect(CODE_REQUIRED);
    await login(who, { code: '' }).expect(422).expect(CODE_REQUIRED);
    await login(who, { code: wrongCode(secret) })
      .expect(422)
      .expect(CODE_INVALID);
    await login(who, { code: 'not a code' }).expect(422).expect(CODE_INVALID);

    const [, current, next] = await threeCodes(secret); // the first was spent confirming
    const signedIn = await login(who, { code: current.replace(/^(\d{3})/, '$1 ') }).expect(200);
    const token = (signedIn.body.data as { token: string }).token;
    await t.http().get('/api/users/me').set('Authorization', `Bearer ${token}`).expect(200);
    await login(who, { code: current }).expect(422).expect(CODE_INVALID); // replay
    await login(who, { code: next }).expect(200);
    // NervesHub's route takes the same field.
    await t
      .http()
      .post('/api/users/login')
      .send({ email: who.user.email, password: PASSWORD })
      .expect(422)
      .expect(CODE_REQUIRED);
  });

  it('one code, four sign-ins at once: exactly one is let in', async () => {
    const { who, secret } = await enrolled();
    const [, current] = await threeCodes(secret);
    const answers = await Promise.all([1, 2, 3, 4].map(() => login(who, { code: current })));
    expect(answers.map((r) => r.status).sort()).toEqual([200, 422, 422, 422]);
  });

  it('backup codes: each signs in once, in any case and with or without its dash; new ones replace the old', async () => {
    const { who, org, secret, backupCodes } = await enrolled();
    await login(who, { code: backupCodes[0].toUpperCase() }).expect(200);
    await login(who, { code: backupCodes[0] }).expect(422).expect(CODE_INVALID);
    await login(who, { code: backupCodes[1].replace('-', '') }).expect(200);
    expect((await status(who)).backup_codes_left).toBe(8);

    const [, current] = await threeCodes(secret);
    const fresh = await t
      .http()
      .post(`${TWO_FACTOR}/backup_codes`)
      .set(who.auth)
      .send({ code: current })
      .expect(200);
    const renewed = (fresh.body.data as { backup_codes: string[] }).backup_codes;
    expect(renewed).toHaveLength(10);
    expect((await status(who)).backup_codes_left).toBe(10);
    await login(who, { code: backupCodes[2] }).expect(422).expect(CODE_INVALID);
    await login(who, { code: renewed[0] }).expect(200);
    expect((await auditActions(org, who)).map((e) => e.action)).toEqual([
      'user.two_factor_backup_code_used',
      'user.two_factor_failure',
      'user.two_factor_backup_codes',
      'user.two_factor_backup_code_used',
      'user.two_factor_failure',
      'user.two_factor_backup_code_used',
      'user.two_factor_enable',
    ]);
  });

  it('turning it off needs a good code; after that a password alone signs in again', async () => {
    const { who, org, secret, backupCodes } = await enrolled();
    await t
      .http()
      .post(`${TWO_FACTOR}/disable`)
      .set(who.auth)
      .send({ code: wrongCode(secret) })
      .expect(422)
      .expect(CODE_INVALID);
    await t.http().post(`${TWO_FACTOR}/disable`).set(who.auth).send({}).expect(422);
    expect((await status(who)).enabled).toBe(true);
    await t.http().post(`${TWO_FACTOR}/disable`).set(who.auth).send({ code: backupCodes[3] }).expect(204);
    expect(await status(who)).toEqual({ enabled: false, enabled_at: null, backup_codes_left: 0 });
    await login(who).expect(200);
    await t.http().post(`${TWO_FACTOR}/disable`).set(who.auth).send({ code: '123456' }).expect(409);
    await t.http().post(`${TWO_FACTOR}/confirm`).set(who.auth).send({ code: '123456' }).expect(409);
    expect((await auditActions(org, who)).map((e) => e.action)).toEqual([
      'user.two_factor_disable',
      'user.two_factor_backup_code_used',
      'user.two_factor_failure',
      'user.two_factor_enable',
    ]);
  });

  it('a browser sign-in and the CLI sign-in page ask for the code too', async () => {
    const { who, secret } = await enrolled();
    await t
      .http()
      .post('/api/session')
      .send({ email: who.user.email, password: PASSWORD })
      .expect(422)
      .expect(CODE_REQUIRED);
    const [, current, next] = await threeCodes(secret);
    await t
      .http()
      .post('/api/session')
      .send({ email: who.user.email, password: PASSWORD, code: current })
      .expect(201);

    const started = (await t.http().post('/api/auth/cli_session').send({ note: 'nh' }).expect(200)).body
      .data as {
      token: string;
      confirmation_code: string;
    };
    const page = await t.http().get(`/auth/cli/${started.token}`).expect(200);
    expect(page.text).toContain('name="two_factor_code"');
    const cookie = (page.headers['set-cookie'] as unknown as string[])
      .map((c) => c.split(';')[0])
      .find((c) => c.startsWith('fleethub_csrf='))!;
    const csrf = /name="_csrf_token" value="([^"]+)"/.exec(page.text)![1];
    const submit = (form: Record<string, string>) =>
      t
        .http()
        .post(`/auth/cli/${started.token}`)
        .set('Cookie', cookie)
        .type('form')
        .send({
          _csrf_token: csrf,
          decision: 'approve',
          confirmation_code: started.confirmation_code,
          email: who.user.email,
          password: PASSWORD,
          ...form,
        });
    const refused = await submit({}).expect(422);
    expect(refused.text).toContain('Your account uses two-factor sign-in');
    expect(refused.text).toMatch(/id="two_factor_code"[^>]*aria-invalid="true"/);
    const approved = await submit({ two_factor_code: next }).expect(200);
    expect(approved.text).toContain('Sign-in approved');
  });

  it('a read-only token can see it but not change it; other users see only their own', async () => {
    const { who } = await enrolled();
    const reader = await t.fixtures.token(who.user, { scope: 'read' });
    const asReader = { Authorization: `Bearer ${reader}` };
    expect((await t.http().get(TWO_FACTOR).set(asReader).expect(200)).body.data.enabled).toBe(true);
    await t
      .http()
      .post(`${TWO_FACTOR}/disable`)
      .set(asReader)
      .send({ code: '123456' })
      .expect(403)
      .expect(FORBIDDEN);
    await t.http().post(TWO_FACTOR).set(asReader).expect(403).expect(FORBIDDEN);
    const other = await t.fixtures.user();
    expect(await status(other)).toEqual({ enabled: false, enabled_at: null, backup_codes_left: 0 });
    await t.http().get(TWO_FACTOR).expect(401).expect(UNAUTHORIZED);
  });
});

describe('two-factor sign-in: wrong codes are rate limited per user', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ FLEETHUB_RATE_LIMIT_LOGIN_PER_MIN: '3' });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('past the limit a good code is refused too (429 with Retry-After) until the window ends', async () => {
    const who = await t.fixtures.user({ password: PASSWORD });
    const secret = (
      (await t.http().post(TWO_FACTOR).set(who.auth).expect(200)).body.data as { secret: string }
    ).secret;
    const confirm = (code: string) => t.http().post(`${TWO_FACTOR}/confirm`).set(who.auth).send({ code });
    for (let i = 0; i < 3; i++) await confirm(wrongCode(secret)).expect(422).expect(CODE_INVALID);
    const blocked = await confirm(wrongCode(secret)).expect(429);
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
    const [code] = await threeCodes(secret);
    await confirm(code).expect(429);
    // Another user is not affected.
    const other = await t.fixtures.user();
    const otherSecret = (
      (await t.http().post(TWO_FACTOR).set(other.auth).expect(200)).body.data as { secret: string }
    ).secret;
    const [otherCode] = await threeCodes(otherSecret);
    await t.http().post(`${TWO_FACTOR}/confirm`).set(other.auth).send({ code: otherCode }).expect(200);
  });
});
