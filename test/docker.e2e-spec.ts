import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, posix, relative } from 'node:path';
import { load } from 'js-yaml';
import ts from 'typescript';
import { loadConfig } from '../src/config/config';
import { InstanceBus } from '../src/database/instance-bus/instance-bus';
import { listenOnLoopback } from './support/listening-app';
import { createTestApp, type TestApp } from './support/test-app';

/**
 * What the image must do, checked without a Docker engine (none runs here): the files it runs are ones the build
 * produces and the runtime stage holds, it runs as a user other than root who can write its data folder, its
 * environment makes the server listen on the exposed port, the build context holds what the Dockerfile copies and
 * not local state, and the HEALTHCHECK's compiled script tells a ready server from an unready or absent one. The
 * runtime stage's install and start are run for real by `npm run check:docker-runtime` (in .ci/run).
 */
const root = join(__dirname, '..');
const read = (path: string) => readFileSync(join(root, path), 'utf8');

interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile: string };
  command?: string[];
  entrypoint?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  ports?: string[];
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }> | string[];
  ulimits?: Record<string, { soft: number; hard: number }>;
  sysctls?: Record<string, number>;
  stop_grace_period?: string;
}

/** `${NAME:-default}` → default, `${NAME:?message}` → `value` (what compose does when NAME is unset). */
function interpolate(text: string, value = 'x'.repeat(40)): string {
  return text.replace(/\$\{[A-Z0-9_]+:-([^}]*)\}/g, '$1').replace(/\$\{[A-Z0-9_]+:\?[^}]*\}/g, value);
}

