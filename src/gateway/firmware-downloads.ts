import { Inject, Injectable } from '@nestjs/common';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-codes';
import { FirmwareRecordsService } from '../firmware/firmware-records.service';
import { FirmwareStorage } from '../firmware/storage/firmware-storage';
import { answerStoredFile, type StoredFileAnswer } from '../firmware/storage/stored-file-answer';
import { DownloadLinkSigner, downloadPath } from './download-links';

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
}
