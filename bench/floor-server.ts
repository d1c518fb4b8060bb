/**
 * The floor: the least a correct bare `node:http` + `pg` server does to give the benchmark's GETs the same
 * answers as fleethub. It shares fleethub's pure code, so that a change to a query, a view or a rule breaks it at
 * compile time: the statements (src/auth/access.queries.ts, device-list.query.ts, iroh-list.query.ts,
 * script-view.ts), the query-string parsers, the views that shape the bodies, the token codec, the route
 * policies and the error bodies. It never imports Nest (checked at start).
 *
 * Per request, as fleethub: the token by its SHA-256 (cached 5 s, as TokensService caches it), the per-token rate
 * limit counted in memory (fleethub counts in memory too and writes the counts once a second, not per request;
 * FLOOR_RATE_LIMIT_API_PER_MIN, 0 = off), then for an organization route one statement for the membership, its
 * role and the path's product (the guard's), then the endpoint's statements (page + count in parallel where
 * fleethub sends them together). Only what the benchmark sends is routed; anything else is a 404. Pool of 10, as
 * fleethub's.
 *
 * Firmware downloads (the `downloads` scenario), as fleethub's FirmwareDownloads: the signed link checked with
 * fleethub's signer (FLOOR_DOWNLOAD_LINK_KEY, the server's link key), the firmware's storage key read by id and
 * uuid (one statement per download, as fleethub: the firmware may have been deleted), the file's size, the
 * `Range` header with fleethub's parser, then the bytes with `fs.createReadStream` (206 + Content-Range for a range).
 *
 * env: DATABASE_URL, PORT (default 0 = any), HOST (127.0.0.1), FLOOR_RATE_LIMIT_API_PER_MIN,
 * FLOOR_DOWNLOAD_LINK_KEY (hex; no downloads without it), FLOOR_FIRMWARE_DIR (fleethub's `<data dir>/firmware`).
 * Prints `floor listening on <url>`.
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve, sep } from 'node:path';
import { parse as parseQuery } from 'node:querystring';
import { pipeline } from 'node:stream/promises';
import { Pool, type QueryResultRow } from 'pg';
import {
  ORG_AND_PRODUCT_ACCESS,
  ORG_ACCESS,
  type OrgAccessRow,
  actorOfToken,
  TOKEN_BY_HASH,
  type TokenRow,
} from '../src/auth/access.queries';
import { hashToken, hasValidChecksum, tokenFromAuthorization } from '../src/auth/token-codec';
import type { Actor } from '../src/common/auth/actor';
import { ROUTE_POLICIES, type RouteName } from '../src/common/auth/route-policies';
import { roleSatisfies } from '../src/common/auth/roles';
import { DomainError } from '../src/common/errors/domain-error';
import { errorBody } from '../src/common/errors/error-body';
import { ErrorCode } from '../src/common/errors/error-codes';
import { paginationView, type RawQuery } from '../src/common/http/page-request';
import { parseBigId } from '../src/common/values';
import { parseRange } from '../src/firmware/storage/byte-range';
import { DOWNLOAD_PATH_PREFIX, DownloadLinkSigner, downloadPath } from '../src/gateway/download-links';
import {
  deviceCountSql,
  deviceListSql,
  devicePageSql,
  parseDeviceListQuery,
} from '../src/devices/device-list.query';
import { type DeviceRow, deviceView } from '../src/devices/device-view';
import { type EndpointRow, endpointView } from '../src/iroh/endpoint-view';
import { irohListStatements, parseIrohListQuery } from '../src/iroh/iroh-list.query';
import { joinedProductRow } from '../src/products/product-row';
import { SCRIPT_IN_PRODUCT, type ScriptRow, scriptView } from '../src/scripts/script-view';
import type { UserView } from '../src/users/dto/user.view';

const pool = new Pool({
  connectionString: process.env.DATABASE_URL,
  max: 10,
  application_name: 'fleethub-floor',
});

async function rows<Row extends QueryResultRow>(sql: string, params: unknown[]): Promise<Row[]> {
  return (await pool.query<Row>(sql, params)).rows;
}

type Answer = [status: number, body: unknown, headers?: Record<string, string>];

// ---- token (src/auth/tokens.service.ts) ----
const TOKEN_CACHE_MS = 5_000;
const tokenCache = new Map<string, { actor: Actor; until: number }>();

async function authenticate(header: string | undefined): Promise<Actor> {
  const token = tokenFromAuthorization(header);
  if (!token) throw DomainError.unauthenticated();
  const hash = hashToken(token);
  const key = hash.toString('base64');
  const now = Date.now();
  const cached = tokenCache.get(key);
  if (cached && cached.until > now) return cached.actor;
  if (!hasValidChecksum(token)) throw DomainError.unauthenticated();
  const [row] = await rows<TokenRow>(TOKEN_BY_HASH, [hash]);
  if (!row) throw DomainError.unauthenticated();
  const actor = actorOfToken(row);
  tokenCache.set(key, { actor, until: now + TOKEN_CACHE_MS });
  return actor;
}

// ---- per-token rate limit: a fixed window of 60 s counted in memory ----
const RATE_LIMIT = Number(process.env.FLOOR_RATE_LIMIT_API_PER_MIN ?? 0);
const windows = new Map<string, { hits: number; resetAt: number }>();

function countHit(tokenId: string): void {
  if (RATE_LIMIT <= 0) return;
  const now = Date.now();
  let window = windows.get(tokenId);
  if (!window || window.resetAt <= now) windows.set(tokenId, (window = { hits: 0, resetAt: now + 60_000 }));
  window.hits += 1;
  if (window.hits > RATE_LIMIT) {
    const retryAfter = String(Math.max(1, Math.ceil((window.resetAt - now) / 1000)));
    throw new DomainError(
      ErrorCode.RATE_LIMITED,
      'too many requests for this token, try again later',
      {},
      {
        'Retry-After': retryAfter,
      },
    );
  }
}

// ---- organization routes: membership, role and the path's product in one statement (src/auth/auth.guard.ts) ----
interface Access {
  orgId: string;
  /** The path's product id; null when the organization has no such product. */
  productId: string | null;
}