describe('docker/compose.yaml: two instances behind HAProxy, PostgreSQL 16, firmware in a MinIO bucket', () => {
  const raw = load(read('docker/compose.yaml')) as {
    services: Record<string, ComposeService & { '<<'?: ComposeService }>;
    volumes: Record<string, unknown>;
  };
  // The instances share their settings through a YAML merge key (`<<: *fleethub`), which compose resolves.
  const compose = {
    ...raw,
    services: Object.fromEntries(
      Object.entries(raw.services).map(([name, { '<<': base, ...own }]) => [name, { ...base, ...own }]),
    ),
  };
  const instances = ['fleethub-1', 'fleethub-2'];

  it('runs PostgreSQL 16, MinIO and its bucket setup, two fleethub instances and the proxy', () => {
    expect(Object.keys(compose.services).sort()).toEqual([
      'fleethub-1',
      'fleethub-2',
      'minio',
      'minio-setup',
      'postgres',
      'proxy',
    ]);
    const { postgres, minio } = compose.services;
    expect(postgres.image).toBe('postgres:16');
    expect(postgres.healthcheck?.test.join(' ')).toContain('pg_isready');
    expect(minio.healthcheck?.test).toEqual(['CMD', 'mc', 'ready', 'local']);
    expect(compose.services['minio-setup'].depends_on).toEqual({ minio: { condition: 'service_healthy' } });
    expect(compose.services['minio-setup'].entrypoint?.join(' ')).toContain('mc mb --ignore-existing');
  });

  it('starts each instance once the database is healthy and the bucket exists, from the same image and settings', () => {
    for (const name of instances) {
      const instance = compose.services[name];
      expect(instance.depends_on).toEqual({
        postgres: { condition: 'service_healthy' },
        'minio-setup': { condition: 'service_completed_successfully' },
      });
      expect(instance.healthcheck?.test).toEqual(['CMD', 'node', 'dist/src/healthcheck.js']);
      expect(instance.build).toEqual({ context: '..', dockerfile: 'docker/Dockerfile' });
      expect(instance.ports).toBeUndefined();
      expect(instance.ulimits).toEqual({ nofile: { soft: 65536, hard: 65536 } });
      expect(instance.sysctls).toEqual({ 'net.core.somaxconn': 4096 });
      expect(instance.volumes).toEqual([`${name}-data:/data`]);
    }
    expect(compose.services['fleethub-1'].environment).toEqual(compose.services['fleethub-2'].environment);
  });

  it('configures a valid, shared object storage; the database by DATABASE_URL', () => {
    const { postgres, minio } = compose.services;
    const env = Object.fromEntries(
      Object.entries(compose.services['fleethub-1'].environment!).map(([k, v]) => [k, interpolate(v)]),
    );
    const config = loadConfig(env);
    // Docker waits this long after SIGTERM before SIGKILL: the drain and the requests in flight must fit in it.
    const grace = /^(\d+)s$/.exec(compose.services['fleethub-1'].stop_grace_period ?? '');
    expect(Number(grace?.[1]) * 1000).toBeGreaterThanOrEqual(
      config.shutdownDrainMs + config.shutdownTimeoutMs + 2000,
    );
    expect(config.storage).toEqual({
      kind: 's3',
      bucket: interpolate(compose.services['minio-setup'].environment!.FLEETHUB_S3_BUCKET),
      prefix: 'firmware/',
      endpoint: 'http://minio:9000',
      publicEndpoint: 'http://localhost:9000',
      region: null,
      forcePathStyle: true,
      urlLifetimeSec: 86400,
    });
    expect(env.AWS_ACCESS_KEY_ID).toBe(interpolate(minio.environment!.MINIO_ROOT_USER));
    expect(env.AWS_SECRET_ACCESS_KEY).toBe(interpolate(minio.environment!.MINIO_ROOT_PASSWORD));
    // Without a shared secret key each instance would generate its own: compose refuses to start.
    expect(compose.services['fleethub-1'].environment!.FLEETHUB_SECRET_KEY).toMatch(
      /^\$\{FLEETHUB_SECRET_KEY:\?/,
    );
    const url = new URL(env.DATABASE_URL.replace(/^postgres:/, 'http:'));
    const db = postgres.environment!;
    expect([url.hostname, url.port, url.username, url.pathname]).toEqual([
      'postgres',
      '5432',
      db.POSTGRES_USER,
      `/${db.POSTGRES_DB}`,
    ]);
    expect(postgres.volumes).toEqual(['postgres-data:/var/lib/postgresql/data']);
    expect(Object.keys(compose.volumes).sort()).toEqual([
      'fleethub-1-data',
      'fleethub-2-data',
      'minio-data',
      'postgres-data',
    ]);
    expect(minio.ports).toEqual(['9000:9000']);
  });

  it('publishes port 4000 on the proxy only, which checks /readyz and balances both instances, websockets included', () => {
    const { proxy } = compose.services;
    expect(proxy.ports).toEqual(['4000:4000']);
    expect(proxy.volumes).toEqual(['./haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro']);
    const cfg = read('docker/haproxy.cfg');
    expect(cfg).toMatch(/^\s*bind :4000$/m);
    expect(cfg).toMatch(/^\s*mode http$/m);
    expect(cfg).toMatch(/^\s*timeout tunnel \d+h$/m);
    expect(cfg).toMatch(/^\s*option httpchk GET \/readyz$/m);
    for (const name of instances) expect(cfg).toMatch(new RegExp(`^\\s*server ${name} ${name}:4000$`, 'm'));
  });
});

/** One instruction of a Dockerfile: its stage (index), keyword and argument text. */
interface Instruction {
  stage: number;
  keyword: string;
  args: string;
}

interface Stage {
  name: string | undefined;
  workdir: string;
  instructions: Instruction[];
}

function parseDockerfile(text: string): Stage[] {
  const stages: Stage[] = [];
  const lines = text
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
  for (const line of lines) {
    const [, keyword, args] = /^(\S+)\s*(.*)$/.exec(line)!;
    const upper = keyword.toUpperCase();
    if (upper === 'FROM') {
      stages.push({ name: /\sAS\s+(\S+)$/i.exec(args)?.[1], workdir: '/', instructions: [] });
      continue;
    }
    const stage = stages.at(-1)!;
    if (upper === 'WORKDIR') stage.workdir = posix.resolve(stage.workdir, args);
    stage.instructions.push({ stage: stages.length - 1, keyword: upper, args });
  }
  return stages;
}

/** The command of a `CMD ["node", "file"]` or `HEALTHCHECK ... CMD ["node", "file"]` instruction. */
function execForm(args: string): string[] {
  return JSON.parse(/(\[.*\])\s*$/.exec(args)![1]) as string[];
}

/** COPY's sources and destination, and its `--from` stage when there is one. */
function copyOf(args: string): { from: string | undefined; sources: string[]; dest: string } {
  const words = args.split(/\s+/);
  const from = words.find((w) => w.startsWith('--from='))?.slice('--from='.length);
  const paths = words.filter((w) => !w.startsWith('--'));
  return { from, sources: paths.slice(0, -1), dest: paths.at(-1)! };
}

/** The compiler configuration of `npm run build` (tsconfig.build.json). */
function buildConfig(): ts.ParsedCommandLine {
  return ts.getParsedCommandLineOfConfigFile(
    join(root, 'tsconfig.build.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      },
    },
  )!;
}

/** What `npm run build` writes: the compiled path (relative to the repository) of every source file. */
function buildOutputs(): Set<string> {
  const config = buildConfig();
  const { outDir, rootDir } = config.options;
  return new Set(
    config.fileNames
      .filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'))
      .map((file) => relative(root, join(outDir!, relative(rootDir!, file))).replace(/\.ts$/, '.js')),
  );
}

/** Whether `.dockerignore`'s patterns (Docker's rules: from the context root, `*`, `**`, `!` exceptions) leave `path` out. */
function dockerIgnored(patterns: string[], path: string): boolean {
  const toRegExp = (pattern: string) =>
    new RegExp(
      '^' +
        pattern
          .replace(/^\/+|\/+$/g, '')
          .split('**')
          .map((part) =>
            part
              .replace(/[.+^${}()|[\]\\]/g, '\\$&')
              .replace(/\*/g, '[^/]*')
              .replace(/\?/g, '[^/]'),
          )
          .join('.*') +
        '(/.*)?$',
    );
  let ignored = false;
  for (const pattern of patterns) {
    const negated = pattern.startsWith('!');
    if (toRegExp(negated ? pattern.slice(1) : pattern).test(path)) ignored = !negated;
  }
  return ignored;
}

describe('docker/Dockerfile', () => {
  const stages = parseDockerfile(read('docker/Dockerfile'));
  const runtime = stages.at(-1)!;
  const lastOf = (stage: Stage, keyword: string) =>
    stage.instructions.filter((i) => i.keyword === keyword).at(-1);
  const env = Object.fromEntries(
    runtime.instructions
      .filter((i) => i.keyword === 'ENV')
      .flatMap((i) => [...i.args.matchAll(/(\w+)=(\S+)/g)].map(([, name, value]) => [name, value])),
  );

  it('runs, and health-checks with, files that the build produces and the runtime stage holds', () => {
    const outputs = buildOutputs();
    const commands = [lastOf(runtime, 'CMD')!, lastOf(runtime, 'HEALTHCHECK')!].map((i) => execForm(i.args));
    expect(commands.map((c) => c[0])).toEqual(['node', 'node']);
    for (const file of commands.map((c) => c.at(-1)!)) {
      expect({ file, built: outputs.has(file) }).toEqual({ file, built: true });
      // Some COPY of the runtime stage brings the file from a stage whose build wrote it there.
      const held = runtime.instructions
        .filter((i) => i.keyword === 'COPY')
        .map((i) => copyOf(i.args))
        .some(({ from, sources, dest }) => {
          const source = stages.find((s) => s.name === from);
          if (!source || !source.instructions.some((i) => /\bnpm run build\b/.test(i.args))) return false;
          const destDir = posix.resolve(runtime.workdir, dest);
          const inImage = posix.resolve(runtime.workdir, file);
          return sources.some((src) => {
            const built = posix.relative(source.workdir, posix.resolve(source.workdir, src));
            return inImage.startsWith(`${destDir}/`) && file.startsWith(`${built}/`);
          });
        });
      expect({ file, held }).toEqual({ file, held: true });
    }
  });

  it('starts the server as `npm start` and `npm run start:prod` do (the same node flags: the heap, pretenuring)', () => {
    const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts;
    const prod = scripts['start:prod'].split(/\s+/);
    expect(prod).toEqual(
      expect.arrayContaining([
        '--max-old-space-size=1024',
        '--max-semi-space-size=8',
        '--no-allocation-site-pretenuring',
      ]),
    );
    expect(execForm(lastOf(runtime, 'CMD')!.args)).toEqual(prod);
    expect(scripts.start.endsWith(`&& ${scripts['start:prod']}`)).toBe(true);
  });

  it('runs as a user other than root, who owns the data folder', () => {
    const user = lastOf(runtime, 'USER')?.args.split(':')[0];
    expect(user).toBeDefined();
    expect(['root', '0']).not.toContain(user);
    const dataDir = env.FLEETHUB_DATA_DIR;
    expect(dataDir).toBeDefined();
    const owned = runtime.instructions.some(
      (i) =>
        i.keyword === 'RUN' &&
        new RegExp(`\\bchown (-R )?${user}(:\\S+)? (\\S+ )*${dataDir}(\\s|$)`).test(i.args),
    );
    expect(owned).toBe(true);
  });

  it('installs xdelta3 from Debian (fwup delta updates), as root, before it drops to its user', () => {
    const index = runtime.instructions.findIndex(
      (i) => i.keyword === 'RUN' && /\bapt-get install\b.*\bxdelta3\b/.test(i.args),
    );
    expect(index).toBeGreaterThanOrEqual(0);
    expect(runtime.instructions.findIndex((i) => i.keyword === 'USER')).toBeGreaterThan(index);
  });

  it('its environment makes the server listen on every interface, on the port it exposes', () => {
    const config = loadConfig({ ...env, DATABASE_URL: 'postgres://fleethub@postgres:5432/fleethub' });
    expect(config.host).toBe('0.0.0.0');
    expect(lastOf(runtime, 'EXPOSE')!.args.split(/\s+/)).toContain(String(config.port));
    expect(config.dataDir).toBe(env.FLEETHUB_DATA_DIR);
  });

  it('.dockerignore keeps local state and dependencies out, and everything the Dockerfile copies in', () => {
    const patterns = read('.dockerignore')
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== '' && !line.startsWith('#'));
    for (const path of [
      'node_modules/pg/package.json',
      '.data/pg/PG_VERSION',
      'dist/src/main.js',
      '.git/HEAD',
    ]) {
      expect({ path, ignored: dockerIgnored(patterns, path) }).toEqual({ path, ignored: true });
    }
    const copied = stages
      .flatMap((s) => s.instructions)
      .filter((i) => i.keyword === 'COPY')
      .map((i) => copyOf(i.args))
      .filter((c) => c.from === undefined)
      .flatMap((c) => c.sources);
    expect(copied.length).toBeGreaterThan(0);
    for (const path of copied) {
      expect({ path, exists: existsSync(join(root, path)), ignored: dockerIgnored(patterns, path) }).toEqual({
        path,
        exists: true,
        ignored: false,
      });
    }
  });
});

