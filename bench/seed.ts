/**
 * Bench database: start (embedded PostgreSQL in .bench-data/ or BENCH_DATABASE_URL), migrate, seed with
 * generate_series (no API calls). A `bench_seed` row records what was seeded; a matching marker means the
 * data is reused as is.
 */
import { createHash, createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { join } from 'node:path';
import { Client } from 'pg';
import { generateUserToken, hashToken } from '../src/auth/token-codec';
import { EmbeddedPostgres } from '../src/database/embedded-postgres';
import { runMigrations } from '../src/database/migrate';
import { semverSortKey } from '../src/firmware/fwup/semver-sort-key';
import { BENCH_DATA } from './paths';

export type Log = (message: string) => void;

/** 4: devices carry `firmware_version_key` (deployment group membership compares it). */
const SEED_VERSION = 4;
const VERSIONS = ['1.0.0', '1.1.0', '1.2.0', '1.2.1', '1.3.0'];

export const ORG = 'bench-org';
export const PRODUCT = 'bench-product';
const MEMBERS = 2000;
const FIRST_NAMES = [
  'Ada',
  'Grace',
  'Alan',
  'Edsger',
  'Barbara',
  'Donald',
  'Frances',
  'John',
  'Margaret',
  'Dennis',
  'Ken',
  'Radia',
  'Leslie',
  'Niklaus',
  'Tony',
  'Shafi',
  'Butler',
  'Judea',
  'Robin',
  'Fran',
  'Ivan',
  'Hedy',
  'Katherine',
  'Annie',
  'Jean',
  'Kathleen',
  'Marlyn',
  'Ruth',
  'Betty',
  'Sophie',
  'Mary',
  'Evelyn',
  'Adele',
  'Lois',
  'Carol',
  'Anita',
  'Sally',
  'Susan',
  'Lynn',
  'Joan',
];
const LAST_NAMES = [
  'Lovelace',
  'Hopper',
  'Turing',
  'Dijkstra',
  'Liskov',
  'Knuth',
  'Allen',
  'McCarthy',
  'Hamilton',
  'Ritchie',
  'Thompson',
  'Perlman',
  'Lamport',
  'Wirth',
  'Hoare',
  'Goldwasser',
  'Lampson',
  'Pearl',
  'Milner',
  'Bilas',
  'Sutherland',
  'Lamarr',
  'Johnson',
  'Easley',
  'Bartik',
  'Antonelli',
  'Wescoff',
  'Teitelbaum',
  'Holberton',
  'Wilson',
  'Keller',
  'Boyd',
  'Goldberg',
  'Haibt',
  'Shaw',
  'Borg',
  'Floyd',
  'Kare',
  'Conway',
  'Clarke',
  'Babbage',
  'Boole',
  'Church',
  'Gödel',
  'Shannon',
  'Neumann',
  'Backus',
  'Kay',
  'Engelbart',
  'Cerf',
];
/** The member-name search term: exactly one member carries this full name. */
const MEMBER_SEARCH = 'Ada Lovelace';

/** What the seed made, as the scenarios need it (stored in the marker row; ids as strings). */
export interface SeedInfo {
  n: number;
  /** The bench user's personal access token (admin of ORG). */
  token: string;
  org: string;
  product: string;
  orgId: string;
  productId: string;
  userId: string;
  /** Ids of the product's support scripts. */
  scripts: string[];
  irohPrefix: string;
  memberSearch: string;
  tag: string;
  seededAt: string;
  seedSeconds: number;
}

/** fwup key pair from a fixed seed (as test/support/fw-builder.ts fwupKeyPairFromSeed). */
export function benchSigningKey(): { privateKey: KeyObject; publicKey: string } {
  const raw = createHash('sha256').update('fleethub-bench-signing-key').digest();
  const pkcs8 = Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), raw]);
  const privateKey = createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' });
  const spki = createPublicKey(privateKey).export({ format: 'der', type: 'spki' });
  return { privateKey, publicKey: spki.subarray(spki.length - 32).toString('base64') };
}

