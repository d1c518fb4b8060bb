import { randomUUID } from 'node:crypto';
import { access, constants, mkdir, rename, rm, stat } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { BufferPool, ChunkPump, sendFileRange } from './file-sender';
import { FirmwareStorage, type StoredBytes } from './firmware-storage';

/**
 * What downloads read into and write from: 64 KiB buffers (the size of a socket read, and fs streams' default),
 * 128 of them (8 MiB) shared; a download that finds them all lent for 50 ms uses one of its own of 16 KiB.
 * At most 32 chunks are started per turn of the event loop, so that the API stays responsive (docs/decisions.md).
 */
const DOWNLOAD_BUFFERS = new BufferPool(64 * 1024, 128, 16 * 1024);
const DOWNLOAD_PUMP = new ChunkPump(32);

/** Files under `<data dir>/firmware/<key>`; uploads land in `<data dir>/firmware/.tmp` first. */
export class LocalDiskStorage extends FirmwareStorage {
  private readonly root: string;

  constructor(dataDir: string) {
    super();
    this.root = resolve(dataDir, 'firmware');
  }

  async adopt(key: string, sourcePath: string): Promise<void> {
    const target = this.pathOf(key);
    await mkdir(dirname(target), { recursive: true });
    await rename(sourcePath, target);
  }

  async read(key: string, range?: { start: number; end: number }): Promise<StoredBytes> {
    const path = this.pathOf(key);
    return { sendTo: (out) => sendFileRange(path, range, out, DOWNLOAD_BUFFERS, DOWNLOAD_PUMP) };
  }

  async size(key: string): Promise<number> {
    return (await stat(this.pathOf(key))).size;
  }

  async remove(key: string): Promise<void> {
    await rm(this.pathOf(key), { force: true });
  }

  async temporaryPath(): Promise<string> {
    const dir = join(this.root, '.tmp');
    await mkdir(dir, { recursive: true });
    return join(dir, `${randomUUID()}.upload`);
  }

  async directDownloadUrl(): Promise<null> {
    return null;
  }

  async probe(): Promise<void> {
    await mkdir(this.root, { recursive: true });
    await access(this.root, constants.W_OK);
  }

  private pathOf(key: string): string {
    const path = resolve(this.root, key);
    if (!path.startsWith(this.root + sep)) throw new Error(`storage key escapes the store: ${key}`);
    return path;
  }
}
