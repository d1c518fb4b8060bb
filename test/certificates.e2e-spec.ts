import { createHash, X509Certificate } from 'node:crypto';
import {
  CA_KEY_HELD_ELSEWHERE,
  CA_OF_ANOTHER_ORG,
  EXPIRED,
  KEY_OF_ANOTHER_DEVICE,
  NO_SUBJECT_KEY_ID,
  NO_VERIFICATION_TOKEN,
  NOT_A_CA,
  NOT_A_PRODUCT,
  NOT_SIGNED_BY_CA,
  NOT_YET_VALID,
  SUBJECT_NOT_DEVICE,
  TOKEN_EXPIRED,
  TOKEN_INVALID,
  TOKEN_OTHER_ORG,
} from '../src/certificates/certificates.errors';
import { VerificationTokens } from '../src/certificates/verification-tokens';
import { CERT_MALFORMED, CERT_NOT_BASE64, CERT_NOT_PEM, CERT_SEVERAL } from '../src/certificates/x509';
import {
  ca,
  days,
  type Issued,
  leaf,
  selfSigned,
  subjectKeyId as keyId,
  verificationCert,
} from './support/cert-builder';
import { fieldError, fieldErrors, NOT_FOUND, ROLE_TOO_LOW } from './support/contract-bodies';
import { type TestUser, unique } from './support/fixtures';
import { orgScenario } from './support/scenario';
import type { TestApp } from './support/test-app';

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const BLANK = "can't be blank";
const TAKEN = 'has already been taken';

