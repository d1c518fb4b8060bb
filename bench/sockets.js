/* eslint-disable -- plain Node.js (CommonJS) harness, outside the TypeScript build; the repository's type-aware rules target the TypeScript sources. */
'use strict';
/**
 * Device-socket scenarios, driven by the gateway's own simulator (src/gateway/simulator.ts, from the build):
 *  1. connect: N simulated devices connect (NH1 product shared secret, registered on first connect) and join;
 *     time until all have joined, server RSS per connected device.
 *  2. reconnect storm: every socket dropped at once by the client side, all devices reconnect immediately
 *     (no ramp); time until all have joined again.
 *  3. upgrade-to-frame: `POST /api/devices/{identifier}/upgrade` for M connected devices, one at a time;
 *     latency from sending the request until the device receives the `update` frame on its `device` channel.
 * The devices live in their own product (`bench-sockets`), so the 1M-device product's counts are untouched.
 */
const { join } = require('node:path');
const { randomBytes } = require('node:crypto');
const { rm } = require('node:fs/promises');

async function waitFor(predicate, timeoutMs, stepMs = 20) {
  const started = Date.now();
  while (!predicate()) {
    if (Date.now() - started > timeoutMs) return null;
    await new Promise((r) => setTimeout(r, stepMs));
  }
  return Date.now() - started;
}

const percentile = (values, p) => {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
};

