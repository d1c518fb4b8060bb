import { mkdtemp, rm } from 'node:fs/promises';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const S3rver = require('@20minutes/s3rver') as new (options: Record<string, unknown>) => {
  run(): Promise<{ port: number }>;
  close(): Promise<void>;
  httpServer?: Server;
};

/** What the tests' S3 server accepts: any access key pair signs (see allowMismatchedSignatures below). */
export const S3_TEST_CREDENTIALS = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER' };

export interface TestS3Server {
  endpoint: string;
  bucket: string;
  /** The app environment for storage in this server's bucket. */
  env(prefix?: string): Record<string, string>;
  stop(): Promise<void>;
}

/**
 * A real S3 protocol server (s3rver: the S3 REST API over a directory) on a free port of 127.0.0.1, with one
 * bucket. The SDK reads its credentials from the environment (the standard chain), so they are set here.
 *
 * s3rver computes the canonical URI of bucket-level requests (HeadBucket, ListObjects) without the trailing
 * slash the SDK signs, and so refuses their signatures: signature checks are off. They are S3's job, not ours;
 * presigned links' expiry is still checked.
 */
export async function startS3Server(bucket = 'fleethub-test'): Promise<TestS3Server> {
  Object.assign(process.env, S3_TEST_CREDENTIALS, { AWS_EC2_METADATA_DISABLED: 'true' });
  const directory = await mkdtemp(join(tmpdir(), 'fleethub-s3-'));
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory,
    allowMismatchedSignatures: true,
    configureBuckets: [{ name: bucket }],
  });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    bucket,
    env: (prefix = '') => ({
      FLEETHUB_STORAGE: 's3',
      FLEETHUB_S3_BUCKET: bucket,
      FLEETHUB_S3_ENDPOINT: endpoint,
      FLEETHUB_S3_FORCE_PATH_STYLE: 'true',
      ...(prefix ? { FLEETHUB_S3_PREFIX: prefix } : {}),
    }),
    stop: async () => {
      server.httpServer?.closeAllConnections();
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}
