import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { load } from 'js-yaml';
import { isReady } from '../src/healthcheck';
import { listenOnLoopback } from './support/listening-app';
import { createTestApp, type TestApp } from './support/test-app';

/**
 * The container files, checked without a Docker engine: their structure here, the runtime stage's commands by
 * `npm run check:docker-runtime` (in .ci/run).
 */
const root = join(__dirname, '..');
const read = (path: string) => readFileSync(join(root, path), 'utf8');

interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile: string };
  environment?: Record<string, string>;
  volumes?: string[];
  ports?: string[];
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
  ulimits?: Record<string, { soft: number; hard: number }>;
  sysctls?: Record<string, number>;
}

describe('docker/compose.yaml', () => {
  const compose = load(read('docker/compose.yaml')) as {
    services: Record<string, ComposeService>;
    volumes: Record<string, unknown>;
  };

  it('runs PostgreSQL 16 and fleethub, fleethub once the database is healthy', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['fleethub', 'postgres']);
    const { postgres, fleethub } = compose.services;
    expect(postgres.image).toBe('postgres:16');
    expect(postgres.healthcheck?.test.join(' ')).toContain('pg_isready');
    expect(fleethub.depends_on).toEqual({ postgres: { condition: 'service_healthy' } });
    expect(fleethub.healthcheck?.test).toEqual(['CMD', 'node', 'dist/src/healthcheck.js']);
    expect(fleethub.build).toEqual({ context: '..', dockerfile: 'docker/Dockerfile' });
  });

  it('wires the database by DATABASE_URL and keeps the database and /data in volumes', () => {
    const { postgres, fleethub } = compose.services;
    const db = postgres.environment!;
    const url = new URL(
      fleethub
        .environment!.DATABASE_URL.replace(/\$\{POSTGRES_PASSWORD:-([^}]*)\}/, '$1')
        .replace(/^postgres:/, 'http:'),
    );
    expect([url.hostname, url.port, url.username, url.pathname]).toEqual([
      'postgres',
      '5432',
      db.POSTGRES_USER,
      `/${db.POSTGRES_DB}`,
    ]);
    expect(postgres.volumes).toEqual(['postgres-data:/var/lib/postgresql/data']);
    expect(fleethub.volumes).toEqual(['fleethub-data:/data']);
    expect(Object.keys(compose.volumes).sort()).toEqual(['fleethub-data', 'postgres-data']);
    expect(fleethub.ports).toEqual(['4000:4000']);
  });

  it('gives fleethub room for a large fleet of device sockets', () => {
    const { fleethub } = compose.services;
    expect(fleethub.ulimits).toEqual({ nofile: { soft: 65536, hard: 65536 } });
    expect(fleethub.sysctls).toEqual({ 'net.core.somaxconn': 4096 });
  });
});

describe('docker/Dockerfile', () => {
  const lines = read('docker/Dockerfile')
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.startsWith('#'));
  const runtimeStart = lines.findIndex((line) => / AS runtime$/.test(line));
  const build = lines.slice(0, runtimeStart);
  const runtime = lines.slice(runtimeStart);

  it('builds in one stage with npm ci and npm run build', () => {
    expect(build[0]).toMatch(/^FROM node:20-\S*slim AS build$/);
    expect(build).toContain('RUN npm ci --ignore-scripts --no-audit --no-fund');
    expect(build).toContain('RUN npm run build');
  });

  it('runs on slim node 20 as a non-root user with the container settings', () => {
    expect(runtime[0]).toMatch(/^FROM node:20-\S*slim AS runtime$/);
    const env = runtime.find((line) => line.startsWith('ENV '))!;
    expect(env).toContain('HOST=0.0.0.0');
    expect(env).toContain('FLEETHUB_DATA_DIR=/data');
    expect(runtime).toContain('USER node');
    expect(runtime.some((l) => l.startsWith('RUN npm ci --omit=dev --omit=optional --ignore-scripts'))).toBe(
      true,
    );
    expect(runtime).toContain('COPY --from=build /app/dist ./dist');
    expect(runtime.find((l) => l.startsWith('HEALTHCHECK'))).toMatch(
      /CMD \["node", "dist\/src\/healthcheck\.js"\]$/,
    );
    expect(runtime.at(-1)).toBe('CMD ["node", "dist/src/main.js"]');
  });

  it('.dockerignore keeps local state and dependencies out of the build context', () => {
    const ignored = read('.dockerignore').split('\n');
    for (const entry of ['node_modules', 'dist', '.data', '.git']) expect(ignored).toContain(entry);
  });
});

describe('src/healthcheck.ts (the HEALTHCHECK command)', () => {
  let t: TestApp;
  let port: number;
  beforeAll(async () => {
    t = await createTestApp();
    ({ port } = await listenOnLoopback(t));
  });
  afterAll(() => t.close());

  it('is ready when /readyz answers 200', async () => {
    expect(await isReady(String(port))).toBe(true);
  });

  it('is not ready when /readyz answers 503', async () => {
    const query = jest.spyOn(t.db, 'query').mockRejectedValue(new Error('connection refused'));
    try {
      expect(await isReady(String(port))).toBe(false);
    } finally {
      query.mockRestore();
    }
  });

  it('is not ready when nothing listens on the port', async () => {
    expect(await isReady('1')).toBe(false);
  });
});
