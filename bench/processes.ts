import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { Readable } from 'node:stream';
import { ROOT } from './paths';

/** A child process that printed its URL. */
export interface Started {
  child: ChildProcess;
  url: string;
  /** Its output so far (stdout and stderr, the last 100-200 kB). */
  output(): string;
}

/** Every child still running, for the harness's signal handler. */
export const children = new Set<ChildProcess>();

/** Spawns a process and resolves once its output matches `readyPattern` (group 1: its URL). */
export function startProcess(
  name: string,
  command: string,
  args: string[],
  env: Record<string, string>,
  readyPattern: RegExp,
): Promise<Started> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.add(child);
    let out = '';
    const timer = setTimeout(() => reject(new Error(`${name} did not start in 60 s:\n${out}`)), 60_000);
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = readyPattern.exec(out);
      if (match) {
        clearTimeout(timer);
        resolve({ child, url: match[1], output: () => out });
      }
    });
    child.stderr.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.length > 200_000) out = out.slice(-100_000);
    });
    child.on('exit', (code) => {
      children.delete(child);
      clearTimeout(timer);
      reject(new Error(`${name} exited (${code}):\n${out}`));
    });
  });
}

/** SIGTERM, then SIGKILL after 10 s. */
export function stopProcess(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

export interface ProcStat {
  rss: number;
  /** User + system. */
  cpuSeconds: number;
  userSeconds: number;
  systemSeconds: number;
}

/** RSS (bytes) and CPU time (seconds) of a process, from /proc; zeros when it is gone. */
export function procStat(pid: number | undefined): ProcStat {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const rss = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) * 1024;
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const userSeconds = Number(fields[11]) / 100; // utime, in clock ticks
    const systemSeconds = Number(fields[12]) / 100; // stime
    return { rss, cpuSeconds: userSeconds + systemSeconds, userSeconds, systemSeconds };
  } catch {
    return { rss: 0, cpuSeconds: 0, userSeconds: 0, systemSeconds: 0 };
  }
}

export interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  /** The body parsed as JSON, undefined when it is not JSON. */
  json: unknown;
}

export interface RequestOptions {
  method?: string;
  headers?: http.OutgoingHttpHeaders;
  body?: string | Buffer | Readable;
}

/** One HTTP request, its whole answer read. */
export function request(
  url: string,
  { method = 'GET', headers = {}, body }: RequestOptions = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (chunk: Buffer) => parts.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
      });
    });
    req.on('error', reject);
    if (body !== undefined && typeof body !== 'string' && !Buffer.isBuffer(body)) body.pipe(req);
    else req.end(body);
  });
}