export interface Database {
  url: string;
  stop(): Promise<void>;
  embedded: boolean;
}

/** Starts the database (one per mode in the embedded cluster). */
export async function startDatabase(mode: string, log: Log): Promise<Database> {
  if (process.env.BENCH_DATABASE_URL) {
    return { url: process.env.BENCH_DATABASE_URL, stop: async () => {}, embedded: false };
  }
  const pg = new EmbeddedPostgres({
    dataDir: join(BENCH_DATA, 'postgres'),
    database: `fleethub_bench_${mode}`,
    settings: {
      shared_buffers: "'1GB'",
      max_wal_size: "'8GB'",
      checkpoint_timeout: "'30min'",
      maintenance_work_mem: "'512MB'",
    },
  });
  const url = await pg.start();
  log(`database: embedded PostgreSQL in .bench-data/postgres (database fleethub_bench_${mode})`);
  return { url, stop: () => stopUnlessShared(pg, url, log), embedded: true };
}

/**
 * Stops the cluster this run started, unless another client is still connected (another benchmark, or a profile,
 * that adopted the running cluster: stopping it would break that run).
 */
async function stopUnlessShared(pg: EmbeddedPostgres, url: string, log: Log): Promise<void> {
  const db = new Client({ connectionString: url });
  await db.connect();
  try {
    const { rows } = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()`,
    );
    if (rows[0].n > 0) {
      log(`database: left running, ${rows[0].n} other connection(s) still use it`);
      return;
    }
  } finally {
    await db.end();
  }
  await pg.stop();
}

/** The server's own migrations; the names of those applied now. */
export function migrate(url: string): Promise<string[]> {
  return runMigrations(url);
}

/** Non-constraint indexes of a table: dropped before a bulk load, rebuilt after (much faster on 2 cores). */
async function secondaryIndexes(
  db: Client,
  table: string,
): Promise<{ indexname: string; indexdef: string }[]> {
  const { rows } = await db.query<{ indexname: string; indexdef: string }>(
    `SELECT i.indexname, i.indexdef FROM pg_indexes i
      WHERE i.schemaname = 'public' AND i.tablename = $1
        AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = (quote_ident(i.indexname))::regclass)`,
    [table],
  );
  return rows;
}

async function withIndexesDropped(
  db: Client,
  table: string,
  log: Log,
  load: () => Promise<void>,
): Promise<void> {
  const indexes = await secondaryIndexes(db, table);
  for (const ix of indexes) await db.query(`DROP INDEX "${ix.indexname}"`);
  const t0 = Date.now();
  await load();
  log(
    `  ${table}: rows loaded in ${((Date.now() - t0) / 1000).toFixed(1)} s; rebuilding ${indexes.length} indexes`,
  );
  const t1 = Date.now();
  for (const ix of indexes) await db.query(ix.indexdef);
  log(`  ${table}: indexes rebuilt in ${((Date.now() - t1) / 1000).toFixed(1)} s`);
}

export async function seed(url: string, n: number, log: Log): Promise<SeedInfo> {
  const db = new Client({ connectionString: url });
  await db.connect();
  try {
    const marker = `v${SEED_VERSION}:n=${n}`;
    await db.query(`CREATE TABLE IF NOT EXISTS bench_seed (marker text PRIMARY KEY, info jsonb NOT NULL)`);
    const found = await db.query<{ info: SeedInfo }>(`SELECT info FROM bench_seed WHERE marker = $1`, [
      marker,
    ]);
    if (found.rows[0]) {
      log(`seed: reusing (${marker})`);
      return found.rows[0].info;
    }
    log(`seed: ${marker} — building (devices and iroh endpoints via generate_series)`);
    const t0 = Date.now();
    await db.query(`SET synchronous_commit = off`);
    await db.query(`SET maintenance_work_mem = '512MB'`);
    await db.query(`SET max_parallel_maintenance_workers = 2`);
    // Start from empty: everything hangs off users and orgs.
    await db.query(`TRUNCATE bench_seed, users, orgs, gateway_instances, rate_limit_buckets CASCADE`);
    await db.query(`TRUNCATE product_device_counts, product_tag_counts`);

    const token = generateUserToken();
    const bench = await db.query<{ id: string }>(
      `INSERT INTO users (email, username, name) VALUES ('bench@bench.example', 'bench', 'Bench User') RETURNING id`,
    );
    const userId = bench.rows[0].id;
    await db.query(
      `INSERT INTO access_tokens (user_id, token_hash, note, scope) VALUES ($1, $2, 'bench', 'all')`,
      [userId, hashToken(token)],
    );
    const org = await db.query<{ id: string }>(`INSERT INTO orgs (name) VALUES ($1) RETURNING id`, [ORG]);
    const orgId = org.rows[0].id;
    await db.query(`INSERT INTO org_memberships (org_id, user_id, role) VALUES ($1, $2, 'admin')`, [
      orgId,
      userId,
    ]);
    const product = await db.query<{ id: string }>(
      `INSERT INTO products (org_id, name) VALUES ($1, $2) RETURNING id`,
      [orgId, PRODUCT],
    );
    const productId = product.rows[0].id;
    await db.query(`INSERT INTO signing_keys (org_id, name, key) VALUES ($1, 'bench', $2)`, [
      orgId,
      benchSigningKey().publicKey,
    ]);

    // Members with names (first × last: every full name once).
    await db.query(
      `INSERT INTO users (email, username, name)
       SELECT 'member-' || i || '@bench.example', 'member-' || i,
              ($1::text[])[1 + i % cardinality($1::text[])] || ' ' ||
              ($2::text[])[1 + (i / cardinality($1::text[])) % cardinality($2::text[])]
         FROM generate_series(0, $3 - 1) i`,
      [FIRST_NAMES, LAST_NAMES, MEMBERS],
    );
    await db.query(
      `INSERT INTO org_memberships (org_id, user_id, role)
       SELECT $1, id, 'view' FROM users WHERE username LIKE 'member-%'`,
      [orgId],
    );

    // Devices: 10 % untagged, 10 % {beta}, 10 % {beta,lab} (beta on 20 %), 70 % {prod,eu-N}; a third never
    // seen, a tenth connected (seen within the minute), the rest disconnected (seen within 30 days).
    await withIndexesDropped(db, 'devices', log, async () => {
      await db.query(`SELECT setseed(0.42)`);
      await db.query(
        `INSERT INTO devices (org_id, product_id, identifier, description, tags, connection_status,
                              last_communication, firmware_metadata, firmware_version, firmware_version_key,
                              firmware_platform, inserted_at, updated_at)
         SELECT $1, $2, 'dev-' || lpad(i::text, 7, '0'),
                CASE WHEN r_desc < 0.3 THEN 'Unit ' || i || ' in rack ' || (i % 97) END,
                CASE WHEN t < 10 THEN '{}'::text[] WHEN t < 20 THEN '{beta}' WHEN t < 30 THEN '{beta,lab}'
                     ELSE ARRAY['prod', 'eu-' || (t % 5)] END,
                status::device_connection_status,
                CASE status WHEN 'connected' THEN now() - r_seen * interval '60 seconds'
                            WHEN 'disconnected' THEN now() - r_seen * interval '30 days' END,
                CASE WHEN status <> 'not_seen' THEN jsonb_build_object(
                  'uuid', md5(version), 'product', $4::text, 'platform', 'rpi4', 'architecture', 'aarch64',
                  'version', version, 'author', 'Bench', 'fwup_version', '1.10.2') END,
                CASE WHEN status <> 'not_seen' THEN version END,
                CASE WHEN status <> 'not_seen' THEN version_key END,
                CASE WHEN status <> 'not_seen' THEN 'rpi4' END,
                now() - interval '365 days' + i * (interval '365 days' / $3),
                now() - interval '1 day'
           FROM (SELECT i, random() AS r_desc, floor(random() * 100)::int AS t, random() AS r_seen,
                        CASE WHEN c < 0.33 THEN 'not_seen' WHEN c < 0.43 THEN 'connected' ELSE 'disconnected' END
                          AS status,
                        ($5::text[])[1 + floor(v * 5)::int] AS version,
                        ($6::text[])[1 + floor(v * 5)::int] AS version_key
                   FROM (SELECT i, random() AS c, random() AS v FROM generate_series(1, $3) i) g) s`,
        [orgId, productId, n, PRODUCT, VERSIONS, VERSIONS.map((v) => semverSortKey(v))],
      );
    });

    // Iroh endpoints: a third held by devices (device i/3, instance default), a third by members, a third by
    // nobody; ids are SHA-256 hex (random-looking, unique); newest first order spread over ~half a year.
    await withIndexesDropped(db, 'iroh_endpoints', log, async () => {
      await db.query(
        `INSERT INTO iroh_endpoints (org_id, identifier, service, instance, details, source, device_id, user_id,
                                     last_reported_at, inserted_at, updated_at)
         SELECT $1, encode(sha256(convert_to('bench-iroh-' || g.i, 'UTF8')), 'hex'), 'iroh', 'default',
                CASE WHEN g.i % 2 = 0 THEN '{}'::jsonb ELSE jsonb_build_object('relay', 'https://relay.example/' || (g.i % 7)) END,
                (CASE WHEN g.i % 3 = 0 THEN 'device_reported' ELSE 'operator' END)::iroh_endpoint_source,
                d.id,
                CASE WHEN g.i % 3 = 1 THEN m.ids[1 + (g.i / 3) % cardinality(m.ids)] END,
                CASE WHEN g.i % 3 = 0 THEN now() - interval '1 hour' END,
                now() - interval '200 days' + g.i * interval '15 seconds',
                now() - interval '200 days' + g.i * interval '15 seconds'
           FROM generate_series(1, $2) g(i)
           CROSS JOIN (SELECT array_agg(id ORDER BY id) AS ids FROM users WHERE username LIKE 'member-%') m
           LEFT JOIN devices d ON g.i % 3 = 0 AND d.identifier = 'dev-' || lpad((g.i / 3)::text, 7, '0')`,
        [orgId, n],
      );
    });

    const scripts: string[] = [];
    for (let i = 1; i <= 5; i++) {
      const text = `# support script ${i}\n` + 'IO.inspect(Nerves.Runtime.KV.get_all())\n'.repeat(40);
      const r = await db.query<{ id: string }>(
        `INSERT INTO support_scripts (product_id, name, tags, text, created_by_id) VALUES ($1, $2, 'diag,net', $3, $4)
         RETURNING id`,
        [productId, `diagnostics-${i}`, text, userId],
      );
      scripts.push(String(r.rows[0].id));
    }

    log('  VACUUM ANALYZE');
    await db.query(
      `VACUUM ANALYZE devices, iroh_endpoints, users, org_memberships, access_tokens, support_scripts`,
    );
    await db.query(`ANALYZE product_device_counts, product_tag_counts`);

    // A hex prefix of an existing endpoint that contains a letter (so the device-identifier branch, which only
    // has digits in its hex range, cannot match): a realistic "paste the start of the key" search.
    const prefixRow = await db.query<{ p: string }>(
      `SELECT substr(identifier, 1, 5) AS p FROM iroh_endpoints WHERE substr(identifier, 1, 5) ~ '[a-f]' ORDER BY id
        LIMIT 1 OFFSET $1`,
      [Math.floor(n / 2)],
    );
    const info: SeedInfo = {
      n,
      token,
      org: ORG,
      product: PRODUCT,
      orgId: String(orgId),
      productId: String(productId),
      userId: String(userId),
      scripts,
      irohPrefix: prefixRow.rows[0].p,
      memberSearch: MEMBER_SEARCH,
      tag: 'beta',
      seededAt: new Date().toISOString(),
      seedSeconds: Math.round((Date.now() - t0) / 1000),
    };
    await db.query(`INSERT INTO bench_seed (marker, info) VALUES ($1, $2)`, [marker, info]);
    log(`seed: done in ${info.seedSeconds} s`);
    return info;
  } finally {
    await db.end();
  }
}
