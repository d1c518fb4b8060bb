import {
  DeploymentOrchestrator,
  ORCHESTRATOR_TIMING,
} from '../src/deployments/orchestrator/deployment-orchestrator.service';
import { LeadershipLocksRepository } from '../src/deployments/orchestrator/leadership-locks.repository';
import { DeviceAuthenticator } from '../src/device-auth/device-authenticator';
import { DeviceSocketClient, type Frame } from './support/device-socket-client';
import { type TestUser, unique } from './support/fixtures';
import { listenOnLoopback } from './support/listening-app';
import { createTestApp, type TestApp } from './support/test-app';
import { FakeAuthenticator } from './support/fake-authenticator';
import { eventually } from './support/eventually';

const OLD_UUID = '11111111-2222-5333-8444-555555555555';
const TIMING = { sweepMs: 300, debounceMs: 20, onlineBatchMs: 20 };

/** Rollout settings of a group, as `POST .../deployments` takes them. */
interface GroupSettings {
  concurrent_updates?: number;
  inflight_update_expiration_minutes?: number;
  device_failure_threshold?: number;
  device_failure_rate_seconds?: number;
  device_failure_rate_amount?: number;
  failure_threshold?: number;
  penalty_timeout_minutes?: number;
  queue_management?: 'FIFO' | 'LIFO';
}

/** A group as the tests use it: its name (the API's), and its id and release 1 (the database's). */
interface Group {
  name: string;
  id: string;
  releaseId: string;
}

/** What a device reports on join: the platform and architecture of the fixtures' firmware (the groups'). */
function joinParams(uuid: string) {
  return {
    nerves_fw_uuid: uuid,
    nerves_fw_product: 'p',
    nerves_fw_version: '1.0.0',
    nerves_fw_platform: 'rpi4',
    nerves_fw_architecture: 'aarch64',
    device_api_version: '2.0.0',
    currently_downloading_uuid: null,
  };
}

/** A simulated device: its socket, and every `update` frame it received (never consumed by `next`). */
class Device {
  updates: Record<string, unknown>[] = [];
  client!: DeviceSocketClient;

  constructor(readonly identifier: string) {}

  async connect(url: string, uuid = OLD_UUID): Promise<void> {
    this.client = await DeviceSocketClient.connect(url, { 'x-test-device': this.identifier });
    this.client.ws.on('message', (data: Buffer) => {
      const frame = JSON.parse(data.toString('utf8')) as Frame;
      if (frame[2] === 'device' && frame[3] === 'update')
        this.updates.push(frame[4] as Record<string, unknown>);
    });
    const reply = await this.client.join('device', joinParams(uuid));
    expect(reply[4]).toEqual({ status: 'ok', response: {} });
  }

  /** The update applied: reboot and rejoin with the new firmware. */
  async complete(url: string, uuid: string): Promise<void> {
    await this.client.close();
    await this.connect(url, uuid);
  }

  async fail(status: 'failed' | 'ignored' = 'failed'): Promise<void> {
    this.client.push('device', 'status_update', { status, reason: 'test' });
    await this.client.heartbeat();
  }
}

