import { Inject, Injectable } from '@nestjs/common';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-codes';
import { UUID_PATTERN } from '../common/values';
import { FirmwareRecordsService } from '../firmware/firmware-records.service';
import { FirmwareStorage } from '../firmware/storage/firmware-storage';
import { answerStoredFile, type StoredFileAnswer } from '../firmware/storage/stored-file-answer';
import { FirmwareDeltaRecords } from '../firmware/deltas/firmware-delta-records.service';
import { deltaDownloadPath, DownloadLinkSigner, downloadPath } from './download-links';

export const LINK_SIGNER = Symbol('LINK_SIGNER');

/** What a download link answers: the controller writes it as is. */
export type FirmwareDownload = StoredFileAnswer;

/** What a download request carries besides its path. */
export interface FirmwareDownloadRequest {
  expires: unknown;
  signature: unknown;
  /** The `Range` header, when sent. */
  range: string | undefined;
  /** A HEAD request: headers only. */
  headOnly: boolean;
}

/**
 * Serves firmware files to devices from signed, expiring links (single-range 206 support). With a store that gives
 * links of its own (S3), the link redirects to one: the bytes never pass through fleethub.
 */
@Injectable()
export class FirmwareDownloads {
  constructor(
    private readonly firmwares: FirmwareRecordsService,
    private readonly storage: FirmwareStorage,
    @Inject(LINK_SIGNER) private readonly signer: DownloadLinkSigner,
    private readonly deltas: FirmwareDeltaRecords,
  ) {}

  async open(firmwareId: string, file: string, request: FirmwareDownloadRequest): Promise<FirmwareDownload> {
    const name = /^([0-9a-f-]{36})\.(?:fw|avm|bin)$/.exec(file);
    if (!/^\d{1,19}$/.test(firmwareId) || !name) throw DomainError.notFound();
    const uuid = name[1];
    if (!this.signer.verify(downloadPath(firmwareId, file), request.expires, request.signature)) {
      throw new DomainError(ErrorCode.INVALID_DOWNLOAD_LINK, 'invalid or expired download link');
    }
    const storageKey = await this.firmwares.findStorageKey(firmwareId, uuid);
    if (storageKey === undefined) throw DomainError.notFound();
    return answerStoredFile(this.storage, storageKey, { range: request.range, headOnly: request.headOnly });
  }

  /** An fwup delta's file, from the link of an `update` message that sends a delta (`<target uuid>.fw`). */
  async openDelta(
    deltaId: string,
    file: string,
    request: FirmwareDownloadRequest,
  ): Promise<FirmwareDownload> {
    const name = /^([0-9a-f-]{36})\.fw$/.exec(file);
    if (!/^\d{1,19}$/.test(deltaId) || !name || !UUID_PATTERN.test(name[1])) throw DomainError.notFound();
    if (!this.signer.verify(deltaDownloadPath(deltaId, file), request.expires, request.signature)) {
      throw new DomainError(ErrorCode.INVALID_DOWNLOAD_LINK, 'invalid or expired download link');
    }
    const storageKey = await this.deltas.findStorageKey(deltaId, name[1]);
    if (storageKey === undefined) throw DomainError.notFound();
    return answerStoredFile(this.storage, storageKey, { range: request.range, headOnly: request.headOnly });
  }
}