async function socketScenarios({
  dist,
  fleethub,
  info,
  token,
  request,
  procStat,
  log,
  devices,
  upgrades,
  buildSignedFw,
  signingKey,
  benchData,
  db,
}) {
  const { Simulator } = require(join(dist, 'src/gateway/simulator.js'));
  const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const org = encodeURIComponent(info.org);
  const product = 'bench-sockets';
  const base = `${fleethub.url}/api/orgs/${org}/products/${product}`;

  // A fresh product for this run's simulated devices (removed at the end).
  await db.query(
    `DELETE FROM devices WHERE product_id IN (SELECT id FROM products WHERE org_id = $1 AND name = $2)`,
    [info.orgId, product],
  );
  await db.query(`DELETE FROM products WHERE org_id = $1 AND name = $2`, [info.orgId, product]);
  let res = await request(`${fleethub.url}/api/orgs/${org}/products`, {
    method: 'POST',
    headers: auth,
    body: JSON.stringify({ name: product }),
  });
  if (res.status !== 201) throw new Error(`create product: ${res.status} ${res.text.slice(0, 200)}`);
  res = await request(`${base}/shared_secrets`, { method: 'POST', headers: auth });
  if (res.status !== 201) throw new Error(`create shared secret: ${res.status} ${res.text.slice(0, 200)}`);
  const { key, secret } = res.json.data;

  const prefix = `bs${randomBytes(3).toString('hex')}-`;
  const out = { devices, upgrades };
  const rss0 = procStat(fleethub.child.pid).rss;

  // 1. connect
  let sim = new Simulator({ url: fleethub.url, key, secret, devices, prefix, heartbeatMs: 30_000 });
  let t = Date.now();
  sim.start(0);
  let took = await waitFor(() => sim.connected === devices, 120_000);
  out.connect = { all_joined_ms: took, joined: sim.connected, ramp_ms: 0 };
  await new Promise((r) => setTimeout(r, 1000));
  const rss1 = procStat(fleethub.child.pid).rss;
  out.connect.server_rss_before_mib = Number((rss0 / 2 ** 20).toFixed(1));
  out.connect.server_rss_connected_mib = Number((rss1 / 2 ** 20).toFixed(1));
  // RSS moves with GC too (an upload's garbage may be collected meanwhile): per device only when it grew.
  out.connect.server_kib_per_device =
    rss1 > rss0 ? Number(((rss1 - rss0) / 1024 / devices).toFixed(1)) : null;
  if (sim.connected < devices) {
    const missing = sim.devices
      .filter((d) => !d.connected)
      .map((d) => `${d.identifier} (${d.connects} connects)`);
    out.connect.not_joined = missing.slice(0, 10);
    out.connect.server_log_tail = fleethub
      .output()
      .split('\n')
      .filter((l) => l.trim())
      .slice(-15);
    log(
      `  not joined: ${missing.join(', ')}\n  server log tail:\n    ${out.connect.server_log_tail.join('\n    ')}`,
    );
  }
  log(
    `  connect ${devices}: all joined in ${took} ms (${sim.connected}/${devices}); server RSS ${(rss0 / 2 ** 20).toFixed(1)} → ${(rss1 / 2 ** 20).toFixed(1)} MiB`,
  );

  // 2. reconnect storm: drop every socket client-side, reconnect all at once.
  await sim.stop();
  await waitFor(() => sim.connected === 0, 10_000);
  await new Promise((r) => setTimeout(r, 500));
  sim = new Simulator({ url: fleethub.url, key, secret, devices, prefix, heartbeatMs: 30_000 });
  t = Date.now();
  sim.start(0);
  took = await waitFor(() => sim.connected === devices, 120_000);
  const reconnects = sim.devices.reduce((a, d) => a + d.connects, 0);
  out.reconnect_storm = { all_joined_ms: took, joined: sim.connected, connection_attempts: reconnects };
  log(
    `  reconnect storm ${devices}: all joined in ${took} ms (${sim.connected}/${devices}, ${reconnects} connections)`,
  );
  void t;

  // 3. upgrade-to-frame latency.
  const fwPath = join(benchData, 'bench-sockets.fw');
  const version = `1.0.${Date.now()}`;
  await buildSignedFw(fwPath, { product, version, size: 64 * 1024, privateKey: signingKey });
  const head = `--b\r\nContent-Disposition: form-data; name="firmware"; filename="s.fw"\r\nContent-Type: application/octet-stream\r\n\r\n`;
  const body = Buffer.concat([
    Buffer.from(head),
    require('node:fs').readFileSync(fwPath),
    Buffer.from('\r\n--b--\r\n'),
  ]);
  await rm(fwPath, { force: true });
  res = await request(`${base}/firmwares`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'multipart/form-data; boundary=b',
      'content-length': String(body.length),
    },
    body,
  });
  if (res.status !== 201) throw new Error(`upload firmware: ${res.status} ${res.text.slice(0, 200)}`);
  const uuid = res.json.data.uuid;
  const latencies = [];
  let missing = 0;
  const targets = sim.devices.filter((d) => d.connected).slice(0, upgrades);
  for (const device of targets) {
    let receivedAt = null;
    const original = device.onFrame.bind(device);
    device.onFrame = (frame) => {
      if (frame[2] === 'device' && frame[3] === 'update' && receivedAt === null) receivedAt = Date.now();
      return original(frame);
    };
    const sent = Date.now();
    const r = await request(`${fleethub.url}/api/devices/${encodeURIComponent(device.identifier)}/upgrade`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ uuid }),
    });
    if (r.status >= 300) throw new Error(`upgrade: ${r.status} ${r.text.slice(0, 200)}`);
    const waited = await waitFor(() => receivedAt !== null, 5_000, 1);
    if (waited === null) missing++;
    else latencies.push(receivedAt - sent);
  }
  out.upgrade_to_frame = {
    requests: targets.length,
    frames_received: latencies.length,
    frames_missing: missing,
    p50_ms: percentile(latencies, 50),
    p99_ms: percentile(latencies, 99),
    max_ms: latencies.length ? Math.max(...latencies) : null,
  };
  log(
    `  upgrade→frame: ${latencies.length}/${targets.length} frames, p50 ${out.upgrade_to_frame.p50_ms} ms, p99 ${out.upgrade_to_frame.p99_ms} ms`,
  );

  await sim.stop();
  // Clean up: the product's devices (and the firmware, via the API, once nothing points at it).
  await new Promise((r) => setTimeout(r, 500));
  await db.query(
    `DELETE FROM pending_updates WHERE firmware_id IN (SELECT id FROM firmwares WHERE uuid = $1)`,
    [uuid],
  );
  await request(`${base}/firmwares/${uuid}`, { method: 'DELETE', headers: auth });
  await db.query(
    `DELETE FROM devices WHERE product_id IN (SELECT id FROM products WHERE org_id = $1 AND name = $2)`,
    [info.orgId, product],
  );
  return out;
}

module.exports = { socketScenarios };
