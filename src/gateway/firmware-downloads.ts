import { Inject, Injectable } from '@nestjs/common';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-codes';
import { FirmwareRecordsService } from '../firmware/firmware-records.service';
import { FirmwareStorage, type StoredBytes } from '../firmware/storage/firmware-storage';
import { parseRange } from './byte-range';
import { DownloadLinkSigner, downloadPath } from './download-links';

export const LINK_SIGNER = Symbol('LINK_SIGNER');

/** What a download link answers: the controller writes it as is. */
export interface FirmwareDownload {
  /** 302: the file is to be fetched from the store itself (`Location`, a presigned link). */
  status: 200 | 206 | 302 | 416;
  /** In the order they are sent. */
  headers: Record<string, string>;
  /** The bytes to send; null when the response has no body (416, HEAD, an empty file). */
  body: StoredBytes | null;
}

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
    const direct = await this.storage.directDownloadUrl(storageKey);
    if (direct !== null) {
      return { status: 302, headers: { Location: direct, 'Cache-Control': 'private, no-store' }, body: null };
    }
    let size: number;
    try {
      size = await this.storage.size(storageKey);
    } catch {
      throw DomainError.notFound();
    }
    const range = parseRange(request.range, size);
    const headers: Record<string, string> = {
      'Accept-Ranges': 'bytes',
      'Content-Type': 'application/octet-stream',
      'Cache-Control': 'private, no-store',
    };
    if (range === 'unsatisfiable') {
      headers['Content-Range'] = `bytes */${size}`;
      headers['Content-Length'] = '0';
      return { status: 416, headers, body: null };
    }
    if (range) {
      headers['Content-Range'] = `bytes ${range.start}-${range.end}/${size}`;
      headers['Content-Length'] = String(range.end - range.start + 1);
    } else {
      headers['Content-Length'] = String(size);
    }
    const status = range ? 206 : 200;
    if (request.headOnly || size === 0) return { status, headers, body: null };
    return { status, headers, body: await this.storage.read(storageKey, range ?? undefined) };
  }
}
