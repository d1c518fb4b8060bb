import type { Writable } from 'node:stream';

/** Stored bytes on their way to one reader. */
export interface StoredBytes {
  /**
   * Writes the bytes to `out` and ends it. Resolves when they are written or when `out` closed early; when reading
   * fails, `out` is destroyed and the promise rejects.
   */
  sendTo(out: Writable): Promise<void>;
}

/** Where firmware files live. Local disk by default; an object store can implement the same contract. */
export abstract class FirmwareStorage {
  /** Moves a finished temporary file into storage under `key` (the source is consumed). */
  abstract adopt(key: string, sourcePath: string): Promise<void>;
  /** The stored bytes, optionally of one inclusive byte range. */
  abstract read(key: string, range?: { start: number; end: number }): Promise<StoredBytes>;
  abstract size(key: string): Promise<number>;
  /** Removes the file; no error when it is already gone. */
  abstract remove(key: string): Promise<void>;
  /** A scratch path for an upload in progress, on the same file system as the store. */
  abstract temporaryPath(): Promise<string>;
}
