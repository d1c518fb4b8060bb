import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import {
  chmod,
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  readlink,
  realpath,
  rename,
  rm,
  stat,
  unlink,
  writeFile,
} from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import { Client } from 'pg';
import { loadConfig } from '../src/config/config';
import { SECRET_KEY_FILE, ServerKeyService } from '../src/device-auth/server-key.service';
import {
  EMBEDDED_PG_SYSTEM_DIR,
  EmbeddedPostgres,
  EmbeddedPostgresError,
} from '../src/database/embedded-postgres';
import { startServer } from '../src/server';
import { UNAUTHORIZED } from './support/contract-bodies';

const asRoot = userInfo().uid === 0;

async function query(url: string, sql: string): Promise<unknown[]> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows;
  } finally {
    await client.end();
  }
}

async function postmasterPid(dataDir: string): Promise<number | null> {
  const pidFile = join(dataDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return null;
  const pid = Number((await readFile(pidFile, 'utf8')).split('\n')[0]);
  try {
    process.kill(pid, 0);
    return pid;
  } catch {
    return null;
  }
}

const isRunning = async (dataDir: string) => (await postmasterPid(dataDir)) !== null;

/** Waits (up to 5 s) until a process has exited: `pg_ctl stop -w` returns once the pid file is gone. */
async function hasExited(pid: number): Promise<boolean> {
  for (let tries = 0; tries < 50; tries++) {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null);
    if (stat === null || stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}
const mode = async (path: string) => (await stat(path)).mode & 0o777;

/** Removes the cluster a data dir links to (as root, clusters live in the system folder, not in the data dir). */
async function removeLinkedCluster(dataDir: string): Promise<void> {
  if (
    !(await lstat(dataDir).then(
      (info) => info.isSymbolicLink(),
      () => false,
    ))
  )
    return;
  await rm(dirname(await realpath(dataDir)), { recursive: true, force: true });
}

describe('embedded PostgreSQL', () => {
  // Private, as `mktemp -d` makes it (and as /root is): as root, the postgres user cannot enter it.
  let root: string;
  // Stands in for /var/lib/fleethub-embedded-pg: root's copy of the binaries and its clusters.
  let systemDir: string;
  const embedded = (dataDir: string, database = 'fleethub') =>
    new EmbeddedPostgres({ dataDir, database, systemDir });
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'fleethub-pg-'));
    systemDir = await mkdtemp(join(tmpdir(), 'fleethub-pg-system-'));
    await chmod(systemDir, 0o755);
  });
  const cleanups: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const cleanup of cleanups) await cleanup();
    await rm(root, { recursive: true, force: true });
    await rm(systemDir, { recursive: true, force: true });
  });

  it('initialises once, keeps data across restarts, and stops on stop()', async () => {
    const dataDir = join(root, 'a', 'postgres');
    const first = embedded(dataDir);
    const url = await first.start();
    await query(url, 'CREATE TABLE kept (v int); INSERT INTO kept VALUES (42)');
    await first.stop();
    expect(await isRunning(dataDir)).toBe(false);

    const second = embedded(dataDir);
    const again = await second.start();
    expect(await query(again, 'SELECT v FROM kept')).toEqual([{ v: 42 }]);
    await second.stop();
  });

  it('a second process shares a running server and leaves it running', async () => {
    const dataDir = join(root, 'b', 'postgres');
    const owner = embedded(dataDir);
    const url = await owner.start();
    const guest = embedded(dataDir);
    // Same process here, so the owner file names a live pid: the guest must not take over.
    expect(await guest.start()).toBe(url);
    await guest.stop();
    expect(await isRunning(dataDir)).toBe(true);
    await owner.stop();
    expect(await isRunning(dataDir)).toBe(false);
  });

  it('the process that started it leaves it to one still connected, which stops it once the starter has gone', async () => {
    const dataDir = join(root, 'handed-over', 'postgres');
    const command = embedded(dataDir);
    const url = await command.start();
    // A server that joined while the command ran: it did not start the cluster, and holds connections.
    const server = embedded(dataDir);
    expect(await server.start()).toBe(url);
    const serverConnection = new Client({ connectionString: url });
    await serverConnection.connect();
    await command.stop();
    expect(await isRunning(dataDir)).toBe(true);
    // The command's process has exited (its pid is a finished child's): the server, leaving last, stops it.
    const exited = spawn(process.execPath, ['-e', '']);
    await new Promise((r) => exited.once('exit', r));
    await writeFile(`${dataDir}.owner`, `${exited.pid}\n`);
    await serverConnection.end();
    await server.stop();
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
         new EmbeddedPostgres({ dataDir: ${JSON.stringify(dataDir)}, database: 'fleethub', systemDir: ${JSON.stringify(systemDir)} }).start()
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

    const adopter = embedded(dataDir);
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
      expect(await me.json()).toEqual(UNAUTHORIZED);
    } finally {
      await server.close();
    }
    expect(await isRunning(join(dataDir, 'postgres'))).toBe(false);
    if (asRoot) {
      expect(await realpath(join(dataDir, 'postgres'))).toMatch(
        new RegExp(`^${EMBEDDED_PG_SYSTEM_DIR}/clusters/[0-9a-f]{16}/postgres$`),
      );
    }
    await removeLinkedCluster(join(dataDir, 'postgres'));
  });

  it('a data dir in a private folder: as root, the binaries run from a copy and the cluster lives in the system folder', async () => {
    const checkout = join(root, 'private-checkout');
    await mkdir(checkout, { mode: 0o700 });
    const dataDir = join(checkout, '.data', 'postgres');
    const first = embedded(dataDir);
    const url = await first.start();
    await query(url, 'CREATE TABLE kept (v int); INSERT INTO kept VALUES (7)');
    const pid = await postmasterPid(dataDir);
    expect(pid).not.toBeNull();
    // The data dir is private, and so is the password beside the cluster.
    expect(await mode(join(checkout, '.data'))).toBe(0o700);
    expect(await mode(`${dataDir}.password`)).toBe(0o600);
    if (asRoot) {
      expect((await lstat(dataDir)).isSymbolicLink()).toBe(true);
      const cluster = await realpath(dataDir);
      expect(cluster).toMatch(new RegExp(`^${systemDir}/clusters/[0-9a-f]{16}/postgres$`));
      expect(await readFile(join(dirname(cluster), 'data-dir'), 'utf8')).toBe(
        `${await realpath(checkout)}/.data/postgres\n`,
      );
      const copy = join(
        systemDir,
        (await readdir(systemDir)).find((name) => name.startsWith('postgresql-'))!,
      );
      expect(await readlink(`/proc/${pid}/exe`)).toBe(join(copy, 'bin', 'postgres'));
      // The libraries' version links, which the package's install script makes, are in the copy.
      expect((await lstat(join(copy, 'lib', 'libicuuc.so.60'))).isSymbolicLink()).toBe(true);
      expect(await mode(systemDir)).toBe(0o755);
    } else {
      expect((await lstat(dataDir)).isDirectory()).toBe(true);
    }
    await first.stop();
    expect(await isRunning(dataDir)).toBe(false);

    const second = embedded(dataDir);
    expect(await query(await second.start(), 'SELECT v FROM kept')).toEqual([{ v: 7 }]);
    await second.stop();
  });

  it('the test cluster starts in a data dir the server made private for its secret key (DATABASE_URL set then)', async () => {
    const dataDir = join(root, 'key-first', '.data');
    await new ServerKeyService({ secretKey: null, dataDir }).load();
    expect(await mode(dataDir)).toBe(0o700);
    const tests = embedded(join(dataDir, 'test', 'postgres'), 'postgres');
    expect(await query(await tests.start(), 'SELECT 1 AS ok')).toEqual([{ ok: 1 }]);
    await tests.stop();
    expect(await mode(dataDir)).toBe(0o700);
    expect(await mode(join(dataDir, SECRET_KEY_FILE))).toBe(0o600);
  });

  it('as root, the cluster of a deleted data dir is stopped and removed when the next cluster is created', async () => {
    const gone = join(root, 'deleted-checkout');
    const orphan = embedded(join(gone, '.data', 'postgres'));
    await orphan.start(); // left running, as by a killed process
    const orphanCluster = await realpath(join(gone, '.data', 'postgres'));
    const orphanPid = (await postmasterPid(orphanCluster))!;
    await rm(gone, { recursive: true, force: true });

    const next = embedded(join(root, 'next-checkout', '.data', 'postgres'));
    await next.start();
    await next.stop();
    if (asRoot) {
      expect(existsSync(dirname(orphanCluster))).toBe(false);
      expect(await hasExited(orphanPid)).toBe(true);
    } else {
      // Not root: clusters stay in their data dir (this one went with it) and the system folder is unused.
      expect(existsSync(orphanCluster)).toBe(false);
      expect(await readdir(systemDir)).toEqual([]);
    }
  });

  it('as root, a cluster kept in the data dir itself stays there, or fails with one line naming the private folder', async () => {
    // The cluster's folder must be reachable at first, so not under the private root.
    const open = await mkdtemp(join(tmpdir(), 'fleethub-pg-open-'));
    cleanups.push(() => rm(open, { recursive: true, force: true }));
    await chmod(open, 0o755);
    const dataDir = join(open, 'postgres');
    const made = embedded(dataDir);
    await query(await made.start(), 'CREATE TABLE kept (v int); INSERT INTO kept VALUES (3)');
    await made.stop();
    if (asRoot) {
      // As clusters were made before they moved to the system folder.
      const cluster = await realpath(dataDir);
      await unlink(dataDir);
      await rename(cluster, dataDir);
    }
    expect((await lstat(dataDir)).isDirectory()).toBe(true);

    const inPlace = embedded(dataDir);
    expect(await query(await inPlace.start(), 'SELECT v FROM kept')).toEqual([{ v: 3 }]);
    await inPlace.stop();
    expect((await lstat(dataDir)).isDirectory()).toBe(true);

    await chmod(open, 0o700);
    const blockedPostgres = embedded(dataDir);
    const blocked = blockedPostgres.start();
    if (asRoot) {
      const err = await blocked.then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(EmbeddedPostgresError);
      const message = (err as Error).message;
      expect(message).toContain(`cannot enter ${dataDir} (${open} is private): run \`chmod o+x ${open}\``);
      expect(message).not.toContain('\n');
      expect((err as Error).stack).toBe(message);
    } else {
      const url = await blocked;
      expect(await query(url, 'SELECT v FROM kept')).toEqual([{ v: 3 }]);
      await blockedPostgres.stop();
    }
  });
});
