/* eslint-disable -- plain Node.js (CommonJS) harness, outside the TypeScript build; the repository's type-aware rules target the TypeScript sources. */
'use strict';
/**
 * The floor: a bare `node:http` + `pg` server answering the benchmark's GET endpoints with the SAME SQL as
 * fleethub (copied from src/auth/tokens.service.ts, src/auth/auth.guard.ts, src/products/products.service.ts,
 * src/devices/device-list.query.ts + devices.service.ts, src/iroh/iroh.service.ts, src/scripts/scripts.service.ts)
 * and the same number of round trips: token by SHA-256 hash (cached 5 s, as the server does), org membership,
 * product lookup where the server does one, then the endpoint's statements (page + count in parallel).
 * Only what the benchmark sends is parsed; anything else is a 404. Same pool size as fleethub (10).
 *
 * With FLOOR_RATE_LIMIT=1 (the harness sets it when the built server has the per-token API rate limiter of
 * src/common/http/rate-limiter.ts), every request also runs that limiter's upsert, concurrently with the
 * membership query as the guard does, so both servers send the same statements.
 *
 * env: DATABASE_URL, PORT (default 0 = any), HOST (127.0.0.1), FLOOR_RATE_LIMIT. Prints `floor listening on <url>`.
 */
const http = require('node:http');
const { createHash } = require('node:crypto');
const { crc32 } = require('node:zlib');
const { Pool } = require('pg');

const pool = new Pool({
  connectionString: process.env.DATABASE_URL,
  max: 10,
  application_name: 'fleethub-floor',
});

// ---- token (src/auth/token-codec.ts, tokens.service.ts) ----
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
function base62Decode(text) {
  if (text.length === 0 || text.length > 64) return null;
  let value = 0n;
  for (const char of text) {
    const digit = ALPHABET.indexOf(char);
    if (digit < 0) return null;
    value = value * 62n + BigInt(digit);
  }
  let hex = value.toString(16);
  if (hex.length % 2) hex = `0${hex}`;
  return Buffer.from(hex, 'hex');
}
function hasValidChecksum(token) {
  if (!token.startsWith('nhu_')) return false;
  const payload = base62Decode(token.slice(4));
  if (!payload || payload.length !== 36) return false;
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(payload.subarray(0, 32)) >>> 0);
  return crc.equals(payload.subarray(32));
}
const tokenCache = new Map();
async function authenticate(header) {
  const match = typeof header === 'string' ? /^(bearer|token) +(\S+) *$/i.exec(header) : null;
  if (!match || !hasValidChecksum(match[2])) return null;
  const hash = createHash('sha256').update(match[2], 'utf8').digest();
  const key = hash.toString('base64');
  const now = Date.now();
  const cached = tokenCache.get(key);
  if (cached && cached.until > now) return cached.actor;
  const { rows } = await pool.query(
    `SELECT t.id AS token_id, t.scope, t.expires_at, t.last_used_at,
            u.id AS user_id, u.email, u.username, u.name
       FROM access_tokens t JOIN users u ON u.id = t.user_id
      WHERE t.token_hash = $1 AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now())`,
    [hash],
  );
  if (!rows[0]) return null;
  const r = rows[0];
  const actor = {
    tokenId: r.token_id,
    userId: r.user_id,
    email: r.email,
    username: r.username,
    name: r.name,
    scope: r.scope,
  };
  tokenCache.set(key, { actor, until: now + 5000 });
  return actor;
}

// ---- membership (src/auth/auth.guard.ts) and product (products.service.ts findInOrg) ----
async function orgAccess(orgName, actor) {
  const { rows } = await pool.query(
    `SELECT o.id AS org_id, o.name AS org_name, m.role
       FROM orgs o JOIN org_memberships m ON m.org_id = o.id AND m.user_id = $2
      WHERE o.name = $1`,
    [orgName, actor.userId],
  );
  return rows[0] ?? null;
}
async function findProduct(orgId, name) {
  const { rows } = await pool.query(
    `SELECT id, org_id, name, allow_unsigned_atomvm_firmware, allow_unsigned_esp_idf_firmware, allowed_update_tools,
            require_unique_firmware_version, inserted_at, updated_at
       FROM products WHERE org_id = $1 AND name = $2 LIMIT 1`,
    [orgId, name],
  );
  return rows[0] ?? null;
}

