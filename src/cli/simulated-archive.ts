import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { FirmwareFormatError, readFirmwareArchive, verifyMetaSignature } from '../firmware/fwup';

/**
 * How a simulated device handles an `archive` message, as NervesHubLink's ArchiveManager does: no public keys, no
 * download; else the file is downloaded and its signature checked with the archive public keys (`fwup -V` there:
 * `meta.conf.ed25519` over meta.conf, the check fleethub's uploads make too) before it is "ready".
 */
export type ArchiveOutcome =
  { ok: true; uuid: string; version: string; bytes: number } | { ok: false; uuid: string; reason: string };

/** What the `archive` payload says (NervesHubLink's `ArchiveInfo`). */
export interface ArchiveInfo {
  uuid: string;
  version: string;
  url: string;
  size: number | null;
}

/** The payload's fields; null when it names no url or uuid (NervesHubLink would crash on it; a simulator ignores it). */
export function archiveInfo(payload: Record<string, unknown>): ArchiveInfo | null {
  const { uuid, version, url, size } = payload;
  if (typeof uuid !== 'string' || typeof url !== 'string') return null;
  return {
    uuid,
    version: typeof version === 'string' ? version : '',
    url,
    size: typeof size === 'number' && Number.isSafeInteger(size) && size >= 0 ? size : null,
  };
}

/** Downloads the archive to a temporary file, checks its size and signature, and removes the file. */
export async function receiveArchive(
  info: ArchiveInfo,
  publicKeys: readonly string[],
  options: { signal?: AbortSignal; directory?: string } = {},
): Promise<ArchiveOutcome> {
  const fail = (reason: string): ArchiveOutcome => ({ ok: false, uuid: info.uuid, reason });
  if (publicKeys.length === 0) {
    return fail('Refusing archive : no public keys are available to verify the archive signature');
  }
  const path = join(options.directory ?? tmpdir(), `fleethub-simulated-archive-${randomUUID()}.fw`);
  try {
    let response: Response;
    try {
      response = await fetch(info.url, { signal: options.signal });
    } catch (err) {
      return fail(`download failed: ${String(err)}`);
    }
    if (!response.ok || !response.body) {
      await response.body?.cancel();
      return fail(`download failed: HTTP ${response.status}`);
    }
    await pipeline(
      Readable.fromWeb(response.body as unknown as WebReadableStream<Uint8Array>),
      createWriteStream(path),
    );
    const bytes = (await stat(path)).size;
    if (info.size !== null && bytes !== info.size) {
      return fail(`downloaded ${bytes} bytes, the message announced ${info.size}`);
    }
    let signedWith: string | null = null;
    try {
      const archive = await readFirmwareArchive(path);
      if (archive.signature) {
        const keys = publicKeys.map((key, index) => ({ name: String(index), key }));
        signedWith = verifyMetaSignature(archive.metaConf, archive.signature, keys);
      }
    } catch (err) {
      if (err instanceof FirmwareFormatError) return fail(`not an fwup archive: ${err.message}`);
      throw err;
    }
    if (signedWith === null) {
      return fail('Archive could not be validated, your public signing keys maybe be incorrectly configured');
    }
    return { ok: true, uuid: info.uuid, version: info.version, bytes };
  } finally {
    await rm(path, { force: true });
  }
}
