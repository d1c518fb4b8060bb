import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FirmwareFormatError } from '../../src/firmware/fwup/firmware-format-error';

/**
 * Files for the tests of one firmware reader: a temporary directory made before the file's tests and removed after
 * them. `path()` names a new file in it, `write` stores bytes in one.
 */
export function readerFiles(prefix: string, extension: string) {
  let dir = '';
  let counter = 0;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), prefix));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  const files = {
    dir: () => dir,
    path: (name = `${++counter}${extension}`) => join(dir, name),
    write: async (bytes: Buffer): Promise<string> => {
      const path = files.path();
      await writeFile(path, bytes);
      return path;
    },
  };
  return files;
}

/** What `read` rejects with for `path`; fails the test if it resolves. */
export async function readFailure(read: (path: string) => Promise<unknown>, path: string): Promise<unknown> {
  try {
    await read(path);
  } catch (err) {
    return err;
  }
  throw new Error(`${path} was read without error`);
}

/** The message of the FirmwareFormatError `read` rejects with for `path`; any other outcome fails the test. */
export async function formatErrorMessage(
  read: (path: string) => Promise<unknown>,
  path: string,
): Promise<string> {
  const err = await readFailure(read, path);
  if (!(err instanceof FirmwareFormatError)) throw err;
  return err.message;
}
