import { type ChildProcess, spawn } from 'node:child_process';
import { ROOT, sourceLauncher } from './cli-process';

export interface ServerProcess {
  url: string;
  port: number;
  child: ChildProcess;
  /** The exit code and when it happened (Date.now()). */
  exited: Promise<{ code: number | null; at: number }>;
  /** The server's JSON log lines so far. */
  logLines(): Record<string, unknown>[];
  /** Stops it if it still runs (SIGKILL): for cleanup after a failed test. */
  kill(): void;
}

/**
 * `fleethub` (src/main.ts) in a process of its own, from the sources (see sourceLauncher), on 127.0.0.1 and a free
 * port; resolves once it listens.
 */
export async function startServerProcess(env: Record<string, string>): Promise<ServerProcess> {
  const child = spawn(process.execPath, ['-e', sourceLauncher('./src/main.ts')], {
    cwd: ROOT,
    env: { ...process.env, HOST: '127.0.0.1', PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  const exited = new Promise<{ code: number | null; at: number }>((resolve) =>
    child.once('exit', (code) => resolve({ code, at: Date.now() })),
  );
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const listening = /fleethub listening on (http:\/\/\S+)/.exec(stdout);
      if (listening) resolve(listening[1]);
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    void exited.then(({ code }) =>
      reject(new Error(`the server exited (${code}) before listening:\n${stdout}${stderr}`)),
    );
  });
  return {
    url,
    port: Number(new URL(url).port),
    child,
    exited,
    logLines: () =>
      stdout
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Record<string, unknown>),
    kill: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}