describe('the HEALTHCHECK script (src/healthcheck.ts, compiled)', () => {
  let t: TestApp;
  let port: number;
  let dir: string;
  let script: string;
  beforeAll(async () => {
    // Compiled as the build compiles it; the script imports nothing of the project (the image runs it alone).
    const config = buildConfig();
    const { outputText } = ts.transpileModule(read('src/healthcheck.ts'), {
      compilerOptions: { ...config.options, module: ts.ModuleKind.CommonJS, sourceMap: false },
    });
    dir = await mkdtemp(join(tmpdir(), 'fleethub-healthcheck-'));
    await mkdir(join(dir, 'dist', 'src'), { recursive: true });
    script = join(dir, 'dist', 'src', 'healthcheck.js');
    await writeFile(script, outputText);
    t = await createTestApp();
    ({ port } = await listenOnLoopback(t));
  });
  afterAll(async () => {
    await t.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** The exit code of `node dist/src/healthcheck.js` with only PATH and PORT set, as in the image. */
  const healthcheck = (portValue: string) =>
    new Promise<number>((resolve) => {
      execFile(
        process.execPath,
        [script],
        { env: { PATH: process.env.PATH, PORT: portValue }, timeout: 15_000 },
        (err) => resolve(err ? ((err as { code?: unknown }).code as number) : 0),
      );
    });

  it('exits 0 when /readyz answers 200', async () => {
    expect(await healthcheck(String(port))).toBe(0);
  });

  it('exits 1 when /readyz answers 503', async () => {
    // The database as readiness sees it: no heartbeat of the instance's own connection answered lately.
    const heard = jest
      .spyOn(t.app.get(InstanceBus), 'caughtUpAt', 'get')
      .mockReturnValue(Number.NEGATIVE_INFINITY);
    try {
      expect(await healthcheck(String(port))).toBe(1);
    } finally {
      heard.mockRestore();
    }
  });

  it('exits 1 when nothing listens on the port', async () => {
    expect(await healthcheck('1')).toBe(1);
  });
});