function pageRequest(q) {
  const page = Number(q.get('pagination[page]') ?? q.get('page') ?? 1);
  const pageSize = Number(q.get('pagination[page_size]') ?? q.get('page_size') ?? 10);
  return { page, pageSize, offset: (page - 1) * pageSize };
}
const paginationView = (p, total) => ({
  page_number: p.page,
  page_size: p.pageSize,
  total_entries: total,
  total_pages: total === 0 ? 0 : Math.ceil(total / p.pageSize),
});
const iso = (d) => (d ? d.toISOString() : null);
const like = (t) => t.replace(/[\\%_]/g, (c) => `\\${c}`);

// ---- devices (device-list.query.ts, device-view.ts): the sorts and the tags filter the benchmark uses ----
const DEVICE_COLUMNS = `
  d.identifier, d.description, d.tags, d.firmware_version, d.connection_status, d.last_communication,
  d.updates_enabled, d.updates_blocked_until, d.firmware_metadata,
  o.name AS org_name, p.name AS product_name`;
const DEVICE_FROM = `devices d JOIN products p ON p.id = d.product_id JOIN orgs o ON o.id = d.org_id`;
const SORTS = {
  identifier: null,
  inserted_at: { column: 'd.inserted_at', nullable: false },
  last_communication: { column: 'd.last_communication', nullable: true },
  version: { column: 'd.firmware_version', nullable: true },
  connection_status: { column: 'd.connection_status', nullable: false },
};
const META_KEYS = [
  'id',
  'uuid',
  'product',
  'platform',
  'architecture',
  'version',
  'author',
  'description',
  'misc',
  'vcs_identifier',
  'fwup_version',
];
function deviceView(row) {
  let meta = null;
  if (row.firmware_metadata) {
    meta = {};
    for (const k of META_KEYS)
      meta[k] = typeof row.firmware_metadata[k] === 'string' ? row.firmware_metadata[k] : null;
  }
  return {
    identifier: row.identifier,
    org_name: row.org_name,
    product_name: row.product_name,
    description: row.description,
    tags: row.tags.join(','),
    version: row.firmware_version,
    connection_status: row.connection_status,
    online: row.connection_status === 'connected',
    last_communication: iso(row.last_communication),
    updates_enabled: row.updates_enabled,
    updates_blocked_until: iso(row.updates_blocked_until),
    deployment_group: null,
    firmware_metadata: meta,
  };
}
async function deviceList(access, productName, q) {
  const product = await findProduct(access.org_id, productName);
  if (!product) return [404, { errors: { detail: 'Not Found' } }];
  const sortName = q.get('sort') ?? 'identifier';
  const direction = q.get('sort_direction') === 'desc' ? 'DESC' : 'ASC';
  const page = pageRequest(q);
  const params = [product.id];
  const conditions = ['d.product_id = $1'];
  const tagsRaw = q.get('filters[tags]');
  const tags = tagsRaw
    ? [
        ...new Set(
          tagsRaw
            .split(',')
            .map((t) => t.trim())
            .filter((t) => t),
        ),
      ]
    : [];
  if (tags.length) {
    params.push(tags);
    conditions.push(`d.tags @> $${params.length}::text[]`);
  }
  const sort = SORTS[sortName];
  const nulls = sort?.nullable ? (direction === 'ASC' ? ' NULLS FIRST' : ' NULLS LAST') : '';
  const orderBy = sort
    ? `${sort.column} ${direction}${nulls}, d.identifier ${direction}`
    : `d.identifier ${direction}`;
  const where = conditions.join(' AND ');
  let count;
  if (tags.length === 0) {
    count = {
      sql: `SELECT COALESCE((SELECT sum(total) FROM product_device_counts WHERE product_id = $1), 0)::int AS count`,
      params: [product.id],
    };
  } else if (tags.length === 1) {
    count = {
      sql: `SELECT COALESCE((SELECT sum(total) FROM product_tag_counts WHERE product_id = $1 AND tag = $2), 0)::int AS count`,
      params: [product.id, tags[0]],
    };
  } else {
    count = { sql: `SELECT count(*)::int AS count FROM devices d WHERE ${where}`, params };
  }
  const [rows, counted] = await Promise.all([
    pool.query(
      `SELECT ${DEVICE_COLUMNS}
         FROM (SELECT d.id FROM devices d WHERE ${where} ORDER BY ${orderBy}
                LIMIT $${params.length + 1} OFFSET $${params.length + 2}) page
         JOIN ${DEVICE_FROM} ON d.id = page.id
        ORDER BY ${orderBy}`,
      [...params, page.pageSize, page.offset],
    ),
    pool.query(count.sql, count.params),
  ]);
  return [200, { data: rows.rows.map(deviceView), pagination: paginationView(page, counted.rows[0].count) }];
}

