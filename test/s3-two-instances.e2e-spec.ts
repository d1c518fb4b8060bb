import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Simulator, type UpdateOutcome } from '../src/cli/simulator';
import { computeMetaUuid } from '../src/firmware/fwup';
import { DeviceLinkService } from '../src/gateway/device-link.service';
import { FirmwareDownloads } from '../src/gateway/firmware-downloads';
import { eventually } from './support/eventually';
import { buildFw } from './support/fw-builder';
import type { TestUser } from './support/fixtures';
import { listenOnLoopback } from './support/listening-app';
import { startS3Server, type TestS3Server } from './support/s3-server';
import { orgScenario } from './support/scenario';
import { createTestApp, type TestApp } from './support/test-app';

/**
 * The production layout: two instances on one database and one bucket. Firmware uploaded through A; a device on
 * B gets a presigned URL of the object, downloads it from the store (never through fleethub), applies it and
 * rejoins with the new firmware; the update completes.
 */
describe('two instances sharing an object store', () => {
  let s3: TestS3Server;
  let a: TestApp;
  let b: TestApp;
  let bUrl: string;
  let admin: TestUser;
  let org: string;
  let dir: string;
  let simulator: Simulator | null = null;
  const product = 'shared-store';

  beforeAll(async () => {
    s3 = await startS3Server();
    ({ t: a, admin, org } = await orgScenario({ env: s3.env('fleet/'), product }));
    b = await createTestApp(s3.env('fleet/'), { databaseUrl: a.databaseUrl });
    await listenOnLoopback(a);
    ({ url: bUrl } = await listenOnLoopback(b));
    dir = await mkdtemp(join(tmpdir(), 'fleethub-s3-two-'));
  });

  afterAll(async () => {
    await simulator?.stop();
    await b.close();
    await a.close();
    await s3.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('a device on B downloads what was uploaded through A straight from the bucket, and the update completes', async () => {
    const key = await a.fixtures.signingKey(org, 'release');
    const built = await buildFw(join(dir, 'fw.fw'), {
      signWith: key.privateKey,
      resources: [{ name: 'rootfs.img', size: 2 * 1024 * 1024 }],
      meta: { product, version: '2.0.0', platform: 'rpi4', architecture: 'aarch64' },
    });
    const uuid = computeMetaUuid(built.metaConf);
    await a
      .http()
      .post(`/api/orgs/${org}/products/${product}/firmwares`)
      .set(admin.auth)
      .attach('firmware', built.path)
      .expect(201);
    const client = new S3Client({
      endpoint: s3.endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    });
    const listed = await client.send(new ListObjectsV2Command({ Bucket: s3.bucket }));
    client.destroy();
    expect(listed.Contents?.map((o) => o.Size)).toEqual([built.size]);

    const secret = await a
      .http()
      .post(`/api/orgs/${org}/products/${product}/shared_secrets`)
      .set(admin.auth)
      .send({})
      .expect(201);
    const urls = jest.spyOn(b.app.get(DeviceLinkService), 'firmwareUrl');
    const servedByA = jest.spyOn(a.app.get(FirmwareDownloads), 'open');
    const servedByB = jest.spyOn(b.app.get(FirmwareDownloads), 'open');
    simulator = new Simulator({
      url: bUrl,
      key: secret.body.data.key,
      secret: secret.body.data.secret,
      devices: 1,
      prefix: 'store-',
      applyMs: 200,
      applyJitter: 0,
      firmware: { platform: 'rpi4', architecture: 'aarch64', version: '1.0.0' },
    });
    const sim = simulator;
    const [device] = sim.devices;
    const outcome = new Promise<UpdateOutcome>((resolve) => {
      device.onUpdateEnd = resolve;
    });
    sim.start(0);
    await eventually(
      async () => sim.connected,
      (n) => n === 1,
    );

    // Requested through A; B holds the device's socket and sends the `update` frame.
    await eventually(
      () => a.http().post(`/api/devices/store-0001/upgrade`).set(admin.auth).send({ uuid }),
      (res) => res.status === 204,
    );
    expect(await outcome).toEqual({ result: 'installed', uuid });
    const url = await (urls.mock.results[0].value as Promise<string>);
    expect(url.startsWith(`${s3.endpoint}/${s3.bucket}/fleet/`)).toBe(true);
    expect(new URL(url).searchParams.get('X-Amz-Signature')).toMatch(/^[0-9a-f]{64}$/);
    expect(servedByA).not.toHaveBeenCalled();
    expect(servedByB).not.toHaveBeenCalled();
    expect(device.bytes).toBe(built.size);

    type Shown = { version: string; online: boolean; firmware_metadata: { uuid: string } };
    const shown = await eventually(
      async () => (await a.http().get(`/api/devices/store-0001`).set(admin.auth)).body.data as Shown,
      (d) => d.firmware_metadata?.uuid === uuid && d.online,
    );
    expect(shown.version).toBe('2.0.0');
    const pending = await eventually(
      () => a.db.query(`SELECT 1 FROM pending_updates`),
      (rows: unknown[]) => rows.length === 0,
    );
    expect(pending).toEqual([]);
    expect(device.installed).toBe(1);
  });
});
