import { existsSync } from 'node:fs';
import { lstat, mkdtemp, readdir, readFile, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { loadConfig } from '../src/config/config';
import { startServer } from '../src/server';
import { ROOT, runCliProcess } from './support/cli-process';

/** PostgreSQL servers (postmasters) running on `clusterDir`, counted from /proc. */
async function postgresServersOn(clusterDir: string): Promise<number> {
  let count = 0;
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const args = (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).split('\0');
    if (basename(args[0]) === 'postgres' && args.includes(clusterDir)) count++;
  }
  return count;
}

// Each test starts processes from the TypeScript sources (compiled on the fly).
jest.setTimeout(90_000);

describe('fleethub CLI on the embedded PostgreSQL', () => {
  let root: string;
  const version = async () =>
    (JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'fleethub-cli-pg-'));
  });

  afterAll(async () => {
    // As root the clusters live in the system folder, linked from each data dir.
    for (const name of await readdir(root)) {
      const link = join(root, name, 'postgres');
      if (
        await lstat(link).then(
          (info) => info.isSymbolicLink(),
          () => false,
        )
      ) {
        await rm(dirname(await realpath(link)), { recursive: true, force: true });
      }
    }
    await rm(root, { recursive: true, force: true });
  });

  const cli = (dataDir: string, ...args: string[]) =>
    runCliProcess(args, { FLEETHUB_DATA_DIR: dataDir, DATABASE_URL: '' });

  it('help, version and usage errors touch no database', async () => {
    const dataDir = join(root, 'no-database');
    const [help, subHelp, shown, unknownCommand, unknownOption, group] = await Promise.all([
      cli(dataDir, '--help'),
      cli(dataDir, 'users', 'create', '--help'),
      cli(dataDir, '--version'),
      cli(dataDir, 'bogus'),
      cli(dataDir, 'users', 'create', '--bogus'),
      cli(dataDir, 'users'),
    ]);
    expect(help).toMatchObject({ code: 0, stdout: expect.stringContaining('Usage: fleethub') });
    expect(subHelp).toMatchObject({ code: 0, stdout: expect.stringContaining('--email <email>') });
    expect(shown).toMatchObject({ code: 0, stdout: `${await version()}\n` });
    expect(unknownCommand).toMatchObject({
      code: 1,
      stderr: expect.stringContaining("unknown command 'bogus'"),
    });
    expect(unknownOption).toMatchObject({
      code: 1,
      stderr: expect.stringContaining("unknown option '--bogus'"),
    });
    expect(group).toMatchObject({
      code: 2,
      stderr: 'error: usage: fleethub users create --email E --username U [--name N] [--password P]\n',
    });
    expect(existsSync(join(dataDir, 'postgres'))).toBe(false);
    expect(existsSync(join(dataDir, 'postgres.password'))).toBe(false);
  });

  it('a command that started the embedded PostgreSQL stops it before it exits', async () => {
    const dataDir = join(root, 'command');
    const run = await cli(dataDir, 'migrate');
    expect(run).toMatchObject({ code: 0, stdout: 'database schema is up to date\n' });
    const cluster = await realpath(join(dataDir, 'postgres'));
    expect(existsSync(join(cluster, 'PG_VERSION'))).toBe(true);
    expect(await postgresServersOn(cluster)).toBe(0);
    expect(existsSync(join(cluster, 'postmaster.pid'))).toBe(false);
  });

  it("a command leaves a running server's PostgreSQL running; the server stops it", async () => {
    const dataDir = join(root, 'server');
    const server = await startServer(
      loadConfig({ FLEETHUB_DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'silent' }),
    );
    let cluster: string;
    try {
      cluster = await realpath(join(dataDir, 'postgres'));
      expect(await postgresServersOn(cluster)).toBe(1);
      expect(await cli(dataDir, 'migrate')).toMatchObject({ code: 0 });
      expect(await postgresServersOn(cluster)).toBe(1);
      expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
    } finally {
      await server.close();
    }
    expect(await postgresServersOn(cluster)).toBe(0);
  });
});
