/**
 * `npm run check:docker-runtime`: what the runtime stage of docker/Dockerfile does, outside a container (no
 * Docker engine runs here). From the built checkout: copies package.json, package-lock.json, dist/ and bin/ into a
 * temporary folder, runs the stage's `npm ci --omit=dev --omit=optional
 * --ignore-scripts` there, starts the image's `CMD` with its environment (HOST=0.0.0.0,
 * FLEETHUB_DATA_DIR, DATABASE_URL of a scratch PostgreSQL), and checks that the HEALTHCHECK command passes while it
 * runs and fails once it has stopped, and that the CLI works from the same folder.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EmbeddedPostgres } from '../src/database/embedded-postgres';

const root = join(__dirname, '..', '..');

function step(message: string): void {
  process.stdout.write(`docker runtime check: ${message}\n`);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

function healthcheck(appDir: string, port: number): number {
  try {
    execFileSync(process.execPath, ['dist/src/healthcheck.js'], {
      cwd: appDir,
      env: { PATH: process.env.PATH, PORT: String(port) },
      stdio: 'ignore',
      timeout: 10_000,
    });
    return 0;
  } catch (err) {
    return (err as { status?: number }).status ?? 1;
  }
}

/** Resolves once the server prints its "listening" line; rejects if it exits first or takes over a minute. */
function started(server: ChildProcess, output: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the server did not start within 60 s')), 60_000);
    server.stdout!.on('data', (chunk: Buffer) => {
      output.push(chunk.toString());
      if (output.join('').includes('fleethub listening on')) {
        clearTimeout(timer);
        resolve();
      }
    });
    server.stderr!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    server.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the server exited with ${code} before it listened`));
    });
  });
}

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'fleethub-docker-'));
  chmodSync(work, 0o711); // run as root, PostgreSQL runs as the postgres user and must reach its folder
  const appDir = join(work, 'app');
  const postgres = new EmbeddedPostgres({
    dataDir: join(work, 'pg', 'cluster'),
    database: 'fleethub',
    settings: { fsync: 'off' },
  });
  let server: ChildProcess | undefined;
  try {
    mkdirSync(appDir);
    for (const file of ['package.json', 'package-lock.json']) cpSync(join(root, file), join(appDir, file));
    cpSync(join(root, 'dist'), join(appDir, 'dist'), { recursive: true });
    cpSync(join(root, 'bin'), join(appDir, 'bin'), { recursive: true });

    step('npm ci --omit=dev --omit=optional --ignore-scripts');
    execFileSync(
      'npm',
      [
        'ci',
        '--omit=dev',
        '--omit=optional',
        '--ignore-scripts',
        '--no-audit',
        '--no-fund',
        '--loglevel=error',
      ],
      {
        cwd: appDir,
        stdio: ['ignore', 'inherit', 'inherit'],
        env: { ...process.env, NODE_ENV: 'production' },
      },
    );

    const databaseUrl = await postgres.start();
    const port = await freePort();
    const env = {
      PATH: process.env.PATH,
      NODE_ENV: 'production',
      HOST: '0.0.0.0',
      PORT: String(port),
      FLEETHUB_DATA_DIR: join(work, 'data'),
      DATABASE_URL: databaseUrl,
      LOG_LEVEL: 'warn',
    };
    mkdirSync(env.FLEETHUB_DATA_DIR);

    // The image's CMD (`node --max-old-space-size=1024 dist/src/main.js`), as the Dockerfile writes it.
    const command = JSON.parse(
      /^CMD\s+(\[.*\])\s*$/m.exec(readFileSync(join(root, 'docker/Dockerfile'), 'utf8'))![1],
    ) as string[];
    step(`${command.join(' ')} (HOST=0.0.0.0 PORT=${port})`);
    const output: string[] = [];
    server = spawn(process.execPath, command.slice(1), {
      cwd: appDir,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    await started(server, output).catch((err: Error) => {
      throw new Error(`${err.message}\n${output.join('')}`);
    });

    const status = healthcheck(appDir, port);
    if (status !== 0)
      throw new Error(`the HEALTHCHECK command failed (exit ${status}) against a running server`);
    step('HEALTHCHECK command (node dist/src/healthcheck.js): healthy');

    const cli = (args: string[]) =>
      execFileSync(process.execPath, ['bin/fleethub.js', ...args], { cwd: appDir, env, encoding: 'utf8' });
    cli(['users', 'create', '--email', 'docker@example.com', '--username', 'docker']);
    const token =
      cli(['tokens', 'create', '--email', 'docker@example.com']).trimEnd().split('\n').at(-1) ?? '';
    if (!/^nhu_[0-9A-Za-z]+$/.test(token)) throw new Error('the CLI printed no token');
    const me = await fetch(`http://127.0.0.1:${port}/api/users/me`, {
      headers: { authorization: `Bearer ${token}` },
    });
    if (me.status !== 200) throw new Error(`GET /api/users/me with the CLI's token answered ${me.status}`);
    step('CLI (node bin/fleethub.js users create, tokens create) and the API with its token: ok');

    const exited = new Promise<number | null>((resolve) => server!.once('exit', resolve));
    server.kill('SIGTERM');
    const code = await exited;
    server = undefined;
    if (code !== 0) throw new Error(`the server exited with ${code} on SIGTERM`);
    if (healthcheck(appDir, port) === 0)
      throw new Error('the HEALTHCHECK command passed with no server running');
    step('SIGTERM: clean exit 0; HEALTHCHECK command now fails, as it should');
  } finally {
    server?.kill('SIGKILL');
    await postgres.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

main().then(
  () => step('passed'),
  (err: unknown) => {
    process.stderr.write(
      `docker runtime check failed: ${err instanceof Error ? err.message : String(err)}\n`,
    );
    process.exitCode = 1;
  },
);