describe('deployment orchestrator (two instances)', () => {
  const authA = new FakeAuthenticator();
  const authB = new FakeAuthenticator();
  let a: TestApp;
  let b: TestApp;
  let urlA: string;
  let urlB: string;
  let admin: TestUser;
  let org: string;
  let product: string;
  let newUuid: string;
  const devices: Device[] = [];

  beforeAll(async () => {
    const timing = { provide: ORCHESTRATOR_TIMING, useValue: TIMING };
    a = await createTestApp({}, { overrides: [{ provide: DeviceAuthenticator, useValue: authA }, timing] });
    authA.db = a.db;
    urlA = (await listenOnLoopback(a)).url;
    b = await createTestApp(
      {},
      { databaseUrl: a.databaseUrl, overrides: [{ provide: DeviceAuthenticator, useValue: authB }, timing] },
    );
    authB.db = b.db;
    urlB = (await listenOnLoopback(b)).url;
    admin = await a.fixtures.user();
    org = await a.fixtures.org(admin);
    product = await a.fixtures.product(admin, org);
    newUuid = (await a.fixtures.firmware(admin, org, product, { version: '2.0.0' })).uuid;
  }, 60_000);

  afterAll(async () => {
    for (const device of devices) await device.client?.close().catch(() => undefined);
    await b?.close();
    await a?.close();
  });

  const deployments = () => `/api/orgs/${org}/products/${product}/deployments`;

  /**
   * `count` devices of the product tagged with a tag of their own, connected one after another (alternating
   * instances), and a new inactive group whose conditions are that tag: the devices connected join it when it is
   * turned on (`start`), the others when they connect to an active group.
   */
  async function fleet(count: number, settings: GroupSettings, connect = true) {
    const tag = unique('fleet-');
    const ids = Array.from({ length: count }, () => unique('dev-'));
    await a.fixtures.devices(admin, org, product, ids, { tags: [tag] });
    const name = unique('group-');
    await a
      .http()
      .post(deployments())
      .set(admin.auth)
      .send({
        name,
        firmware: newUuid,
        is_active: false,
        conditions: { version: '', tags: [tag] },
        ...settings,
      })
      .expect(201);
    const fleetDevices = ids.map((id) => new Device(id));
    devices.push(...fleetDevices);
    if (connect) {
      for (const [i, device] of fleetDevices.entries()) await device.connect(i % 2 === 0 ? urlA : urlB);
    }
    return { group: await groupRow(name), devices: fleetDevices, tag };
  }

  /** The group's id (the update frames' deployment_id) and release: the API names groups, never shows ids. */
  async function groupRow(name: string): Promise<Group> {
    const [row] = await a.db.query<{ id: string; release_id: string }[]>(
      `SELECT id, current_release_id AS release_id FROM deployment_groups WHERE name = $1`,
      [name],
    );
    return { name, id: row.id, releaseId: row.release_id };
  }

  /** Turns the group on (or off), as a person does. */
  async function setState(group: Group, state: 'on' | 'off') {
    await a.http().patch(`${deployments()}/${group.name}`).set(admin.auth).send({ state }).expect(200);
  }

  const start = (group: Group) => setState(group, 'on');

  const inFlight = async (groupId: string) =>
    Number(
      (
        await a.db.query<{ n: string }[]>(
          `SELECT count(*) AS n FROM pending_updates WHERE deployment_group_id = $1`,
          [groupId],
        )
      )[0].n,
    );

  const deviceRow = async (identifier: string) =>
    (
      await a.db.query<{ update_attempts: Date[]; updates_blocked_until: Date | null }[]>(
        `SELECT update_attempts, updates_blocked_until FROM devices WHERE identifier = $1`,
        [identifier],
      )
    )[0];

  const releaseFailures = async (releaseId: string) =>
    Number(
      (
        await a.db.query<{ n: number }[]>(`SELECT failed_count AS n FROM deployment_releases WHERE id = $1`, [
          releaseId,
        ])
      )[0].n,
    );

  it('never has more than concurrent_updates in flight; completion by rejoin frees a slot; one frame each', async () => {
    const { group, devices: fleetDevices } = await fleet(8, { concurrent_updates: 3 });
    await start(group);
    let maxInFlight = 0;
    const completed = new Set<string>();
    while (completed.size < fleetDevices.length) {
      const receiving = await eventually(
        async () => fleetDevices.filter((d) => d.updates.length > 0 && !completed.has(d.identifier)),
        (list) => list.length > 0,
      );
      const frames = fleetDevices.filter((d) => d.updates.length > 0).length - completed.size;
      maxInFlight = Math.max(maxInFlight, frames, await inFlight(group.id));
      expect(frames).toBeLessThanOrEqual(3);
      const next = receiving[0];
      expect(next.updates[0]).toMatchObject({ update_available: true, deployment_id: Number(group.id) });
      expect((next.updates[0].firmware_meta as { uuid: string }).uuid).toBe(newUuid);
      await next.complete(fleetDevices.indexOf(next) % 2 === 0 ? urlA : urlB, newUuid);
      completed.add(next.identifier);
    }
    expect(maxInFlight).toBe(3);
    await eventually(
      () => inFlight(group.id),
      (n) => n === 0,
    );
    expect(await inFlight(group.id)).toBe(0);
    expect(fleetDevices.map((d) => d.updates.length)).toEqual(fleetDevices.map(() => 1));
  }, 60_000);

  it('claims racing on both instances never exceed concurrent_updates, and never claim a device twice', async () => {
    const { group, devices: fleetDevices } = await fleet(10, { concurrent_updates: 4 });
    // Its leader claims too (the change is published): one more racer.
    await start(group);
    const claims = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        (i % 2 === 0 ? a : b).app.get(DeploymentOrchestrator).claim(group.id),
      ),
    );
    const claimed = claims.flat();
    expect(new Set(claimed).size).toBe(claimed.length);
    expect(claimed.length).toBeLessThanOrEqual(4);
    expect(await inFlight(group.id)).toBe(4);
    const frames = () => fleetDevices.reduce((sum, d) => sum + d.updates.length, 0);
    await eventually(
      async () => frames(),
      (n) => n === 4,
    );
    await b.app.get(DeploymentOrchestrator).sweep();
    await a.app.get(DeploymentOrchestrator).sweep();
    expect(frames()).toBe(4);
    expect(fleetDevices.every((d) => d.updates.length <= 1)).toBe(true);
  }, 30_000);

  it('debounces: a storm of joins becomes a few claims', async () => {
    const { group, devices: fleetDevices } = await fleet(30, { concurrent_updates: 100 }, false);
    await start(group);
    await a.app.get(DeploymentOrchestrator).sweep();
    await b.app.get(DeploymentOrchestrator).sweep();
    const spies = [a, b].map((t) => jest.spyOn(t.app.get(DeploymentOrchestrator), 'claim'));
    try {
      await Promise.all(fleetDevices.map((d, i) => d.connect(i % 2 === 0 ? urlA : urlB)));
      await eventually(
        async () => fleetDevices.filter((d) => d.updates.length > 0).length,
        (n) => n === 30,
      );
      expect(fleetDevices.map((d) => d.updates.length)).toEqual(fleetDevices.map(() => 1));
      const claims = spies.reduce((sum, spy) => sum + spy.mock.calls.length, 0);
      expect(claims).toBeLessThan(15);
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
  }, 30_000);

  it.each([
    ['FIFO', 0],
    ['LIFO', 2],
  ] as const)(
    '%s: the device connected %s-th first is updated first',
    async (queue, index) => {
      const { group, devices: fleetDevices } = await fleet(3, {
        concurrent_updates: 1,
        queue_management: queue,
      });
      await start(group);
      await eventually(
        async () => fleetDevices.filter((d) => d.updates.length > 0),
        (l) => l.length > 0,
      );
      expect(fleetDevices.map((d) => d.updates.length)).toEqual([0, 1, 2].map((i) => (i === index ? 1 : 0)));
    },
    30_000,
  );

  it('skips devices not connected, in the penalty box, with updates disabled or already on the release', async () => {
    const { group, devices: fleetDevices } = await fleet(5, { concurrent_updates: 10 }, false);
    const [offline, blocked, disabled, current, eligible] = fleetDevices;
    await blocked.connect(urlA);
    await disabled.connect(urlB);
    await current.connect(urlA, newUuid);
    await eligible.connect(urlB);
    // Only failed updates put a device in the penalty box (tested below): written by hand here.
    await a.db.query(
      `UPDATE devices SET updates_blocked_until = now() + interval '1 hour' WHERE identifier = $1`,
      [blocked.identifier],
    );
    await a
      .http()
      .patch(`/api/orgs/${org}/products/${product}/devices/${disabled.identifier}`)
      .set(admin.auth)
      .send({ updates_enabled: false })
      .expect(200);
    await start(group);
    await eventually(
      async () => eligible.updates.length,
      (n) => n > 0,
    );
    // Several sweeps later, still nobody else.
    await b.app.get(DeploymentOrchestrator).sweep();
    await a.app.get(DeploymentOrchestrator).sweep();
    expect(await inFlight(group.id)).toBe(1);
    expect([offline, blocked, disabled, current, eligible].map((d) => d.updates.length)).toEqual([
      0, 0, 0, 0, 1,
    ]);
    // The offline device connects: it is picked.
    await offline.connect(urlA);
    await eventually(
      async () => offline.updates.length,
      (n) => n > 0,
    );
    expect(offline.updates).toHaveLength(1);
  }, 30_000);

  it('a failed or ignored update puts the device in the penalty box at once, with an attempt', async () => {
    const { group, devices: fleetDevices } = await fleet(2, {
      concurrent_updates: 2,
      device_failure_threshold: 50,
      failure_threshold: 100,
    });
    const [failing, ignoring] = fleetDevices;
    // A webhook that wants the failures (its host never resolves in tests): their events are in the outbox.
    await a
      .http()
      .post(`/api/orgs/${org}/webhooks`)
      .set(admin.auth)
      .send({ url: 'https://hooks.invalid/x', event_types: ['update.failed', 'device.penalty_box_entered'] })
      .expect(201);
    await start(group);
    await eventually(
      async () => failing.updates.length + ignoring.updates.length,
      (n) => n === 2,
    );
    await failing.fail();
    await ignoring.fail('ignored');
    for (const device of [failing, ignoring]) {
      const row = await eventually(
        () => deviceRow(device.identifier),
        (r) => r.updates_blocked_until !== null,
      );
      expect(row.updates_blocked_until!.getTime()).toBeGreaterThan(Date.now() + 23 * 3600_000);
      expect(row.update_attempts).toHaveLength(1);
    }
    expect(await releaseFailures(group.releaseId)).toBe(2);
    const events = await a.db.query<{ type: string; subject: string; data: Record<string, unknown> }[]>(
      `SELECT type, subject, data FROM webhook_events WHERE subject = ANY($1) ORDER BY id`,
      [[failing, ignoring].map((d) => `device:${d.identifier}`)],
    );
    for (const device of [failing, ignoring]) {
      expect(events.filter((e) => e.subject === `device:${device.identifier}`)).toEqual([
        {
          type: 'update.failed',
          subject: `device:${device.identifier}`,
          data: {
            identifier: device.identifier,
            product,
            deployment_group: group.name,
            release: 1,
            firmware_uuid: newUuid,
            firmware_version: '2.0.0',
            via: 'deployment_group',
            reason: 'reported',
            actor: { type: 'system' },
          },
        },
        {
          type: 'device.penalty_box_entered',
          subject: `device:${device.identifier}`,
          data: {
            identifier: device.identifier,
            product,
            deployment_group: group.name,
            penalty_timeout_minutes: expect.any(Number),
            actor: { type: 'system' },
          },
        },
      ]);
    }
    await b.app.get(DeploymentOrchestrator).sweep();
    await a.app.get(DeploymentOrchestrator).sweep();
    expect(await inFlight(group.id)).toBe(0);
    expect([failing.updates.length, ignoring.updates.length]).toEqual([1, 1]);
  }, 30_000);

  it('a manual upgrade the device reports failed sends update.failed (via manual), with no attempt or penalty box', async () => {
    const { devices: fleetDevices } = await fleet(1, {});
    const [device] = fleetDevices;
    // Only the failures are wanted: the tests after this one roll out with no webhook writing their progress.
    const webhook = await a
      .http()
      .post(`/api/orgs/${org}/webhooks`)
      .set(admin.auth)
      .send({ url: 'https://hooks.invalid/manual', event_types: ['update.failed'] })
      .expect(201);
    await a
      .http()
      .post(`/api/orgs/${org}/products/${product}/devices/${device.identifier}/upgrade`)
      .set(admin.auth)
      .send({ uuid: newUuid })
      .expect(204);
    await eventually(
      async () => device.updates.length,
      (n) => n === 1,
    );
    await device.fail();
    const failed = await eventually(
      () =>
        a.db.query<{ data: Record<string, unknown> }[]>(
          `SELECT data FROM webhook_events WHERE subject = $1 AND type = 'update.failed'`,
          [`device:${device.identifier}`],
        ),
      (rows) => rows.length > 0,
    );
    expect(failed.map((e) => e.data)).toEqual([
      {
        identifier: device.identifier,
        product,
        deployment_group: null,
        release: null,
        firmware_uuid: newUuid,
        firmware_version: '2.0.0',
        via: 'manual',
        reason: 'reported',
        actor: { type: 'system' },
      },
    ]);
    const row = await deviceRow(device.identifier);
    expect(row.update_attempts).toEqual([]);
    expect(row.updates_blocked_until).toBeNull();
    await a.http().delete(`/api/orgs/${org}/webhooks/${webhook.body.data.id}`).set(admin.auth).expect(204);
    expect(
      await a.db.query(
        `SELECT 1 FROM pending_updates WHERE device_id = (SELECT id FROM devices WHERE identifier = $1)`,
        [device.identifier],
      ),
    ).toEqual([]);
  }, 30_000);

  /** The group's in-flight updates run out: each ends as an expired attempt (no penalty box by itself). */
  async function expireInFlight(groupId: string): Promise<void> {
    // The hour would be long to wait: the rows are made to expire by hand.
    await a.db.query(
      `UPDATE pending_updates SET expires_at = now() - interval '1 second' WHERE deployment_group_id = $1`,
      [groupId],
    );
    await a.app.get(DeploymentOrchestrator).sweep();
  }

  it('an installed update clears the attempts an earlier one left (the join that reports it)', async () => {
    const { group, devices: fleetDevices } = await fleet(1, {
      concurrent_updates: 1,
      device_failure_threshold: 3,
      failure_threshold: 100,
    });
    const [device] = fleetDevices;
    await start(group);
    await eventually(
      async () => device.updates.length,
      (n) => n === 1,
    );
    await expireInFlight(group.id);
    expect((await deviceRow(device.identifier)).update_attempts).toHaveLength(1);
    await eventually(
      async () => device.updates.length,
      (n) => n === 2,
    );
    await device.complete(urlA, newUuid);
    await eventually(
      () => deviceRow(device.identifier),
      (row) => row.update_attempts.length === 0,
    );
    expect(await deviceRow(device.identifier)).toEqual({ update_attempts: [], updates_blocked_until: null });
    // The join clears the attempts; the completion that ends the in-flight update is the statement after it.
    await eventually(
      () => inFlight(group.id),
      (n) => n === 0,
    );
  }, 30_000);

  it('expired attempts: tried again until device_failure_threshold, then the penalty box', async () => {
    const { group, devices: fleetDevices } = await fleet(1, {
      concurrent_updates: 1,
      device_failure_threshold: 2,
      failure_threshold: 100,
    });
    const [device] = fleetDevices;
    await start(group);
    await eventually(
      async () => device.updates.length,
      (n) => n === 1,
    );
    await expireInFlight(group.id);
    expect((await deviceRow(device.identifier)).update_attempts).toHaveLength(1);
    expect((await deviceRow(device.identifier)).updates_blocked_until).toBeNull();
    // Not blocked yet: it is tried again.
    await eventually(
      async () => device.updates.length,
      (n) => n === 2,
    );
    await expireInFlight(group.id);
    const row = await eventually(
      () => deviceRow(device.identifier),
      (r) => r.updates_blocked_until !== null,
    );
    expect(row.updates_blocked_until!.getTime()).toBeGreaterThan(Date.now() + 23 * 3600_000);
    expect(row.update_attempts).toHaveLength(2);
    expect(await releaseFailures(group.releaseId)).toBe(2);
    await b.app.get(DeploymentOrchestrator).sweep();
    await a.app.get(DeploymentOrchestrator).sweep();
    expect(await inFlight(group.id)).toBe(0);
    expect(device.updates).toHaveLength(2);
  }, 30_000);

  it('expired attempts: the penalty box at device_failure_rate_amount within device_failure_rate_seconds', async () => {
    const { group, devices: fleetDevices } = await fleet(1, {
      concurrent_updates: 1,
      device_failure_threshold: 50,
      device_failure_rate_amount: 2,
      device_failure_rate_seconds: 60,
    });
    const [device] = fleetDevices;
    // An old attempt does not count towards the rate (no API writes an attempt an hour old).
    await a.db.query(
      `UPDATE devices SET update_attempts = ARRAY[now() - interval '1 hour'] WHERE identifier = $1`,
      [device.identifier],
    );
    await start(group);
    await eventually(
      async () => device.updates.length,
      (n) => n === 1,
    );
    await expireInFlight(group.id);
    await eventually(
      async () => device.updates.length,
      (n) => n === 2,
    );
    expect((await deviceRow(device.identifier)).update_attempts).toHaveLength(2);
    expect((await deviceRow(device.identifier)).updates_blocked_until).toBeNull();
    await expireInFlight(group.id);
    const row = await eventually(
      () => deviceRow(device.identifier),
      (r) => r.updates_blocked_until !== null,
    );
    expect(row.updates_blocked_until).not.toBeNull();
  }, 30_000);

  it('expires in-flight updates past expires_at: counted as a failed attempt', async () => {
    const { group, devices: fleetDevices } = await fleet(1, {
      concurrent_updates: 1,
      device_failure_threshold: 1,
    });
    const [device] = fleetDevices;
    await start(group);
    await eventually(
      async () => device.updates.length,
      (n) => n === 1,
    );
    // The hour would be long to wait: the row is made to expire by hand.
    await a.db.query(
      `UPDATE pending_updates SET expires_at = now() - interval '1 second' WHERE deployment_group_id = $1`,
      [group.id],
    );
    const row = await eventually(
      () => deviceRow(device.identifier),
      (r) => r.updates_blocked_until !== null,
    );
    expect(row.updates_blocked_until).not.toBeNull();
    expect(await inFlight(group.id)).toBe(0);
    expect(await releaseFailures(group.releaseId)).toBe(1);
  }, 30_000);

  it("expires a paused group's in-flight updates too", async () => {
    const { group, devices: fleetDevices } = await fleet(1, { concurrent_updates: 1 });
    const [device] = fleetDevices;
    await start(group);
    await eventually(
      async () => device.updates.length,
      (n) => n === 1,
    );
    await setState(group, 'off');
    // The hour would be long to wait: the row is made to expire by hand.
    await a.db.query(`UPDATE pending_updates SET expires_at = now() WHERE deployment_group_id = $1`, [
      group.id,
    ]);
    await a.app.get(DeploymentOrchestrator).sweep();
    expect(await inFlight(group.id)).toBe(0);
    expect((await deviceRow(device.identifier)).update_attempts).toHaveLength(1);
    expect(await releaseFailures(group.releaseId)).toBe(1);
  }, 30_000);

  it('pauses the group when the release fails failure_threshold times; resumes only when re-activated', async () => {
    const { group, devices: fleetDevices } = await fleet(
      4,
      { concurrent_updates: 2, failure_threshold: 2, device_failure_threshold: 1 },
      false,
    );
    const [first, second, third, fourth] = fleetDevices;
    await first.connect(urlA);
    await second.connect(urlB);
    await start(group);
    await eventually(
      async () => first.updates.length + second.updates.length,
      (n) => n === 2,
    );
    // A claim not sent yet (its device is away, or its claimer died): the pause takes it back.
    await a.db.query(
      `INSERT INTO pending_updates (device_id, firmware_id, deployment_group_id, deployment_release_id, expires_at)
       SELECT d.id, r.firmware_id, r.deployment_group_id, r.id, now() + interval '1 hour'
         FROM devices d, deployment_releases r WHERE d.identifier = $1 AND r.id = $2`,
      [third.identifier, group.releaseId],
    );
    // Both fail (and go in the penalty box): the release has failed twice.
    await first.fail();
    await second.fail();
    const paused = await eventually(
      async () =>
        (await a.http().get(`${deployments()}/${group.name}`).set(admin.auth).expect(200)).body.data as {
          is_active: boolean;
          paused_reason: string | null;
          paused_at: string | null;
        },
      (g) => !g.is_active,
    );
    expect(paused.is_active).toBe(false);
    expect(paused.paused_reason).toBe('paused by fleethub: 2 updates of release 1 failed');
    expect(paused.paused_at).not.toBeNull();
    const audit = await a.db.query<
      { action: string; actor_type: string; details: Record<string, unknown> }[]
    >(
      `SELECT action, actor_type, details FROM audit_logs WHERE action = 'deployment_group.pause' AND target_id =
         (SELECT name FROM deployment_groups WHERE id = $1)`,
      [group.id],
    );
    expect(audit).toEqual([
      {
        action: 'deployment_group.pause',
        actor_type: 'system',
        details: {
          product: expect.any(String),
          reason: paused.paused_reason,
          release: 1,
          failed_count: 2,
          withdrawn_updates: 1,
        },
      },
    ]);
    const metrics = [a, b].map(async (t) => (await t.http().get('/metrics')).text);
    const texts = await Promise.all(metrics);
    expect(texts.some((text) => /^fleethub_deployment_groups_paused_total 1$/m.test(text))).toBe(true);
    // Paused: devices coming online and the sweeps start nobody.
    await third.connect(urlA);
    await fourth.connect(urlB);
    await a.app.get(DeploymentOrchestrator).sweep();
    await b.app.get(DeploymentOrchestrator).sweep();
    expect(await inFlight(group.id)).toBe(0);
    expect(fleetDevices.map((d) => d.updates.length)).toEqual([1, 1, 0, 0]);
    // A person activates it again: the two waiting devices are started.
    await start(group);
    await eventually(
      async () => third.updates.length + fourth.updates.length,
      (n) => n === 2,
    );
    expect(fleetDevices.map((d) => d.updates.length)).toEqual([1, 1, 1, 1]);
    expect(await inFlight(group.id)).toBe(2);
  }, 30_000);

  it('an update claimed but never sent (its claimer died) is sent once by the leader, never again', async () => {
    const { group, devices: fleetDevices } = await fleet(1, { concurrent_updates: 1 });
    const [device] = fleetDevices;
    // The claim of an instance that died before sending: a row no API writes.
    await a.db.query(
      `INSERT INTO pending_updates (device_id, firmware_id, deployment_group_id, deployment_release_id, expires_at)
       SELECT d.id, r.firmware_id, r.deployment_group_id, r.id, now() + interval '1 hour'
         FROM devices d, deployment_releases r WHERE d.identifier = $1 AND r.id = $2`,
      [device.identifier, group.releaseId],
    );
    await start(group);
    await eventually(
      async () => device.updates.length,
      (n) => n === 1,
    );
    for (let i = 0; i < 3; i++) {
      await a.app.get(DeploymentOrchestrator).sweep();
      await b.app.get(DeploymentOrchestrator).sweep();
      // A change of the group through the API: its leader looks at it again.
      await a
        .http()
        .patch(`${deployments()}/${group.name}`)
        .set(admin.auth)
        .send({ notes: `look again ${i}` })
        .expect(200);
    }
    await device.client.heartbeat();
    expect(device.updates).toHaveLength(1);
    expect(device.updates[0]).toMatchObject({ deployment_id: Number(group.id) });
  }, 30_000);

  it("a connected device whose tags come to match an active group's conditions is updated", async () => {
    const { group, devices: fleetDevices, tag } = await fleet(1, { concurrent_updates: 5 });
    await start(group);
    await eventually(
      async () => fleetDevices[0].updates.length,
      (n) => n === 1,
    );
    const identifier = await a.fixtures.device(admin, org, product, unique('dev-'), { tags: ['elsewhere'] });
    const late = new Device(identifier);
    devices.push(late);
    await late.connect(urlB);
    const record = `/api/orgs/${org}/products/${product}/devices/${identifier}`;
    // Connected, eligible but for its tags: no group, nothing sent, whatever the sweeps.
    await a.app.get(DeploymentOrchestrator).sweep();
    await b.app.get(DeploymentOrchestrator).sweep();
    await late.client.heartbeat();
    expect((await a.http().get(record).set(admin.auth).expect(200)).body.data.deployment_group).toBeNull();
    expect(late.updates).toHaveLength(0);
    // Its tags now match: it joins the group and gets its update.
    await a
      .http()
      .patch(record)
      .set(admin.auth)
      .send({ tags: [tag, 'elsewhere'] })
      .expect(200);
    expect((await a.http().get(record).set(admin.auth).expect(200)).body.data.deployment_group).toMatchObject(
      {
        name: group.name,
        is_active: true,
      },
    );
    await eventually(
      async () => late.updates.length,
      (n) => n > 0,
    );
    expect(late.updates).toHaveLength(1);
    expect(late.updates[0]).toMatchObject({ update_available: true, deployment_id: Number(group.id) });
    expect(await inFlight(group.id)).toBe(2);
  }, 30_000);

  it.each(['loses its leadership connection', 'stops orchestrating'] as const)(
    'the leader %s mid-rollout: the rollout completes, one update frame per device',
    async (death) => {
      const { group, devices: fleetDevices } = await fleet(6, { concurrent_updates: 2 });
      await start(group);
      const leaderOf = () => [a, b].find((t) => t.app.get(LeadershipLocksRepository).held.has(group.id));
      const first = await eventually(
        async () => fleetDevices.filter((d) => d.updates.length > 0),
        (l) => l.length === 2,
      );
      const leader = leaderOf()!;
      expect(leader).toBeDefined();
      const survivor = leader === a ? b : a;
      if (death === 'stops orchestrating') {
        // The leader's orchestration dies (its leadership connection closes); its gateway keeps the sockets.
        await leader.app.get(DeploymentOrchestrator).onApplicationShutdown();
      } else {
        // Its connection is cut (no cleanup on its side): the locks go with it; whoever sweeps first leads.
        await a.db.query(`SELECT pg_terminate_backend($1)`, [
          leader.app.get(LeadershipLocksRepository).backendPid,
        ]);
      }
      const urlOf = (d: Device) => (fleetDevices.indexOf(d) % 2 === 0 ? urlA : urlB);
      for (const device of first) await device.complete(urlOf(device), newUuid);
      const done = new Set(first);
      while (done.size < fleetDevices.length) {
        const next = await eventually(
          async () => fleetDevices.filter((d) => d.updates.length > 0 && !done.has(d)),
          (l) => l.length > 0,
        );
        expect(fleetDevices.filter((d) => d.updates.length > 0).length - done.size).toBeLessThanOrEqual(2);
        await next[0].complete(urlOf(next[0]), newUuid);
        done.add(next[0]);
      }
      if (death === 'stops orchestrating')
        expect(survivor.app.get(LeadershipLocksRepository).held.has(group.id)).toBe(true);
      expect(fleetDevices.map((d) => d.updates.length)).toEqual(fleetDevices.map(() => 1));
    },
    60_000,
  );
});