async function orgAccess(
  route: RouteName,
  actor: Actor,
  orgName: string,
  productName?: string,
): Promise<Access> {
  const policy = ROUTE_POLICIES[route];
  if (policy.scope !== 'org') throw new Error(`${route} is not an organization route`);
  const [row] = await rows<OrgAccessRow & Record<string, unknown>>(
    productName === undefined ? ORG_ACCESS : ORG_AND_PRODUCT_ACCESS,
    productName === undefined ? [orgName, actor.userId] : [orgName, actor.userId, productName],
  );
  if (!row) throw DomainError.notFound();
  if (!roleSatisfies(row.role, policy.role)) throw DomainError.roleTooLow();
  const product = productName === undefined ? null : joinedProductRow(row);
  return { orgId: row.org_id, productId: product?.id ?? null };
}

function productOf(access: Access): string {
  if (access.productId === null) throw DomainError.notFound();
  return access.productId;
}

// ---- the endpoints ----
async function deviceList(access: Access, query: RawQuery): Promise<Answer> {
  const listQuery = parseDeviceListQuery(query);
  const productId = productOf(access);
  const { where, orderBy, params } = deviceListSql(productId, listQuery);
  const count = deviceCountSql(productId, listQuery, where, params);
  const [page, [{ count: total }]] = await Promise.all([
    rows<DeviceRow>(devicePageSql(where, orderBy, params), [
      ...params,
      listQuery.page.pageSize,
      listQuery.page.offset,
    ]),
    rows<{ count: number }>(count.sql, count.params),
  ]);
  return [200, { data: page.map(deviceView), pagination: paginationView(listQuery.page, total) }];
}

async function irohList(access: Access, query: RawQuery): Promise<Answer> {
  const statements = irohListStatements(access.orgId, parseIrohListQuery(query));
  switch (statements.kind) {
    case 'all':
      return [
        200,
        { data: (await rows<EndpointRow>(statements.all.sql, statements.all.params)).map(endpointView) },
      ];
    case 'searchPage': {
      const found = await rows<EndpointRow & { total: number }>(
        statements.searchPage.sql,
        statements.searchPage.params,
      );
      const hits = found.filter((row) => row.identifier !== null);
      return [
        200,
        { data: hits.map(endpointView), pagination: paginationView(statements.page, found[0].total) },
      ];
    }
    case 'page': {
      const [page, [{ total }]] = await Promise.all([
        rows<EndpointRow>(statements.rows.sql, statements.rows.params),
        rows<{ total: number }>(statements.count.sql, statements.count.params),
      ]);
      return [200, { data: page.map(endpointView), pagination: paginationView(statements.page, total) }];
    }
  }
}

async function scriptShow(access: Access, rawId: string): Promise<Answer> {
  const productId = productOf(access);
  const id = parseBigId(rawId);
  const [row] = id === null ? [] : await rows<ScriptRow>(SCRIPT_IN_PRODUCT, [productId, id]);
  if (!row) throw DomainError.notFound();
  return [200, { data: scriptView(row) }];
}

