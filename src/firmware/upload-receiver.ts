import { Inject, Injectable } from '@nestjs/common';
import busboy from 'busboy';
import { createHash, type Hash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { type Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { DomainError } from '../common/errors/domain-error';
import { collectYoungGarbage } from '../common/memory/young-garbage';
import { ErrorCode } from '../common/errors/error-codes';
import { BLANK } from '../common/errors/messages';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { MALFORMED_MULTIPART } from './firmware.errors';
import type { ReceivedFile } from './received-file';
import { FirmwareStorage } from './storage/firmware-storage';

const CHUNK_BYTES = 1024 * 1024;
/** Bytes streamed between two collections of the network buffers already written (see collectYoungGarbage). */
const COLLECT_EVERY_BYTES = 4 * 1024 * 1024;

/** Hashes bytes as they pass: the whole stream and each 1 MiB chunk. */
class HashingStream extends Transform {
  readonly whole: Hash = createHash('sha256');
  readonly chunks: string[] = [];
  size = 0;
  private chunk: Hash = createHash('sha256');
  private inChunk = 0;
  private sinceCollected = 0;

  override _transform(data: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.sinceCollected += data.length;
    if (this.sinceCollected >= COLLECT_EVERY_BYTES) {
      this.sinceCollected = 0;
      collectYoungGarbage();
    }
    this.whole.update(data);
    this.size += data.length;
    let offset = 0;
    while (offset < data.length) {
      const take = Math.min(CHUNK_BYTES - this.inChunk, data.length - offset);
      this.chunk.update(data.subarray(offset, offset + take));
      this.inChunk += take;
      offset += take;
      if (this.inChunk === CHUNK_BYTES) {
        this.chunks.push(this.chunk.digest('hex'));
        this.chunk = createHash('sha256');
        this.inChunk = 0;
      }
    }
    done(null, data);
  }

  override _flush(done: TransformCallback): void {
    if (this.inChunk > 0) this.chunks.push(this.chunk.digest('hex'));
    done();
  }
}

const tooLarge = (maxBytes: number, field: string) =>
  new DomainError(ErrorCode.PAYLOAD_TOO_LARGE, `${field} is larger than the limit of ${maxBytes} bytes`);

/**
 * Streams the multipart field `field` (`firmware`, or `archive` for archives) to `targetPath`, hashing on the
 * way, never holding the file in memory. Other fields are ignored. The target is removed on every failure.
 */
export async function receiveFirmwareUpload(
  request: IncomingMessage,
  targetPath: string,
  maxBytes: number,
  field = 'firmware',
): Promise<ReceivedFile> {
  const type = request.headers['content-type'] ?? '';
  if (!/^multipart\/form-data/i.test(type)) {
    throw DomainError.invalidField(field, `must be uploaded as multipart/form-data in the field "${field}"`);
  }
  // Far over the limit: refuse before reading. Slightly over: read and discard, so the client sees the 413.
  const declared = Number(request.headers['content-length']);
  if (Number.isFinite(declared) && declared > 2 * maxBytes + 1024 * 1024) {
    request.resume();
    throw tooLarge(maxBytes, field);
  }
  let parser: busboy.Busboy;
  try {
    parser = busboy({
      headers: request.headers,
      limits: { files: 1, fileSize: maxBytes, fields: 20, parts: 30 },
    });
  } catch {
    throw DomainError.badRequest(MALFORMED_MULTIPART);
  }

  return new Promise<ReceivedFile>((resolve, reject) => {
    let settled = false;
    let fileWork: Promise<ReceivedFile> | null = null;
    const fail = (err: unknown) => {
      if (settled) return;
      settled = true;
      request.unpipe(parser);
      request.resume();
      void rm(targetPath, { force: true }).finally(() =>
        reject(err instanceof Error ? err : new Error(String(err))),
      );
    };

    parser.on('file', (name, stream) => {
      if (name !== field || fileWork) {
        stream.resume();
        return;
      }
      const hashing = new HashingStream();
      let truncated = false;
      stream.on('limit', () => {
        truncated = true;
      });
      fileWork = pipeline(stream, hashing, createWriteStream(targetPath)).then(() => {
        if (truncated) throw tooLarge(maxBytes, field);
        return {
          path: targetPath,
          size: hashing.size,
          sha256: hashing.whole.digest('hex'),
          chunkSha256: hashing.chunks,
        };
      });
      fileWork.catch(fail);
    });
    parser.on('error', () => fail(DomainError.badRequest(MALFORMED_MULTIPART)));
    parser.on('partsLimit', () => fail(DomainError.badRequest('too many multipart parts')));
    parser.on('close', () => {
      if (settled) return;
      if (!fileWork) {
        fail(DomainError.invalidField(field, BLANK));
        return;
      }
      fileWork.then((file) => {
        if (settled) return;
        settled = true;
        resolve(file);
      }, fail);
    });
    request.on('aborted', () => fail(DomainError.badRequest('upload aborted')));
    request.pipe(parser);
  });
}

/** Writes `source` to `targetPath`, hashing on the way (the demo's firmware, already in memory). */
export async function receiveFirmwareStream(source: Readable, targetPath: string): Promise<ReceivedFile> {
  const hashing = new HashingStream();
  try {
    await pipeline(source, hashing, createWriteStream(targetPath));
  } catch (err) {
    await rm(targetPath, { force: true });
    throw err;
  }
  return {
    path: targetPath,
    size: hashing.size,
    sha256: hashing.whole.digest('hex'),
    chunkSha256: hashing.chunks,
  };
}

/**
 * Receives firmware files into temporary files of the store, for FirmwareService.ingest: the controller's
 * multipart upload (at most the configured size), or a stream (the CLI demo).
 */
@Injectable()
export class FirmwareUploadReceiver {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly storage: FirmwareStorage,
  ) {}

  /**
   * The multipart field `field` of the request (`firmware`; archives send `archive`); every refusal is a
   * DomainError and leaves no file behind.
   */
  async receive(request: IncomingMessage, field = 'firmware'): Promise<ReceivedFile> {
    const temporary = await this.storage.temporaryPath();
    try {
      return await receiveFirmwareUpload(request, temporary, this.config.firmwareMaxBytes, field);
    } catch (err) {
      await rm(temporary, { force: true });
      throw err;
    }
  }

  /** The bytes of `source`, whole. */
  async receiveStream(source: Readable): Promise<ReceivedFile> {
    return receiveFirmwareStream(source, await this.storage.temporaryPath());
  }
}