describe('deployment orchestrator: a group change through the API', () => {
  const auth = new FakeAuthenticator();
  let t: TestApp;
  let url: string;
  const fleetDevices: Device[] = [];

  beforeAll(async () => {
    // No sweep after the one at start: only the change's own publication can start the rollout.
    const timing = { provide: ORCHESTRATOR_TIMING, useValue: { ...TIMING, sweepMs: 600_000 } };
    t = await createTestApp({}, { overrides: [{ provide: DeviceAuthenticator, useValue: auth }, timing] });
    auth.db = t.db;
    url = (await listenOnLoopback(t)).url;
  }, 60_000);

  afterAll(async () => {
    for (const device of fleetDevices) await device.client?.close().catch(() => undefined);
    await t?.close();
  });

  it('reaches the leader at once: state on, the connected members get their frames without a sweep', async () => {
    const admin = await t.fixtures.user();
    const org = await t.fixtures.org(admin);
    const product = await t.fixtures.product(admin, org);
    const firmware = (await t.fixtures.firmware(admin, org, product, { version: '2.0.0' })).uuid;
    const ids = Array.from({ length: 3 }, () => unique('dev-'));
    await t.fixtures.devices(admin, org, product, ids, { tags: ['prompt'] });
    const base = `/api/orgs/${org}/products/${product}/deployments`;
    await t
      .http()
      .post(base)
      .set(admin.auth)
      .send({ name: 'prompt', firmware, conditions: { version: '~> 1.0', tags: ['prompt'] } })
      .expect(201);
    for (const id of ids) {
      const device = new Device(id);
      fleetDevices.push(device);
      await device.connect(url);
    }
    const orchestrator = t.app.get(DeploymentOrchestrator);
    const sweep = jest.spyOn(orchestrator, 'sweep');
    try {
      const turnedOn = Date.now();
      await t.http().patch(`${base}/prompt`).set(admin.auth).send({ state: 'on' }).expect(200);
      await eventually(
        async () => fleetDevices.filter((d) => d.updates.length > 0).length,
        (n) => n === 3,
        2_000,
      );
      expect(Date.now() - turnedOn).toBeLessThan(2_000);
      expect(fleetDevices.map((d) => d.updates.length)).toEqual([1, 1, 1]);
      expect((fleetDevices[0].updates[0].firmware_meta as { uuid: string }).uuid).toBe(firmware);
      expect(sweep).not.toHaveBeenCalled();
    } finally {
      sweep.mockRestore();
    }
  }, 60_000);
});
