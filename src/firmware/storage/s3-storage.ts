import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { S3StorageConfig } from '../../config/config';
import { FirmwareStorage, type StoredBytes } from './firmware-storage';

/** Multipart part size: at most QUEUE_SIZE parts of it are in memory per upload, whatever the file's size. */
const PART_BYTES = 8 * 1024 * 1024;
const QUEUE_SIZE = 2;
const PROBE_TIMEOUT_MS = 2000;

/**
 * The S3 client for the settings (at `endpoint`, by default the configured one); credentials come from the SDK's
 * standard chain (environment, shared files, instance roles).
 */
export function s3Client(settings: S3StorageConfig, endpoint = settings.endpoint): S3Client {
  const custom = endpoint !== null;
  return new S3Client({
    endpoint: endpoint ?? undefined,
    // A custom endpoint (MinIO, Ceph) rarely cares about the region, but the signature names one.
    region: settings.region ?? (custom ? 'us-east-1' : undefined),
    forcePathStyle: settings.forcePathStyle,
    // The SDK's default CRC32 checksums on every request are not understood by every S3-compatible store;
    // fleethub checks each file's SHA-256 itself.
    requestChecksumCalculation: custom ? 'WHEN_REQUIRED' : 'WHEN_SUPPORTED',
    responseChecksumValidation: custom ? 'WHEN_REQUIRED' : 'WHEN_SUPPORTED',
  });
}

/**
 * Files as objects `<prefix><key>` of one bucket of an S3-compatible store. An upload is inspected in a
 * temporary file on local disk (`<data dir>/firmware-uploads`) and then streamed to the bucket in parts.
 * Devices download from presigned GET URLs, so firmware bytes never pass through fleethub.
 */
export class S3Storage extends FirmwareStorage {
  private readonly scratchDir: string;
  private readonly client: S3Client;
  /** Signs the devices' links for the endpoint they reach the store at (signing is local: no request). */
  private readonly linkSigner: S3Client;

  constructor(
    private readonly settings: S3StorageConfig,
    dataDir: string,
  ) {
    super();
    this.scratchDir = join(dataDir, 'firmware-uploads');
    this.client = s3Client(settings);
    this.linkSigner =
      settings.publicEndpoint === null ? this.client : s3Client(settings, settings.publicEndpoint);
  }

  async adopt(key: string, sourcePath: string): Promise<void> {
    try {
      const upload = new Upload({
        client: this.client,
        params: {
          Bucket: this.settings.bucket,
          Key: this.objectKey(key),
          Body: createReadStream(sourcePath),
          ContentType: 'application/octet-stream',
        },
        partSize: PART_BYTES,
        queueSize: QUEUE_SIZE,
        // A failed multipart upload is aborted: no parts are left in the bucket.
        leavePartsOnError: false,
      });
      await upload.done();
    } finally {
      await rm(sourcePath, { force: true });
    }
  }

  async read(key: string, range?: { start: number; end: number }): Promise<StoredBytes> {
    const object = await this.client.send(
      new GetObjectCommand({
        Bucket: this.settings.bucket,
        Key: this.objectKey(key),
        Range: range ? `bytes=${range.start}-${range.end}` : undefined,
      }),
    );
    const body = object.Body as Readable;
    return {
      sendTo: async (out) => {
        try {
          await pipeline(body, out);
        } catch (err) {
          // The reader went away: not a failure of the store (the body is destroyed with it).
          if ((err as { code?: string }).code === 'ERR_STREAM_PREMATURE_CLOSE' && out.destroyed) return;
          out.destroy();
          throw err;
        }
      },
    };
  }

  async size(key: string): Promise<number> {
    const head = await this.client.send(
      new HeadObjectCommand({ Bucket: this.settings.bucket, Key: this.objectKey(key) }),
    );
    return head.ContentLength ?? 0;
  }

  async remove(key: string): Promise<void> {
    // S3 answers 204 for a key that does not exist: removing twice is no error.
    await this.client.send(
      new DeleteObjectCommand({ Bucket: this.settings.bucket, Key: this.objectKey(key) }),
    );
  }

  async temporaryPath(): Promise<string> {
    await mkdir(this.scratchDir, { recursive: true });
    return join(this.scratchDir, `${randomUUID()}.upload`);
  }

  directDownloadUrl(key: string): Promise<string> {
    return getSignedUrl(
      this.linkSigner,
      new GetObjectCommand({ Bucket: this.settings.bucket, Key: this.objectKey(key) }),
      { expiresIn: this.settings.urlLifetimeSec },
    );
  }

  async probe(): Promise<void> {
    await this.client.send(new HeadBucketCommand({ Bucket: this.settings.bucket }), {
      abortSignal: AbortSignal.timeout(PROBE_TIMEOUT_MS),
    });
  }

  /** Closes the client's connections (Nest calls it when the app closes). */
  onModuleDestroy(): void {
    this.client.destroy();
    this.linkSigner.destroy();
  }

  private objectKey(key: string): string {
    if (key.split('/').some((part) => part === '' || part === '.' || part === '..')) {
      throw new Error(`storage key is not a plain path: ${key}`);
    }
    return `${this.settings.prefix}${key}`;
  }
}
