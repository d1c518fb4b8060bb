/**
 * What else the machine was doing while a measurement ran: the 1-minute load average, and the CPU time of the
 * machine split into the benchmark's own processes (this harness and its descendants: servers, floor, client
 * processes; and the benchmark's PostgreSQL), other processes, and steal (time the hypervisor gave to other guests).
 * Machine-wide CPU comes from /proc/stat, so that short-lived processes (test workers, compilers) count too;
 * "other" is the machine's busy time minus the benchmark's.
 */
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';

export interface LoadWindow {
  seconds: number;
  /** 1-minute load average at the start, at the end, and the highest sampled (every second) in between. */
  load_average_1m: { start: number; end: number; max: number };
  /** Percent of all cores' time. */
  cpu_percent: { benchmark: number; other: number; steal: number; idle: number };
  cores: number;
}

interface CpuTimes {
  busy: number;
  steal: number;
  idle: number;
  total: number;
}

/** Jiffies of all cores: busy (user, nice, system, irq, softirq), steal, idle (idle + iowait). */
function machineTimes(): CpuTimes {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0];
  const [user, nice, system, idle, iowait, irq, softirq, steal] = line
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  const busy = user + nice + system + irq + softirq;
  return { busy, steal, idle: idle + iowait, total: busy + steal + idle + iowait };
}

interface Proc {
  ppid: number;
  /** Its own user + system time. */
  jiffies: number;
  /** Time of its children that ended and were waited for. */
  reaped: number;
}

function processes(): Map<number, Proc> {
  const out = new Map<number, Proc>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(Number(name), {
        ppid: Number(fields[1]),
        jiffies: Number(fields[11]) + Number(fields[12]),
        reaped: Number(fields[13]) + Number(fields[14]),
      });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/**
 * CPU jiffies of the trees under `roots`: each process's own time, and for the roots also their ended children's
 * (a server or client process that ends within a window is waited for by this harness, its time then added to the
 * harness's; PostgreSQL's backends likewise to the postmaster's).
 */
function treeJiffies(roots: readonly number[]): number {
  const all = processes();
  const children = new Map<number, number[]>();
  for (const [pid, p] of all) {
    const list = children.get(p.ppid);
    if (list) list.push(pid);
    else children.set(p.ppid, [pid]);
  }
  let jiffies = 0;
  const seen = new Set<number>();
  const stack = [...roots];
  while (stack.length > 0) {
    const pid = stack.pop()!;
    if (seen.has(pid)) continue;
    seen.add(pid);
    const p = all.get(pid);
    jiffies += (p?.jiffies ?? 0) + (roots.includes(pid) ? (p?.reaped ?? 0) : 0);
    stack.push(...(children.get(pid) ?? []));
  }
  return jiffies;
}

/** CPU seconds (user + system) of the process trees under `roots` so far; see treeJiffies. */
export function treeCpuSeconds(roots: readonly number[]): number {
  return treeJiffies(roots) / 100;
}

const load1 = () => Number(os.loadavg()[0].toFixed(2));
const percent = (part: number, whole: number) => (whole > 0 ? Number(((100 * part) / whole).toFixed(1)) : 0);

/**
 * Starts watching; `stop()` returns the window. `roots()` are the benchmark's process trees besides this process
 * (the PostgreSQL postmaster, whose server processes are not the harness's children).
 */
export function watchLoad(roots: () => number[] = () => []): { stop(): LoadWindow } {
  const started = Date.now();
  const mine = () => [process.pid, ...roots()];
  const machine0 = machineTimes();
  const ours0 = treeJiffies(mine());
  const start = load1();
  let max = start;
  const sampler = setInterval(() => (max = Math.max(max, load1())), 1000);
  sampler.unref();
  return {
    stop() {
      clearInterval(sampler);
      const machine1 = machineTimes();
      const ours = Math.max(0, treeJiffies(mine()) - ours0);
      const busy = machine1.busy - machine0.busy;
      const total = machine1.total - machine0.total;
      const end = load1();
      return {
        seconds: Math.round((Date.now() - started) / 100) / 10,
        load_average_1m: { start, end, max: Math.max(max, end) },
        cpu_percent: {
          benchmark: percent(Math.min(ours, busy), total),
          other: percent(Math.max(0, busy - ours), total),
          steal: percent(machine1.steal - machine0.steal, total),
          idle: percent(machine1.idle - machine0.idle, total),
        },
        cores: os.cpus().length,
      };
    },
  };
}

/** "load 5.2 (max 7.9), other processes 38 % of the CPU, steal 0 %": a window in one line. */
export function describeLoad(w: LoadWindow): string {
  return (
    `load ${w.load_average_1m.start} → ${w.load_average_1m.end} (max ${w.load_average_1m.max}); CPU: benchmark ` +
    `${w.cpu_percent.benchmark} %, other processes ${w.cpu_percent.other} %, steal ${w.cpu_percent.steal} %, idle ${w.cpu_percent.idle} %`
  );
}
