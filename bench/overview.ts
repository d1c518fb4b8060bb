/**
 * `bash bench/run.sh overview [devices]`: the fleet overview's statements at a million devices (default
 * 1,000,000 in one product), with EXPLAIN (ANALYZE, BUFFERS), and what the counter triggers cost the writes of
 * `devices`. Its own database (embedded PostgreSQL under .bench-data/overview-pg, or BENCH_DATABASE_URL's server),
 * migrated, then seeded with generate_series: a third of the devices connected, five firmware versions, 1 % with a
 * health alarm (and as many in a second product of 100,000), a deployment group with 10 updates in flight and
 * 7 days of minute samples. Prints a report (markdown) on stdout.
 */
import { join } from 'node:path';
import { Client, Pool } from 'pg';
import type { DataSource } from 'typeorm';
import { EmbeddedPostgres } from '../src/database/embedded-postgres';
import { runMigrations } from '../src/database/migrate';
import { FleetOverviewRepository } from '../src/overview/fleet-overview.repository';
import { bucketSeconds } from '../src/overview/fleet-overview.service';
import { BENCH_DATA } from './paths';

const DATABASE = 'fleethub_overview_bench';

async function serverUrl(): Promise<{ url: string; stop: () => Promise<void> }> {
  if (process.env.BENCH_DATABASE_URL) return { url: process.env.BENCH_DATABASE_URL, stop: async () => {} };
  const embedded = new EmbeddedPostgres({
    dataDir: join(BENCH_DATA, 'overview-pg'),
    database: 'postgres',
    settings: { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' },
  });
  return { url: await embedded.start(), stop: () => embedded.stop() };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

async function timed(run: () => Promise<unknown>, times: number): Promise<number> {
  const ms: number[] = [];
  for (let i = 0; i < times; i++) {
    const started = process.hrtime.bigint();
    await run();
    ms.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  return median(ms);
}

async function seed(db: Client, devices: number, log: (line: string) => void): Promise<void> {
  await db.query(`INSERT INTO orgs (name) VALUES ('bench-org')`);
  await db.query(
    `INSERT INTO products (org_id, name) SELECT id, p FROM orgs, unnest(ARRAY['fleet', 'other']) p`,
  );
  const started = Date.now();
  for (const [product, count, prefix] of [
    ['fleet', devices, 'dev'],
    ['other', 100_000, 'oth'],
  ] as const) {
    // In chunks of 100,000 rows (one statement each: the counter triggers run once per chunk).
    for (let from = 1; from <= count; from += 100_000) {
      await db.query(
        `INSERT INTO devices (org_id, product_id, identifier, tags, connection_status, last_communication,
                              firmware_version, firmware_platform, connected_at)
         SELECT p.org_id, p.id, $2 || '-' || lpad(i::text, 7, '0'), ARRAY['batch-' || (i % 10)],
                CASE WHEN i % 3 = 0 THEN 'connected' WHEN i % 50 = 1 THEN 'not_seen' ELSE 'disconnected'
                END::device_connection_status,
                CASE WHEN i % 50 = 1 THEN NULL ELSE now() - make_interval(mins => i % 5000) END,
                CASE WHEN i % 50 = 1 THEN NULL ELSE (ARRAY['1.0.0', '1.1.0', '1.2.0', '1.2.1', '1.3.0'])[1 + i % 5] END,
                'rpi4', CASE WHEN i % 3 = 0 THEN now() END
           FROM products p, generate_series($3::int, $4::int) i WHERE p.name = $1`,
        [product, prefix, from, Math.min(count, from + 99_999)],
      );
    }
    // 1 % alarmed, the others reporting healthy.
    await db.query(
      `INSERT INTO device_health (device_id, status, alarm_count, reported_at)
       SELECT d.id, CASE WHEN right(d.identifier, 2) = '00' THEN 'warning' ELSE 'healthy' END::device_health_status,
              CASE WHEN right(d.identifier, 2) = '00' THEN 1 + (length(d.identifier) % 3) ELSE 0 END, now()
         FROM devices d JOIN products p ON p.id = d.product_id WHERE p.name = $1`,
      [product],
    );
  }
  log(
    `seeded ${devices + 100_000} devices and their health in ${((Date.now() - started) / 1000).toFixed(0)} s`,
  );
  await db.query(`INSERT INTO firmwares (product_id, uuid, version, version_sort_key, meta_product, platform,
                                         architecture, tool, size, sha256, chunk_sha256, storage_key)
                  SELECT p.id, gen_random_uuid(), '1.4.0', '1.4.0', 'fleet', 'rpi4', 'aarch64', 'fwup', 1,
                         repeat('0', 64), '{}', 'bench'
                    FROM products p WHERE p.name = 'fleet'`);
  await db.query(`INSERT INTO deployment_groups (org_id, product_id, name, is_active, platform, architecture)
                  SELECT org_id, id, 'stable', true, 'rpi4', 'aarch64' FROM products WHERE name = 'fleet'`);
  await db.query(`INSERT INTO deployment_releases (deployment_group_id, number, firmware_id)
                  SELECT g.id, 1, f.id FROM deployment_groups g, firmwares f`);
  await db.query(`UPDATE deployment_groups g SET current_release_id = r.id FROM deployment_releases r
                   WHERE r.deployment_group_id = g.id`);
  await db.query(`INSERT INTO pending_updates (device_id, firmware_id, deployment_group_id, deployment_release_id,
                                               delivered_at)
                  SELECT d.id, f.id, g.id, r.id, now()
                    FROM (SELECT id FROM devices WHERE connection_status = 'connected' ORDER BY id LIMIT 10) d,
                         firmwares f, deployment_groups g, deployment_releases r`);
  await db.query(
    `INSERT INTO product_connection_samples (product_id, sampled_at, connected, total)
                  SELECT p.id, date_trunc('minute', now()) - make_interval(mins => m), 333000 + m % 1000, $1
                    FROM products p, generate_series(0, 7 * 24 * 60) m`,
    [devices],
  );
  await db.query(`VACUUM ANALYZE`);
}

async function main(): Promise<void> {
  const devices = Number(process.argv[2] ?? 1_000_000);
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const server = await serverUrl();
  const adminUrl = new URL(server.url);
  adminUrl.pathname = '/postgres';
  const url = new URL(server.url);
  url.pathname = `/${DATABASE}`;
  const admin = new Client({ connectionString: adminUrl.toString() });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${DATABASE} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${DATABASE}`);
  await admin.end();
  await runMigrations(url.toString());
  const db = new Client({ connectionString: url.toString() });
  await db.connect();
  const pool = new Pool({ connectionString: url.toString(), max: 2 });
  try {
    await seed(db, devices, log);
    const version = (await db.query<{ server_version: string }>(`SHOW server_version`)).rows[0]
      .server_version;
    const [{ id: productId }] = (
      await db.query<{ id: string }>(`SELECT id FROM products WHERE name = 'fleet'`)
    ).rows;

    // The repository's own statements, captured as they are sent.
    const sent: { text: string; values: unknown[] }[] = [];
    const capturing = {
      query: (config: { text: string; values: unknown[] }) => {
        sent.push(config);
        return pool.query(config);
      },
    };
    const repository = new FleetOverviewRepository({
      driver: { master: capturing },
    } as unknown as DataSource);
    const from = new Date(Date.now() - 24 * 3_600_000);
    await repository.overview(productId);
    await repository.samples(productId, from, bucketSeconds(24));
    await repository.counters(productId);
    const [overviewSql, samplesSql, countersSql] = sent;
    const report: string[] = [
      `# Fleet overview at ${devices.toLocaleString('en')} devices`,
      '',
      `PostgreSQL ${version}; product "fleet" of ${devices.toLocaleString('en')} devices (a third connected, five ` +
        'versions, 1 % alarmed), product "other" of 100,000 (1 % alarmed), 10 updates in flight, 7 days of ' +
        'minute samples. Median of 20 runs, warm cache.',
      '',
      '| statement | median ms |',
      '|---|---|',
      `| overview (counts, versions, rollouts, manual updates, alarms) | ${(await timed(() => repository.overview(productId), 20)).toFixed(2)} |`,
      `| overview counters alone (the live \`product.overview\` event) | ${(await timed(() => repository.counters(productId), 20)).toFixed(2)} |`,
      `| connected over time, 24 h (360 points of 4 min) | ${(await timed(() => repository.samples(productId, from, bucketSeconds(24)), 20)).toFixed(2)} |`,
      `| connected over time, 7 days (360 points of 28 min) | ${(await timed(() => repository.samples(productId, new Date(Date.now() - 168 * 3_600_000), bucketSeconds(168)), 20)).toFixed(2)} |`,
      `| the minute's sample of every product (and retention) | ${(
        await timed(async () => {
          await db.query(
            `DELETE FROM product_connection_samples WHERE sampled_at >= date_trunc('minute', now())`,
          );
          await repository.recordSamples();
        }, 20)
      ).toFixed(2)} |`,
      `| for comparison: count(*) of connected devices by index | ${(await timed(() => db.query(`SELECT count(*) FROM devices WHERE product_id = $1 AND connection_status = 'connected'`, [productId]), 5)).toFixed(2)} |`,
      `| for comparison: versions by GROUP BY over the devices | ${(await timed(() => db.query(`SELECT firmware_version, count(*) FROM devices WHERE product_id = $1 GROUP BY 1`, [productId]), 5)).toFixed(2)} |`,
      '',
    ];
    for (const [title, statement] of [
      ['overview', overviewSql],
      ['overview counters alone', countersSql],
      ['connected over time (24 h)', samplesSql],
    ] as const) {
      const plan = await db.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN (ANALYZE, BUFFERS) ${statement.text}`,
        statement.values,
      );
      report.push(
        `## EXPLAIN ANALYZE: ${title}`,
        '',
        '```',
        ...plan.rows.map((r) => r['QUERY PLAN']),
        '```',
        '',
      );
    }

    // What the counter triggers cost the writes of devices: with them and without (disabled for the comparison).
    const writes = async () => {
      const single = await timed(
        () =>
          db.query(
            `UPDATE devices SET connection_status = CASE connection_status WHEN 'connected' THEN 'disconnected'
                    ELSE 'connected' END::device_connection_status, last_communication = now()
              WHERE id = (SELECT id FROM devices WHERE product_id = $1 ORDER BY id OFFSET (random() * 1000)::int LIMIT 1)`,
            [productId],
          ),
        400,
      );
      const activity = await timed(
        () =>
          db.query(
            `UPDATE devices SET last_communication = now()
              WHERE id IN (SELECT id FROM devices WHERE product_id = $1 AND connection_status = 'connected' LIMIT 100)`,
            [productId],
          ),
        50,
      );
      const bulk = await timed(async () => {
        await db.query('BEGIN');
        await db.query(
          `UPDATE devices SET connection_status = 'disconnected', connected_at = NULL
            WHERE id IN (SELECT id FROM devices WHERE product_id = $1 AND connection_status = 'connected' LIMIT 100000)`,
          [productId],
        );
        await db.query('ROLLBACK');
      }, 3);
      return { single, activity, bulk };
    };
    const withTriggers = await writes();
    await db.query(`ALTER TABLE devices DISABLE TRIGGER devices_fleet_counts_update`);
    const without = await writes();
    await db.query(`ALTER TABLE devices ENABLE TRIGGER devices_fleet_counts_update`);
    report.push(
      '## The counter triggers on writes of devices',
      '',
      '| write | with the triggers, ms | without, ms |',
      '|---|---|---|',
      `| one device connects or disconnects (median of 400) | ${withTriggers.single.toFixed(3)} | ${without.single.toFixed(3)} |`,
      `| last_communication of 100 devices, status unchanged (median of 50) | ${withTriggers.activity.toFixed(2)} | ${without.activity.toFixed(2)} |`,
      `| 100,000 devices disconnected in one statement (median of 3) | ${withTriggers.bulk.toFixed(0)} | ${without.bulk.toFixed(0)} |`,
      '',
    );
    process.stdout.write(`${report.join('\n')}\n`);
  } finally {
    await pool.end();
    await db.end();
    await server.stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
