import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

type Collector = (options: { type: 'minor' }) => void;

let collector: Collector | null | undefined;

/**
 * V8's collector, made reachable without a command-line flag (`--expose-gc` set at run time makes `gc` a global of
 * new contexts). Null when this V8 refuses; callers then rely on the collector's own schedule.
 */
export function youngGarbageCollector(): Collector | null {
  if (collector !== undefined) return collector;
  const existing = (globalThis as { gc?: unknown }).gc;
  if (typeof existing === 'function') return (collector = existing as Collector);
  try {
    setFlagsFromString('--expose-gc');
    const gc: unknown = runInNewContext('gc');
    collector = typeof gc === 'function' ? (gc as Collector) : null;
  } catch {
    collector = null;
  }
  return collector;
}

/**
 * Frees the network buffers a large stream has already passed on. Each socket read is a new 64 KiB buffer outside
 * the JavaScript heap; the objects holding them are tiny, so V8 collects them only when other allocations fill
 * the young generation or external memory has grown by tens of MiB. A scavenge (about a millisecond) every few
 * MiB keeps a 200 MiB upload within a few MiB of the memory it started with.
 */
export function collectYoungGarbage(): void {
  youngGarbageCollector()?.({ type: 'minor' });
}
