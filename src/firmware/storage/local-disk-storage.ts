import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { access, constants, mkdir, rename, rm, stat } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import type { Readable } from 'node:stream';
import { FirmwareStorage } from './firmware-storage';

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

  async read(key: string, range?: { start: number; end: number }): Promise<Readable> {
    return createReadStream(this.pathOf(key), range ? { start: range.start, end: range.end } : {});
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
