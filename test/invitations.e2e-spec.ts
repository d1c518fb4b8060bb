import { fieldError, NOT_FOUND, ROLE_TOO_LOW } from './support/contract-bodies';
import type { TestUser } from './support/fixtures';
import { SmtpSink } from './support/smtp-sink';
import { createTestApp, type TestApp } from './support/test-app';

const PASSWORD = 'correct horse battery staple';
const LINK = /https:\/\/hub\.example\.com\/invitations\/([A-Za-z0-9_-]{43})/;

/** A quoted-printable body as text (soft line breaks joined, =XX decoded). */
const unQuote = (data: string) =>
  data
    .replace(/=\r\n/g, '')
    .replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));

function csrfOf(res: { headers: Record<string, unknown>; text: string }): { cookie: string; field: string } {
  const setCookie = (res.headers['set-cookie'] as string[] | undefined) ?? [];
  const cookie = setCookie.map((c) => c.split(';')[0]).find((c) => c.startsWith('fleethub_csrf='));
  const field = /name="_csrf_token" value="([^"]+)"/.exec(res.text)?.[1];
  if (!cookie || !field) throw new Error('no CSRF cookie or field');
  return { cookie, field };
}

describe('POST /api/orgs/{org}/users/invite and the invitation page', () => {
  const smtp = new SmtpSink();
  // `a` mails (FLEETHUB_SMTP_URL), `b` does not: one database.
  let a: TestApp;
  let b: TestApp;
  let ada: TestUser;
  let org: string;
  beforeAll(async () => {
    const smtpUrl = await smtp.start();
    const env = { FLEETHUB_PUBLIC_URL: 'https://hub.example.com', FLEETHUB_RATE_LIMIT_LOGIN_PER_MIN: '1000' };
    a = await createTestApp({
      ...env,
      FLEETHUB_SMTP_URL: smtpUrl,
      FLEETHUB_SMTP_FROM: 'Hub <hub@example.com>',
    });
    b = await createTestApp(env, { databaseUrl: a.databaseUrl });
    ada = await a.fixtures.user({ name: 'Ada Lovelace' });
    org = await a.fixtures.org(ada);
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    await smtp.stop();
  });

  const invite = (app: TestApp, email: string, role = 'manage', by: TestUser = ada) =>
    app.http().post(`/api/orgs/${org}/users/invite`).set(by.auth).send({ email, role });
  const listed = async () =>
    (await a.http().get(`/api/orgs/${org}/invitations`).set(ada.auth).expect(200)).body.data as {
      email: string;
      role: string;
      url: string;
      invited_by: string | null;
    }[];
  const audited = async (action: string) =>
    (
      await a.db.query<{ target_id: string }[]>(
        `SELECT target_id FROM audit_logs l JOIN orgs o ON o.id = l.org_id WHERE o.name = $1 AND action = $2`,
        [org, action],
      )
    ).map((row) => row.target_id);
  async function post(app: TestApp, token: string, form: Record<string, string>) {
    const csrf = csrfOf(await app.http().get(`/invitations/${token}`).expect(200));
    return app
      .http()
      .post(`/invitations/${token}`)
      .set('Cookie', csrf.cookie)
      .type('form')
      .send({ _csrf_token: csrf.field, ...form });
  }

  it('a registered user is added at once: 201 with the member and its Location', async () => {
    const grace = await a.fixtures.user({ email: 'grace.invite@example.com', name: 'Grace' });
    const res = await invite(a, 'Grace.Invite@example.com', 'view').expect(201);
    expect(res.body).toEqual({ data: { email: grace.user.email, name: 'Grace', role: 'view' } });
    expect(res.headers.location).toBe(`/api/orgs/${org}/users/grace.invite%40example.com`);
    expect(await audited('member.add')).toContain(grace.user.email);
    await invite(a, grace.user.email, 'view').expect(422, fieldError('email', 'is already a member'));
  });

  it('an unknown email: 204, mailed, listed with its link; the page creates the account and the membership', async () => {
    const before = smtp.received.length;
    await invite(a, 'new.person@example.com', 'manage').expect(204, '');
    const [mail] = (await smtp.waitFor(before + 1)).slice(before);
    expect(mail.to).toEqual(['new.person@example.com']);
    expect(mail.from).toBe('hub@example.com');
    const text = unQuote(mail.data);
    expect(text).toContain(`Subject: Ada Lovelace invited you to ${org} on fleethub`);
    const token = LINK.exec(text)![1];
    const list = await listed();
    expect(list).toContainEqual(
      expect.objectContaining({
        email: 'new.person@example.com',
        role: 'manage',
        invited_by: ada.user.email,
        url: `https://hub.example.com/invitations/${token}`,
      }),
    );
    expect(await audited('invitation.create')).toContain('new.person@example.com');

    const page = await b.http().get(`/invitations/${token}`).expect(200);
    expect(page.headers['content-security-policy']).toContain("form-action 'self'");
    expect(page.text).toContain(`Join ${org} on fleethub`);
    expect(page.text).toContain('<label for="username">Username</label>');

    const mismatch = await post(b, token, {
      name: 'New',
      username: 'newp',
      password: PASSWORD,
      password_confirmation: 'x',
    });
    expect(mismatch.status).toBe(422);
    expect(mismatch.text).toContain('The two passwords differ.');
    const badName = await post(b, token, {
      name: 'New',
      username: 'has space',
      password: PASSWORD,
      password_confirmation: PASSWORD,
    });
    expect(badName.status).toBe(422);
    expect(badName.text).toContain('id="username-error"');
    expect(badName.text).toContain('aria-invalid="true"');

    const done = await post(b, token, {
      name: 'New Person',
      username: 'newperson',
      password: PASSWORD,
      password_confirmation: PASSWORD,
    });
    expect(done.status).toBe(200);
    expect(done.text).toContain(`Welcome to ${org}`);
    const login = await a
      .http()
      .post('/api/users/auth')
      .send({ email: 'new.person@example.com', password: PASSWORD })
      .expect(200);
    const orgs = await a
      .http()
      .get('/api/orgs')
      .set('Authorization', `Bearer ${login.body.data.token}`)
      .expect(200);
    expect(orgs.body.data).toContainEqual(expect.objectContaining({ name: org, role: 'manage' }));
    expect(await audited('invitation.accept')).toContain('new.person@example.com');
    // Used: the link is gone, and so is the listing.
    await a.http().get(`/invitations/${token}`).expect(404);
    expect((await listed()).map((i) => i.email)).not.toContain('new.person@example.com');
  });

  it('without SMTP the invitation is listed all the same; inviting again replaces the link; revoke ends it', async () => {
    const before = smtp.received.length;
    await invite(b, 'quiet@example.com').expect(204);
    const first = (await listed()).find((i) => i.email === 'quiet@example.com')!;
    await invite(b, 'quiet@example.com', 'admin').expect(204);
    const second = (await listed()).filter((i) => i.email === 'quiet@example.com');
    expect(second).toHaveLength(1);
    expect(second[0].role).toBe('admin');
    expect(second[0].url).not.toBe(first.url);
    await a.http().get(new URL(first.url).pathname).expect(404);
    await a.http().get(new URL(second[0].url).pathname).expect(200);
    expect(smtp.received.length).toBe(before);

    await a.http().delete(`/api/orgs/${org}/invitations/Quiet@example.com`).set(ada.auth).expect(204);
    await a.http().get(new URL(second[0].url).pathname).expect(404);
    await a
      .http()
      .delete(`/api/orgs/${org}/invitations/quiet@example.com`)
      .set(ada.auth)
      .expect(404, NOT_FOUND);
    expect(await audited('invitation.revoke')).toContain('quiet@example.com');
  });

  it('an invitation expires; two acceptances at once make one account', async () => {
    await invite(a, 'late@example.com').expect(204);
    const late = (await listed()).find((i) => i.email === 'late@example.com')!;
    await a.db.query(
      `UPDATE org_invitations SET expires_at = now() - interval '1 second' WHERE email = 'late@example.com'`,
    );
    await a.http().get(new URL(late.url).pathname).expect(404);
    expect((await listed()).map((i) => i.email)).not.toContain('late@example.com');

    await invite(a, 'twice@example.com').expect(204);
    const token = new URL((await listed()).find((i) => i.email === 'twice@example.com')!.url).pathname.split(
      '/',
    )[2];
    const csrf = csrfOf(await a.http().get(`/invitations/${token}`).expect(200));
    const form = {
      _csrf_token: csrf.field,
      username: 'twice',
      password: PASSWORD,
      password_confirmation: PASSWORD,
    };
    const answers = await Promise.all(
      [a, b, a].map((app) =>
        app.http().post(`/invitations/${token}`).set('Cookie', csrf.cookie).type('form').send(form),
      ),
    );
    expect(answers.filter((r) => r.status === 200)).toHaveLength(1);
    const users = await a.db.query(`SELECT id FROM users WHERE email = 'twice@example.com'`);
    expect(users).toHaveLength(1);
  });

  it('an email registered since the invitation joins with its password', async () => {
    await invite(a, 'meanwhile@example.com', 'view').expect(204);
    const url = (await listed()).find((i) => i.email === 'meanwhile@example.com')!.url;
    const token = new URL(url).pathname.split('/')[2];
    await a.fixtures.user({ email: 'meanwhile@example.com', password: PASSWORD });
    const page = await a.http().get(`/invitations/${token}`).expect(200);
    expect(page.text).toContain('This email has an account already');
    const wrong = await post(a, token, { password: 'nope-nope' });
    expect(wrong.status).toBe(422);
    expect(wrong.text).toContain('The password is incorrect.');
    expect((await post(a, token, { password: PASSWORD })).status).toBe(200);
    const member = await a
      .http()
      .get(`/api/orgs/${org}/users/meanwhile@example.com`)
      .set(ada.auth)
      .expect(200);
    expect(member.body.data.role).toBe('view');
  });

  it('roles, existence and bad input', async () => {
    const manager = await a.fixtures.user();
    await a.fixtures.addMember(org, manager, 'manage');
    await invite(a, 'x@example.com', 'view', manager).expect(403, ROLE_TOO_LOW);
    await a.http().get(`/api/orgs/${org}/invitations`).set(manager.auth).expect(403, ROLE_TOO_LOW);
    const stranger = await a.fixtures.user();
    await invite(a, 'x@example.com', 'view', stranger).expect(404, NOT_FOUND);
    await a.http().get(`/api/orgs/${org}/invitations`).set(stranger.auth).expect(404, NOT_FOUND);
    await a
      .http()
      .post(`/api/orgs/no-such-org/users/invite`)
      .set(ada.auth)
      .send({ email: 'x@example.com', role: 'view' })
      .expect(404, NOT_FOUND);
    await invite(a, 'not-an-email').expect(422, fieldError('email', 'is not a valid email address'));
    await invite(a, 'x@example.com', 'owner').expect(422);
    await a.http().post(`/api/orgs/${org}/users/invite`).set(ada.auth).send({ role: 'view' }).expect(422);
    await a
      .http()
      .get(`/invitations/${'z'.repeat(43)}`)
      .expect(404);
    await a.http().get('/invitations/%3Cb%3E').expect(404);
    // A form without the CSRF cookie changes nothing.
    await invite(a, 'csrf@example.com').expect(204);
    const token = new URL((await listed()).find((i) => i.email === 'csrf@example.com')!.url).pathname.split(
      '/',
    )[2];
    await a
      .http()
      .post(`/invitations/${token}`)
      .type('form')
      .send({ username: 'csrf', password: PASSWORD, password_confirmation: PASSWORD })
      .expect(403);
    await a.http().get(`/invitations/${token}`).expect(200);
  });
});