async function route(req: http.IncomingMessage): Promise<Answer> {
  const url = req.url ?? '/';
  const queryAt = url.indexOf('?');
  const path = queryAt < 0 ? url : url.slice(0, queryAt);
  const query: RawQuery = queryAt < 0 ? {} : parseQuery(url.slice(queryAt + 1));
  if (req.method !== 'GET') throw DomainError.notFound();
  const actor = await authenticate(req.headers.authorization);
  countHit(actor.tokenId);
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  if (parts.length === 3 && parts[0] === 'api' && parts[1] === 'users' && parts[2] === 'me') {
    const me: UserView = { username: actor.username, email: actor.email, name: actor.name };
    return [200, { data: me }];
  }
  if (parts[0] !== 'api' || parts[1] !== 'orgs') throw DomainError.notFound();
  const org = parts[2];
  if (parts.length === 4 && parts[3] === 'iroh_endpoints') {
    return irohList(await orgAccess('iroh.list', actor, org), query);
  }
  if (parts.length === 6 && parts[3] === 'products' && parts[5] === 'devices') {
    return deviceList(await orgAccess('devices.list', actor, org, parts[4]), query);
  }
  if (parts.length === 7 && parts[3] === 'products' && parts[5] === 'scripts') {
    return scriptShow(await orgAccess('scripts.show', actor, org, parts[4]), parts[6]);
  }
  throw DomainError.notFound();
}

// ---- firmware downloads (src/gateway/firmware-downloads.ts) ----
const linkKey = process.env.FLOOR_DOWNLOAD_LINK_KEY;
const signer = linkKey ? new DownloadLinkSigner(Buffer.from(linkKey, 'hex'), '') : null;
const firmwareDir = resolve(process.env.FLOOR_FIRMWARE_DIR ?? 'firmware');

async function download(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://floor');
  const [firmwareId, file] = url.pathname.slice(DOWNLOAD_PATH_PREFIX.length + 1).split('/');
  const name = /^([0-9a-f-]{36})\.(?:fw|avm|bin)$/.exec(file ?? '');
  if (!signer || req.method !== 'GET' || !/^\d{1,19}$/.test(firmwareId) || !name)
    throw DomainError.notFound();
  const path = downloadPath(firmwareId, file);
  if (
    !signer.verify(
      path,
      url.searchParams.get('expires') ?? undefined,
      url.searchParams.get('signature') ?? undefined,
    )
  ) {
    throw new DomainError(ErrorCode.INVALID_DOWNLOAD_LINK, 'invalid or expired download link');
  }
  const [row] = await rows<{ storage_key: string }>(
    `SELECT storage_key FROM firmwares WHERE id = $1 AND uuid = $2`,
    [firmwareId, name[1]],
  );
  const filePath = row && resolve(firmwareDir, row.storage_key);
  if (!filePath?.startsWith(firmwareDir + sep)) throw DomainError.notFound();
  const size = (await stat(filePath).catch(() => null))?.size;
  if (size === undefined) throw DomainError.notFound();
  const range = parseRange(req.headers.range, size);
  const headers: http.OutgoingHttpHeaders = {
    'accept-ranges': 'bytes',
    'content-type': 'application/octet-stream',
    'cache-control': 'private, no-store',
  };
  if (range === 'unsatisfiable') {
    res.writeHead(416, { ...headers, 'content-range': `bytes */${size}`, 'content-length': 0 }).end();
    return;
  }
  if (range) headers['content-range'] = `bytes ${range.start}-${range.end}/${size}`;
  headers['content-length'] = range ? range.end - range.start + 1 : size;
  res.writeHead(range ? 206 : 200, headers);
  if (size === 0) {
    res.end();
    return;
  }
  // A device that goes away mid-download is normal.
  await pipeline(createReadStream(filePath, range ?? {}), res).catch(() => undefined);
}

function reply(res: http.ServerResponse, [status, body, headers]: Answer): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

/** Requests still being answered: the pool ends only after the last (a client may leave before its answer). */
let inFlight = 0;
let stopping = false;
const settled = () => {
  inFlight -= 1;
  if (stopping && inFlight === 0) void pool.end().then(() => process.exit(0));
};

const server = http.createServer((req, res) => {
  req.resume();
  inFlight += 1;
  const answer = req.url?.startsWith(`${DOWNLOAD_PATH_PREFIX}/`)
    ? download(req, res).then(() => null)
    : route(req);
  answer.then(
    (answer) => {
      if (answer) reply(res, answer);
      settled();
    },
    (err: unknown) => {
      if (err instanceof DomainError) {
        const { status, body } = errorBody(err);
        reply(res, [status, body, err.headers]);
      } else {
        process.stderr.write(`floor: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
        reply(res, [500, { errors: { detail: 'Internal Server Error' } }]);
      }
      settled();
    },
  );
});
server.keepAliveTimeout = 65_000;

const nest = Object.keys(require.cache).find((path) => path.includes('/node_modules/@nestjs/'));
if (nest) {
  process.stderr.write(
    `floor: Nest was loaded (${nest}); the floor must stay a bare node:http + pg server\n`,
  );
  process.exit(1);
}
server.listen(Number(process.env.PORT ?? 0), process.env.HOST ?? '127.0.0.1', () => {
  const { address, port } = server.address() as AddressInfo;
  process.stdout.write(`floor listening on http://${address}:${port}\n`);
});
const stop = () => {
  stopping = true;
  server.close();
  server.closeAllConnections();
  if (inFlight === 0) void pool.end().then(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
