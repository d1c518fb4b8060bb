import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { loadConfig } from '../src/config/config';
import { EmbeddedPostgres } from '../src/database/embedded-postgres';
import { startServer } from '../src/server';

async function query(url: string, sql: string): Promise<unknown[]> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows;
  } finally {
    await client.end();
  }
}

async function isRunning(dataDir: string): Promise<boolean> {
  const pidFile = join(dataDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return false;
  const pid = Number((await readFile(pidFile, 'utf8')).split('\n')[0]);
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('embedded PostgreSQL', () => {
  let root: string;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'fleethub-pg-'));
    // PostgreSQL runs as the postgres user when the tests run as root: it must reach the data directories.
    await chmod(root, 0o755);
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('initialises once, keeps data across restarts, and stops on stop()', async () => {
    const dataDir = join(root, 'a', 'postgres');
    const first = new EmbeddedPostgres({ dataDir, database: 'fleethub' });
    const url = await first.start();
    await query(url, 'CREATE TABLE kept (v int); INSERT INTO kept VALUES (42)');
    await first.stop();
    expect(await isRunning(dataDir)).toBe(false);

    const second = new EmbeddedPostgres({ dataDir, database: 'fleethub' });
    const again = await second.start();
    expect(await query(again, 'SELECT v FROM kept')).toEqual([{ v: 42 }]);
    await second.stop();
  });

  it('a second process shares a running server and leaves it running', async () => {
    const dataDir = join(root, 'b', 'postgres');
    const owner = new EmbeddedPostgres({ dataDir, database: 'fleethub' });
    const url = await owner.start();
    const guest = new EmbeddedPostgres({ dataDir, database: 'fleethub' });
    // Same process here, so the owner file names a live pid: the guest must not take over.
    expect(await guest.start()).toBe(url);
    await guest.stop();
    expect(await isRunning(dataDir)).toBe(true);
    await owner.stop();
    expect(await isRunning(dataDir)).toBe(false);
  });

  it('adopts a server left running by a killed process, then stops it', async () => {
    const dataDir = join(root, 'c', 'postgres');
    // A child process starts the cluster and is killed with SIGKILL before it can stop it.
    const child = spawn(
      process.execPath,
      [
        '-e',
        `const { EmbeddedPostgres } = require(${JSON.stringify(join(__dirname, '..', 'dist', 'src', 'database', 'embedded-postgres.js'))});
         new EmbeddedPostgres({ dataDir: ${JSON.stringify(dataDir)}, database: 'fleethub' }).start()
           .then((url) => { process.stdout.write(url + '\\n'); setInterval(() => {}, 1000); });`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => resolve(chunk.toString().trim()));
      child.on('exit', (code) => reject(new Error(`child exited ${code}`)));
    });
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    expect(await isRunning(dataDir)).toBe(true);

    const adopter = new EmbeddedPostgres({ dataDir, database: 'fleethub' });
    expect(await adopter.start()).toBe(url);
    expect(await query(url, 'SELECT 1 AS ok')).toEqual([{ ok: 1 }]);
    await adopter.stop();
    expect(await isRunning(dataDir)).toBe(false);
  });

  it('the server starts on a fresh data dir (embedded database, migrations), serves, and stops it all', async () => {
    const dataDir = join(root, 'server');
    const server = await startServer(
      loadConfig({ FLEETHUB_DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'silent' }),
    );
    try {
      const health = await fetch(`${server.url}/readyz`);
      expect(health.status).toBe(200);
      const me = await fetch(`${server.url}/api/users/me`);
      expect(me.status).toBe(401);
      expect(await me.json()).toEqual({ error: 'unauthorized' });
    } finally {
      await server.close();
    }
    expect(await isRunning(join(dataDir, 'postgres'))).toBe(false);
  });
});