describe('certificates', () => {
  let t: TestApp;
  let admin: TestUser;
  let org: string;
  let viewer: TestUser;
  let manager: TestUser;
  let other: { admin: TestUser; org: string };

  beforeAll(async () => {
    ({ t, admin, org } = await orgScenario({ env: { FLEETHUB_RATE_LIMIT_API_PER_MIN: '0' } }));
    viewer = await t.fixtures.user();
    await t.fixtures.addMember(org, viewer, 'view');
    manager = await t.fixtures.user();
    await t.fixtures.addMember(org, manager, 'manage');
    const otherAdmin = await t.fixtures.user();
    other = { admin: otherAdmin, org: await t.fixtures.org(otherAdmin) };
  });
  afterAll(() => t.close());

  const cas = (o: string) => `/api/orgs/${o}/ca_certificates`;

  async function token(user: TestUser = admin, o: string = org): Promise<string> {
    const res = await t
      .http()
      .get(`${cas(o)}/verification_token`)
      .set(user.auth)
      .expect(200);
    return res.body.data.verification_token as string;
  }

  /** The body registering `authority` in `o`, with a fresh proof signed by it. */
  async function proofBody(authority: Issued, o = org, user = admin, extra: object = {}): Promise<object> {
    const proof = await verificationCert(authority, await token(user, o));
    return { cert: authority.b64, verification_cert: proof.b64, ...extra };
  }

  function register(body: object, user: TestUser = admin, o = org) {
    return t.http().post(cas(o)).set(user.auth).send(body);
  }

  async function registeredCa(
    options: Parameters<typeof ca>[0] = {},
    o = org,
    user = admin,
  ): Promise<Issued> {
    const authority = await ca(options);
    await register(await proofBody(authority, o, user), user, o).expect(201);
    return authority;
  }

  async function orgId(name: string): Promise<string> {
    const [row] = await t.db.query('SELECT id FROM orgs WHERE name = $1', [name]);
    return row.id as string;
  }

  async function audits(action: string, targetId: string) {
    return t.db.query(
      `SELECT a.action, a.target_type, a.target_id, a.details, a.actor_name, o.name AS org
         FROM audit_logs a JOIN orgs o ON o.id = a.org_id WHERE a.action = $1 AND a.target_id = $2`,
      [action, targetId],
    );
  }

  const caCount = async () => Number((await t.db.query('SELECT count(*) AS n FROM ca_certificates'))[0].n);

  describe('GET .../ca_certificates/verification_token', () => {
    it('answers a token bound to the organization, to any member', async () => {
      const res = await t
        .http()
        .get(`${cas(org)}/verification_token`)
        .set(viewer.auth)
        .expect(200);
      expect(Object.keys(res.body)).toEqual(['data']);
      expect(Object.keys(res.body.data)).toEqual(['verification_token']);
      const value = res.body.data.verification_token as string;
      expect(value).toMatch(/^[A-Za-z0-9._-]+$/);
      const tokens = t.app.get(VerificationTokens);
      expect(tokens.check(value, await orgId(org))).toBe('valid');
      expect(tokens.check(value, await orgId(other.org))).toBe('other_org');
    });

    it('is not given to a non-member (the constant 404)', async () => {
      await t
        .http()
        .get(`${cas(org)}/verification_token`)
        .set(other.admin.auth)
        .expect(404, NOT_FOUND);
    });
  });

  describe('POST .../ca_certificates', () => {
    it('registers a CA with proof of possession: 201, Location, the record, the stored certificate, audited', async () => {
      const authority = await ca({ cn: 'Factory CA' });
      const res = await register(
        await proofBody(authority, org, manager, { description: 'line 2' }),
        manager,
      ).expect(201);
      expect(res.headers.location).toBe(`/api/orgs/${org}/ca_certificates/${authority.serial}`);
      expect(res.body).toEqual({
        data: {
          serial: authority.serial,
          not_before: authority.cert.notBefore.toISOString(),
          not_after: authority.cert.notAfter.toISOString(),
          description: 'line 2',
          jitp: null,
        },
      });
      const [row] = await t.db.query(
        `SELECT serial, ski, aki, der, last_used FROM ca_certificates WHERE serial = $1`,
        [authority.serial],
      );
      expect(Buffer.from(row.der).equals(Buffer.from(authority.cert.rawData))).toBe(true);
      const ski = keyId(authority);
      expect(Buffer.from(row.ski).toString('hex')).toBe(ski);
      expect(row.last_used).toBeNull();
      expect(await audits('ca_certificate.create', authority.serial)).toEqual([
        {
          action: 'ca_certificate.create',
          target_type: 'ca_certificate',
          target_id: authority.serial,
          details: expect.objectContaining({ description: 'line 2', ski, jitp_product: null }),
          actor_name: manager.user.email,
          org,
        },
      ]);
      await t.http().get(res.headers.location).set(viewer.auth).expect(200, res.body);
    });

    it('registers an RSA CA with a JITP template (tags normalised), and takes the PEM itself too', async () => {
      const product = await t.fixtures.product(admin, org);
      const authority = await ca({ kind: 'rsa' });
      const proof = await verificationCert(authority, await token());
      const res = await register({
        cert: authority.pem,
        verification_cert: proof.b64,
        jitp: { product_name: product, tags: ' jitp, batch-7 ,,jitp', description: 'auto' },
      }).expect(201);
      expect(res.body.data.jitp).toEqual({
        product_name: product,
        tags: ['jitp', 'batch-7'],
        description: 'auto',
      });
      expect(res.body.data.description).toBeNull();
    });

    it('registers an intermediate CA; its authority key id (the root) is kept for the device socket', async () => {
      const root = await ca({ cn: 'Root' });
      const intermediate = await ca({ cn: 'Intermediate' }, root);
      await register(await proofBody(intermediate)).expect(201);
      const [row] = await t.db.query('SELECT aki FROM ca_certificates WHERE serial = $1', [
        intermediate.serial,
      ]);
      expect(Buffer.from(row.aki).toString('hex')).toBe(keyId(root));
    });

    it('a missing field is a 422 naming each', async () => {
      await register({}).expect(422, fieldErrors({ cert: [BLANK], verification_cert: [BLANK] }));
    });

    it('a value that is not base64 of one PEM certificate is a 422 on that field', async () => {
      const authority = await ca();
      const second = await ca();
      const proof = (await verificationCert(authority, await token())).b64;
      const b64 = (text: string) => Buffer.from(text).toString('base64');
      const cases: [object, object][] = [
        [{ cert: 'not base64!', verification_cert: proof }, fieldError('cert', CERT_NOT_BASE64)],
        [{ cert: b64('hello'), verification_cert: proof }, fieldError('cert', CERT_NOT_PEM)],
        [
          {
            cert: b64('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n'),
            verification_cert: proof,
          },
          fieldError('cert', CERT_MALFORMED),
        ],
        [
          { cert: b64(authority.pem + second.pem), verification_cert: proof },
          fieldError('cert', CERT_SEVERAL),
        ],
        [{ cert: authority.b64, verification_cert: 'AAAA' }, fieldError('verification_cert', CERT_NOT_PEM)],
      ];
      for (const [body, answer] of cases) await register(body).expect(422, answer);
    });

    it('a certificate that is not a CA, has no key identifier or has expired is a 422 on cert', async () => {
      const cases: [Parameters<typeof ca>[0], string][] = [
        [{ isCa: false }, NOT_A_CA],
        [{ isCa: null }, NOT_A_CA],
        [{ withSki: false }, NO_SUBJECT_KEY_ID],
        [{ notBefore: days(-30), notAfter: days(-1) }, EXPIRED],
      ];
      for (const [options, message] of cases) {
        const authority = await ca(options);
        await register(await proofBody(authority)).expect(422, fieldError('cert', message));
      }
    });

    it('a failed proof of possession is a 422 on verification_cert, and stores nothing', async () => {
      const before = await caCount();
      const authority = await ca({ cn: 'Proof CA' });
      const good = await token();
      const [, mac] = /\.([^.]+)$/.exec(good)!;
      const tampered = good.slice(0, -mac.length) + (mac[0] === 'A' ? 'B' : 'A') + mac.slice(1);
      const stale = t.app
        .get(VerificationTokens)
        .issue(await orgId(org), new Date(Date.now() - 61 * 60 * 1000));
      // The same subject name as the CA, but another key.
      const impostor = await ca({ cn: 'Proof CA' });
      const cases: [Promise<Issued>, string][] = [
        [leaf(authority, { cn: 'no token' }), NO_VERIFICATION_TOKEN],
        [leaf(authority, { uris: ['https://example.com/', `urn:other:${good}`] }), NO_VERIFICATION_TOKEN],
        [verificationCert(authority, tampered), TOKEN_INVALID],
        [verificationCert(authority, 'garbage'), TOKEN_INVALID],
        [verificationCert(authority, stale), TOKEN_EXPIRED],
        [verificationCert(authority, await token(other.admin, other.org)), TOKEN_OTHER_ORG],
        [verificationCert(await ca(), good), NOT_SIGNED_BY_CA],
        [verificationCert(impostor, good), NOT_SIGNED_BY_CA],
        [verificationCert(authority, good, { notBefore: days(-3), notAfter: days(-1) }), EXPIRED],
        [verificationCert(authority, good, { notBefore: days(1) }), NOT_YET_VALID],
      ];
      for (const [proof, message] of cases) {
        await register({ cert: authority.b64, verification_cert: (await proof).b64 }).expect(
          422,
          fieldError('verification_cert', message),
        );
      }
      expect(await caCount()).toBe(before);
      expect(await audits('ca_certificate.create', authority.serial)).toEqual([]);
    });

    it('a serial the organization registered already is a 422 on serial', async () => {
      const authority = await registeredCa();
      await register(await proofBody(authority)).expect(422, fieldError('serial', TAKEN));
    });

    it("a CA key another organization registered is a 422 on cert; that organization's CA is untouched", async () => {
      const authority = await registeredCa({}, other.org, other.admin);
      await register(await proofBody(authority)).expect(422, fieldError('cert', CA_KEY_HELD_ELSEWHERE));
      await t
        .http()
        .get(`${cas(other.org)}/${authority.serial}`)
        .set(other.admin.auth)
        .expect(200);
    });

    it('one CA key registered by two organizations at once: exactly one succeeds', async () => {
      const third = await t.fixtures.org(other.admin);
      for (let round = 0; round < 3; round++) {
        const authority = await ca();
        const bodies = [
          await proofBody(authority, other.org, other.admin),
          await proofBody(authority, third, other.admin),
        ];
        const answers = await Promise.all([
          register(bodies[0], other.admin, other.org),
          register(bodies[1], other.admin, third),
        ]);
        expect(answers.map((res) => res.status).sort()).toEqual([201, 422]);
        expect(answers.find((res) => res.status === 422)!.body).toEqual(
          fieldError('cert', CA_KEY_HELD_ELSEWHERE),
        );
      }
    });

    it('a JITP product that is not one of the organization, or a malformed template, is a 422 on jitp', async () => {
      const authority = await ca();
      const elsewhere = await t.fixtures.product(other.admin, other.org);
      await register(await proofBody(authority, org, admin, { jitp: { product_name: elsewhere } })).expect(
        422,
        fieldError('jitp.product_name', NOT_A_PRODUCT),
      );
      await register(await proofBody(authority, org, admin, { jitp: { tags: 'a' } })).expect(
        422,
        fieldError('jitp.product_name', BLANK),
      );
      await register(await proofBody(authority, org, admin, { jitp: 'thermostat' })).expect(
        422,
        fieldError('jitp', 'must be an object {product_name, tags, description} or null'),
      );
    });

    it('a view member cannot register (403), nor can a read-only token', async () => {
      const authority = await ca();
      await register(await proofBody(authority), viewer).expect(403, ROLE_TOO_LOW);
      const read = await t.fixtures.token(admin.user, { scope: 'read' });
      await t
        .http()
        .post(cas(org))
        .set({ Authorization: `Bearer ${read}` })
        .send(await proofBody(authority))
        .expect(403, { error: 'forbidden' });
    });
  });

  describe('list, show, delete', () => {
    it('lists in registration order; shows by serial; an unknown or malformed serial is the constant 404', async () => {
      const o = await t.fixtures.org(admin);
      const first = await registeredCa({}, o);
      const second = await registeredCa({ kind: 'rsa' }, o);
      const list = await t.http().get(cas(o)).set(admin.auth).expect(200);
      expect(list.body.data.map((item: { serial: string }) => item.serial)).toEqual([
        first.serial,
        second.serial,
      ]);
      const shown = await t
        .http()
        .get(`${cas(o)}/${second.serial}`)
        .set(admin.auth)
        .expect(200);
      expect(shown.body.data).toEqual(list.body.data[1]);
      for (const serial of ['1', '0123', 'abc', `${first.serial}0`]) {
        await t
          .http()
          .get(`${cas(o)}/${serial}`)
          .set(admin.auth)
          .expect(404, NOT_FOUND);
      }
      // Another organization's CA is not there.
      await t
        .http()
        .get(`${cas(org)}/${first.serial}`)
        .set(admin.auth)
        .expect(404, NOT_FOUND);
      await t
        .http()
        .get(`${cas(o)}/${first.serial}`)
        .set(other.admin.auth)
        .expect(404, NOT_FOUND);
    });

    it('deletes (204, audited); then 404; a view member can read but not delete', async () => {
      const authority = await registeredCa();
      await t
        .http()
        .get(`${cas(org)}/${authority.serial}`)
        .set(viewer.auth)
        .expect(200);
      await t.http().get(cas(org)).set(viewer.auth).expect(200);
      await t
        .http()
        .delete(`${cas(org)}/${authority.serial}`)
        .set(viewer.auth)
        .expect(403, ROLE_TOO_LOW);
      await t
        .http()
        .delete(`${cas(org)}/${authority.serial}`)
        .set(manager.auth)
        .expect(204, '');
      await t
        .http()
        .get(`${cas(org)}/${authority.serial}`)
        .set(admin.auth)
        .expect(404, NOT_FOUND);
      await t
        .http()
        .delete(`${cas(org)}/${authority.serial}`)
        .set(admin.auth)
        .expect(404, NOT_FOUND);
      expect(await audits('ca_certificate.delete', authority.serial)).toEqual([
        expect.objectContaining({ target_type: 'ca_certificate', actor_name: manager.user.email, org }),
      ]);
      // The same CA can be registered again after its deletion.
      await register(await proofBody(authority)).expect(201);
    });

    it('deleting the JITP product leaves the CA without JITP', async () => {
      const product = await t.fixtures.product(admin, org);
      const authority = await ca();
      await register(await proofBody(authority, org, admin, { jitp: { product_name: product } })).expect(201);
      await t.http().delete(`/api/orgs/${org}/products/${product}`).set(admin.auth).expect(204);
      const res = await t
        .http()
        .get(`${cas(org)}/${authority.serial}`)
        .set(admin.auth)
        .expect(200);
      expect(res.body.data.jitp).toBeNull();
    });
  });

  describe('device certificates', () => {
    let product: string;
    beforeAll(async () => {
      product = await t.fixtures.product(admin, org);
    });

    const certs = (identifier: string, p = product, o = org) =>
      `/api/orgs/${o}/products/${p}/devices/${identifier}/certificates`;
    const sha256 = (data: ArrayBuffer | Buffer) =>
      createHash('sha256')
        .update(Buffer.from(data as ArrayBuffer))
        .digest('hex');

    async function device(): Promise<string> {
      return t.fixtures.device(admin, org, product, unique('cert-device-'));
    }

    function add(identifier: string, cert: Issued | string, user: TestUser = admin) {
      return t
        .http()
        .post(certs(identifier))
        .set(user.auth)
        .send({ cert: typeof cert === 'string' ? cert : cert.b64 });
    }

    it('registers a CA-signed ECDSA P-256 certificate: 201, Location, the record, audited', async () => {
      const authority = await registeredCa();
      const identifier = await device();
      const cert = await leaf(authority, { cn: identifier });
      const res = await add(identifier, cert, manager).expect(201);
      expect(res.headers.location).toBe(`${certs(identifier)}/${cert.serial}`);
      const spki = new X509Certificate(cert.pem).publicKey.export({ type: 'spki', format: 'der' });
      expect(res.body).toEqual({
        data: {
          serial: cert.serial,
          aki: keyId(authority),
          ski: keyId(cert),
          not_before: cert.cert.notBefore.toISOString(),
          not_after: cert.cert.notAfter.toISOString(),
          fingerprint: sha256(cert.cert.rawData),
          public_key_fingerprint: sha256(spki),
          last_used: null,
          inserted_at: expect.stringMatching(ISO_UTC),
        },
      });
      await t.http().get(res.headers.location).set(viewer.auth).expect(200, res.body);
      expect(await audits('device_certificate.create', identifier)).toEqual([
        {
          action: 'device_certificate.create',
          target_type: 'device',
          target_id: identifier,
          details: { serial: cert.serial, fingerprint: sha256(cert.cert.rawData) },
          actor_name: manager.user.email,
          org,
        },
      ]);
    });

    it('registers a self-signed RSA certificate (no authority key id); lists in order; deletes', async () => {
      const identifier = await device();
      const first = await selfSigned({ cn: identifier, kind: 'rsa' });
      const second = await selfSigned({ cn: identifier, withSki: false });
      expect((await add(identifier, first).expect(201)).body.data.aki).toBeNull();
      expect((await add(identifier, second).expect(201)).body.data.ski).toBeNull();
      const list = await t.http().get(certs(identifier)).set(viewer.auth).expect(200);
      expect(list.body.data.map((c: { serial: string }) => c.serial)).toEqual([first.serial, second.serial]);
      await t
        .http()
        .delete(`${certs(identifier)}/${first.serial}`)
        .set(viewer.auth)
        .expect(403, ROLE_TOO_LOW);
      await t
        .http()
        .delete(`${certs(identifier)}/${first.serial}`)
        .set(manager.auth)
        .expect(204, '');
      await t
        .http()
        .get(`${certs(identifier)}/${first.serial}`)
        .set(admin.auth)
        .expect(404, NOT_FOUND);
      await t
        .http()
        .delete(`${certs(identifier)}/${first.serial}`)
        .set(admin.auth)
        .expect(404, NOT_FOUND);
      expect(await audits('device_certificate.delete', identifier)).toEqual([
        expect.objectContaining({ details: { serial: first.serial }, actor_name: manager.user.email }),
      ]);
      const after = await t.http().get(certs(identifier)).set(admin.auth).expect(200);
      expect(after.body.data.map((c: { serial: string }) => c.serial)).toEqual([second.serial]);
    });

    it("a certificate whose subject is not the device's identifier is a 422 on cert", async () => {
      const identifier = await device();
      const authority = await ca();
      for (const cert of [
        await leaf(authority, { cn: `${identifier}x` }),
        await leaf(authority, { cn: identifier.toUpperCase() }),
        await leaf(authority, { cn: await device() }),
      ]) {
        await add(identifier, cert).expect(422, fieldError('cert', SUBJECT_NOT_DEVICE));
      }
      expect((await t.http().get(certs(identifier)).set(admin.auth).expect(200)).body.data).toEqual([]);
    });

    it('a certificate registered already is a 422 on serial; an expired one a 422 on cert', async () => {
      const identifier = await device();
      const cert = await selfSigned({ cn: identifier });
      await add(identifier, cert).expect(201);
      await add(identifier, cert).expect(422, fieldError('serial', TAKEN));
      await add(
        identifier,
        await selfSigned({ cn: identifier, notBefore: days(-9), notAfter: days(-1) }),
      ).expect(422, fieldError('cert', EXPIRED));
      await add(identifier, 'garbage').expect(422, fieldError('cert', CERT_NOT_BASE64));
      await t.http().post(certs(identifier)).set(admin.auth).send({}).expect(422, fieldError('cert', BLANK));
    });

    it("a public key another device's certificate holds is a 422 on cert", async () => {
      const first = await device();
      const second = await device();
      const cert = await selfSigned({ cn: first });
      await add(first, cert).expect(201);
      await add(second, await selfSigned({ cn: second, keys: cert.keys })).expect(
        422,
        fieldError('cert', KEY_OF_ANOTHER_DEVICE),
      );
      // The same device may hold several certificates for one key (a renewal).
      await add(first, await selfSigned({ cn: first, keys: cert.keys })).expect(201);
    });

    it('a certificate signed by a CA another organization registered is a 422 on cert', async () => {
      const foreign = await registeredCa({}, other.org, other.admin);
      const identifier = await device();
      await add(identifier, await leaf(foreign, { cn: identifier })).expect(
        422,
        fieldError('cert', CA_OF_ANOTHER_ORG),
      );
    });

    it('an unknown device, a device of another product or organization: the constant 404', async () => {
      const identifier = await device();
      const cert = await selfSigned({ cn: identifier });
      const otherProduct = await t.fixtures.product(admin, org);
      await t
        .http()
        .post(certs('no-such-device'))
        .set(admin.auth)
        .send({ cert: cert.b64 })
        .expect(404, NOT_FOUND);
      await t.http().get(certs('no-such-device')).set(admin.auth).expect(404, NOT_FOUND);
      await t
        .http()
        .post(certs(identifier, otherProduct))
        .set(admin.auth)
        .send({ cert: cert.b64 })
        .expect(404, NOT_FOUND);
      await t.http().get(certs(identifier)).set(other.admin.auth).expect(404, NOT_FOUND);
      await t
        .http()
        .get(`${certs(identifier)}/12345`)
        .set(admin.auth)
        .expect(404, NOT_FOUND);
    });

    describe('POST .../devices/auth', () => {
      const UNAUTHORIZED_CERT = { status: 'Unauthorized' };
      const auth = (certificate: unknown, user: TestUser = admin, p = product, o = org) =>
        t.http().post(`/api/orgs/${o}/products/${p}/devices/auth`).set(user.auth).send({ certificate });

      it('answers the device a registered certificate belongs to, as GET .../devices/{identifier} does', async () => {
        const identifier = await device();
        const cert = await leaf(await ca(), { cn: identifier });
        await add(identifier, cert).expect(201);
        const shown = await t
          .http()
          .get(`/api/orgs/${org}/products/${product}/devices/${identifier}`)
          .set(admin.auth)
          .expect(200);
        // A view member may ask (NervesHub's role); the PEM itself is accepted as well as its base64.
        await auth(cert.b64, viewer).expect(200, shown.body);
        await auth(cert.pem, viewer).expect(200, shown.body);
        expect(shown.body.data.identifier).toBe(identifier);
        // Nothing is changed or audited.
        expect(await audits('device.auth', identifier)).toEqual([]);
      });

      it('anything else is 403 {"status":"Unauthorized"}', async () => {
        const identifier = await device();
        const registered = await selfSigned({ cn: identifier });
        await add(identifier, registered).expect(201);
        const b64 = (text: string) => Buffer.from(text).toString('base64');
        const unknown = await selfSigned({ cn: identifier });
        // The same key and subject, another certificate: only this exact certificate identifies the device.
        const sameKey = await selfSigned({ cn: identifier, keys: registered.keys });
        for (const certificate of [
          unknown.b64,
          sameKey.b64,
          'garbage!',
          b64('not a PEM at all'),
          b64('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n'),
          b64('-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQ==\n-----END PUBLIC KEY-----\n'),
          b64(`${registered.pem}\n${unknown.pem}`),
        ]) {
          await auth(certificate).expect(403, UNAUTHORIZED_CERT);
        }
      });

      it('another product\'s or organization\'s device certificate is 403 {"status":"Unauthorized"}', async () => {
        const identifier = await device();
        const cert = await selfSigned({ cn: identifier });
        await add(identifier, cert).expect(201);
        const otherProduct = await t.fixtures.product(admin, org);
        await auth(cert.b64, admin, otherProduct).expect(403, UNAUTHORIZED_CERT);
        const foreignProduct = await t.fixtures.product(other.admin, other.org);
        await auth(cert.b64, other.admin, foreignProduct, other.org).expect(403, UNAUTHORIZED_CERT);
        // The certificate is still the device's in its own product.
        await auth(cert.b64).expect(200);
      });

      it('the usual answers before the certificate: non-member and unknown product 404, no body 422, read token 403', async () => {
        const identifier = await device();
        const cert = await selfSigned({ cn: identifier });
        await add(identifier, cert).expect(201);
        await auth(cert.b64, other.admin).expect(404, NOT_FOUND);
        await auth(cert.b64, admin, 'no-such-product').expect(404, NOT_FOUND);
        await t
          .http()
          .post(`/api/orgs/${org}/products/${product}/devices/auth`)
          .set(admin.auth)
          .send({})
          .expect(422, fieldError('certificate', BLANK));
        const readToken = await t.fixtures.token(admin.user, { scope: 'read' });
        await t
          .http()
          .post(`/api/orgs/${org}/products/${product}/devices/auth`)
          .set({ Authorization: `Bearer ${readToken}` })
          .send({ certificate: cert.b64 })
          .expect(403, { error: 'forbidden' });
      });
    });

    it('a view member can read but not register; deleting the device deletes its certificates', async () => {
      const identifier = await device();
      const cert = await selfSigned({ cn: identifier });
      await add(identifier, cert, viewer).expect(403, ROLE_TOO_LOW);
      await add(identifier, cert).expect(201);
      await t.http().get(certs(identifier)).set(viewer.auth).expect(200);
      await t
        .http()
        .delete(`/api/orgs/${org}/products/${product}/devices/${identifier}`)
        .set(admin.auth)
        .expect(204);
      const rows = await t.db.query('SELECT 1 FROM device_certificates WHERE fingerprint = $1', [
        sha256(cert.cert.rawData),
      ]);
      expect(rows).toEqual([]);
    });
  });
});
