import type { Writable } from 'node:stream';

/** Stored bytes on their way to one reader. */
export interface StoredBytes {
  /**
   * Writes the bytes to `out` and ends it. Resolves when they are written or when `out` closed early; when reading
   * fails, `out` is destroyed and the promise rejects.
   */
  sendTo(out: Writable): Promise<void>;
}

/** Where firmware files live: local disk (LocalDiskStorage) or an S3-compatible bucket (S3Storage). */
export abstract class FirmwareStorage {
  /** Moves a finished temporary file into storage under `key`; the source is consumed (gone) either way. */
  abstract adopt(key: string, sourcePath: string): Promise<void>;
  /** The stored bytes, optionally of one inclusive byte range. */
  abstract read(key: string, range?: { start: number; end: number }): Promise<StoredBytes>;
  abstract size(key: string): Promise<number>;
  /** Removes the file; no error when it is already gone. */
  abstract remove(key: string): Promise<void>;
  /** A scratch path on local disk for an upload in progress (inspected there, then adopted or removed). */
  abstract temporaryPath(): Promise<string>;
  /**
   * A URL from which a device downloads the file straight from the store (Range requests included), or null
   * when the store has none: devices then download through fleethub's own signed link.
   */
  abstract directDownloadUrl(key: string): Promise<string | null>;
  /** Resolves when the store can be reached, rejects otherwise (readiness). */
  abstract probe(): Promise<void>;
}
