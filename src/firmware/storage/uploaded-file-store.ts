import { Injectable } from '@nestjs/common';
import { rm } from 'node:fs/promises';
import { DomainError } from '../../common/errors/domain-error';
import { ALREADY_TAKEN } from '../../common/errors/messages';
import { isUniqueViolation } from '../../common/errors/postgres-errors';
import { storageUnavailable } from '../firmware.errors';
import type { ReceivedFile } from '../received-file';
import { FirmwareFileRemover } from './firmware-file-remover';
import { FirmwareStorage } from './firmware-storage';

/**
 * Runs `work` on a received upload, then removes its temporary file whatever happened (the store has adopted it
 * by then, or it was refused).
 */
export async function consumingUpload<T>(file: ReceivedFile, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } finally {
    await rm(file.path, { force: true });
  }
}

/** An upload's way into the store, shared by firmware and archives. */
@Injectable()
export class UploadedFileStore {
  constructor(
    private readonly storage: FirmwareStorage,
    private readonly files: FirmwareFileRemover,
  ) {}

  /**
   * Moves the received file at `path` into the store under `key`, then runs `record` (the transaction that
   * inserts its row). The transfer (seconds for a large file to an object store) happens outside any
   * transaction: no pool connection or lock is held meanwhile. `key` is the upload's own, so a refusal by `record`
   * only removes the stored file again; a unique violation there (a concurrent upload of the same uuid) is the
   * 422 on `uuid`. A store that cannot take the file is the 503 of `storageUnavailable`.
   */
  async store<T>(key: string, path: string, record: () => Promise<T>): Promise<T> {
    await this.storage.adopt(key, path).catch((err: unknown) => {
      throw storageUnavailable(err);
    });
    try {
      return await record();
    } catch (err) {
      await this.files.discard(key);
      if (isUniqueViolation(err)) throw DomainError.invalidField('uuid', ALREADY_TAKEN);
      throw err;
    }
  }
}
