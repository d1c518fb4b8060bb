import type { Readable } from 'node:stream';

/** Where firmware files live. Local disk by default; an object store can implement the same contract. */
export abstract class FirmwareStorage {
  /** Moves a finished temporary file into storage under `key` (the source is consumed). */
  abstract adopt(key: string, sourcePath: string): Promise<void>;
  /** A stream of the stored bytes, optionally of one inclusive byte range. */
  abstract read(key: string, range?: { start: number; end: number }): Promise<Readable>;
  abstract size(key: string): Promise<number>;
  /** Removes the file; no error when it is already gone. */
  abstract remove(key: string): Promise<void>;
  /** A scratch path for an upload in progress, on the same file system as the store. */
  abstract temporaryPath(): Promise<string>;
}