// ---- iroh (iroh.service.ts list + searchCondition + count) ----
const RECORD_COLUMNS = `e.identifier, e.service, e.instance, e.details, e.source, e.device_id, e.user_id,
  d.identifier AS device_identifier, u.email AS user_email, u.name AS user_name,
  e.last_reported_at, e.inserted_at, e.updated_at`;
const OWNER_JOINS = `LEFT JOIN devices d ON d.id = e.device_id LEFT JOIN users u ON u.id = e.user_id`;
function irohView(row) {
  const type = row.device_id !== null ? 'device' : row.user_id !== null ? 'user' : 'none';
  return {
    identifier: row.identifier,
    service: row.service,
    instance: row.instance,
    details: row.details,
    source: row.source,
    owner: {
      type,
      device_identifier: type === 'device' ? row.device_identifier : null,
      user_email: type === 'user' ? row.user_email : null,
      user_name: type === 'user' ? row.user_name : null,
    },
    last_reported_at: iso(row.last_reported_at),
    inserted_at: row.inserted_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}
async function irohList(access, q) {
  const params = [access.org_id, 'iroh'];
  const conditions = ['e.org_id = $1', 'e.service = $2'];
  const term = (q.get('search') ?? '').trim();
  if (term !== '') {
    const branches = [];
    const prefix = term.toLowerCase();
    if (/^[0-9a-f]+$/.test(prefix)) {
      params.push(
        prefix,
        `${prefix.slice(0, -1)}${String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1)}`,
      );
      branches.push(
        `SELECT e.id FROM iroh_endpoints e
          WHERE e.org_id = $1 AND e.identifier >= $${params.length - 1} AND e.identifier < $${params.length}`,
      );
    }
    params.push(`%${like(term)}%`);
    const p = `$${params.length}`;
    branches.push(
      `SELECT e.id FROM devices d JOIN iroh_endpoints e ON e.device_id = d.id
          WHERE d.org_id = $1 AND e.org_id = $1 AND d.identifier ILIKE ${p}`,
    );
    branches.push(
      `SELECT e.id FROM users u JOIN iroh_endpoints e ON e.user_id = u.id
          WHERE e.org_id = $1 AND e.device_id IS NULL AND u.name ILIKE ${p}`,
    );
    conditions.push(`e.id IN (${branches.join(' UNION ')})`);
  }
  const where = conditions.join(' AND ');
  const order = `ORDER BY e.inserted_at DESC, e.identifier DESC`;
  const paginated = ['pagination[page]', 'pagination[page_size]', 'page', 'page_size'].some((k) => q.has(k));
  if (!paginated) {
    const { rows } = await pool.query(
      `SELECT ${RECORD_COLUMNS} FROM iroh_endpoints e ${OWNER_JOINS} WHERE ${where} ${order}`,
      params,
    );
    return [200, { data: rows.map(irohView) }];
  }
  const page = pageRequest(q);
  if (term !== '') {
    const { rows } = await pool.query(
      `WITH hits AS MATERIALIZED (SELECT e.id, e.inserted_at, e.identifier FROM iroh_endpoints e WHERE ${where}),
            page AS (SELECT id FROM hits ORDER BY inserted_at DESC, identifier DESC
                      LIMIT $${params.length + 1} OFFSET $${params.length + 2})
       SELECT ${RECORD_COLUMNS}, total.total
         FROM (SELECT count(*)::int AS total FROM hits) total
         LEFT JOIN (page JOIN iroh_endpoints e ON e.id = page.id ${OWNER_JOINS}) ON true
        ${order}`,
      [...params, page.pageSize, page.offset],
    );
    const hits = rows.filter((row) => row.identifier !== null);
    return [200, { data: hits.map(irohView), pagination: paginationView(page, rows[0].total) }];
  }
  const [rows, total] = await Promise.all([
    pool.query(
      `SELECT ${RECORD_COLUMNS} FROM iroh_endpoints e ${OWNER_JOINS} WHERE ${where} ${order}
          LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
      [...params, page.pageSize, page.offset],
    ),
    pool.query(
      `SELECT COALESCE(sum(total), 0)::int AS total FROM org_iroh_endpoint_counts
        WHERE org_id = $1 AND service = $2 AND ($3::varchar IS NULL OR owner_type = $3)`,
      [access.org_id, 'iroh', null],
    ),
  ]);
  return [200, { data: rows.rows.map(irohView), pagination: paginationView(page, total.rows[0].total) }];
}

// ---- scripts (scripts.service.ts show) ----
async function scriptShow(access, productName, id) {
  const product = await findProduct(access.org_id, productName);
  if (!product || !/^\d{1,18}$/.test(id)) return [404, { errors: { detail: 'Not Found' } }];
  const { rows } = await pool.query(
    `SELECT s.id, s.name, s.tags, s.text, s.inserted_at, s.updated_at,
            u.id AS author_id, u.name AS author_name, u.email AS author_email
       FROM support_scripts s LEFT JOIN users u ON u.id = s.created_by_id WHERE s.product_id = $1 AND s.id = $2`,
    [product.id, id],
  );
  const r = rows[0];
  if (!r) return [404, { errors: { detail: 'Not Found' } }];
  return [
    200,
    {
      data: {
        id: String(r.id),
        name: r.name,
        tags: r.tags,
        text: r.text,
        created_by:
          r.author_id === null
            ? null
            : { id: String(r.author_id), name: r.author_name, email: r.author_email },
        inserted_at: r.inserted_at.toISOString(),
        updated_at: r.updated_at.toISOString(),
      },
    },
  ];
}

const RATE_LIMIT = process.env.FLOOR_RATE_LIMIT === '1';
/** src/common/http/rate-limiter.ts `hit` (fixed window of 60 s); the limit is never reached in the benchmark. */
function rateLimitHit(actor) {
  if (!RATE_LIMIT) return Promise.resolve();
  return pool.query(
    `INSERT INTO rate_limit_buckets AS b (key, hits, expires_at)
     VALUES ($1, 1, now() + $2 * interval '1 millisecond')
     ON CONFLICT (key) DO UPDATE
       SET hits = CASE WHEN b.expires_at < now() THEN 1 ELSE b.hits + 1 END,
           expires_at = CASE WHEN b.expires_at < now() THEN EXCLUDED.expires_at ELSE b.expires_at END
     RETURNING hits, expires_at`,
    [`api:${actor.tokenId}`, 60_000],
  );
}

async function route(req) {
  const url = new URL(req.url, 'http://floor');
  if (req.method !== 'GET') return [404, { errors: { detail: 'Not Found' } }];
  const actor = await authenticate(req.headers.authorization);
  if (!actor) return [401, { error: 'unauthorized' }];
  const limit = rateLimitHit(actor);
  const [result] = await Promise.all([handle(url, actor), limit]);
  return result;
}

async function handle(url, actor) {
  const parts = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
  if (parts.length === 3 && parts[0] === 'api' && parts[1] === 'users' && parts[2] === 'me') {
    return [200, { data: { username: actor.username, email: actor.email, name: actor.name } }];
  }
  if (parts[0] !== 'api' || parts[1] !== 'orgs' || parts.length < 4)
    return [404, { errors: { detail: 'Not Found' } }];
  const access = await orgAccess(parts[2], actor);
  if (!access) return [404, { errors: { detail: 'Not Found' } }];
  if (parts.length === 4 && parts[3] === 'iroh_endpoints') return irohList(access, url.searchParams);
  if (parts.length === 6 && parts[3] === 'products' && parts[5] === 'devices') {
    return deviceList(access, parts[4], url.searchParams);
  }
  if (parts.length === 7 && parts[3] === 'products' && parts[5] === 'scripts') {
    return scriptShow(access, parts[4], parts[6]);
  }
  return [404, { errors: { detail: 'Not Found' } }];
}

const server = http.createServer((req, res) => {
  req.resume();
  route(req).then(
    ([status, body]) => {
      const text = JSON.stringify(body);
      res.writeHead(status, {
        'content-type': 'application/json; charset=utf-8',
        'content-length': Buffer.byteLength(text),
      });
      res.end(text);
    },
    (err) => {
      process.stderr.write(`floor: ${err.stack ?? err}\n`);
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end('{"errors":{"detail":"Internal Server Error"}}');
    },
  );
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT ?? 0), process.env.HOST ?? '127.0.0.1', () => {
  const { address, port } = server.address();
  process.stdout.write(`floor listening on http://${address}:${port}\n`);
});
const stop = () => server.close(() => pool.end().then(() => process.exit(0)));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
