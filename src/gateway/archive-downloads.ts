import { Controller, Get, Inject, Injectable, Param, Res } from '@nestjs/common';
import { ApiParam, ApiProduces, ApiQuery, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { SignedLink, type SignedLinkRequest } from '../common/http/file-request';
import { ArchiveRecordsService } from '../archives/archive-records.service';
import { Public } from '../common/auth/decorators';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-codes';
import { sendStoredFile } from '../common/http/send-stored-file';
import { ApiOperationDoc, ApiStoredFileResponses } from '../common/openapi/api-docs';
import { FirmwareStorage } from '../firmware/storage/firmware-storage';
import { answerStoredFile, type StoredFileAnswer } from '../firmware/storage/stored-file-answer';
import { DownloadLinkSigner } from './download-links';
import { type FirmwareDownloadRequest, LINK_SIGNER } from './firmware-downloads';

export const ARCHIVE_PATH_PREFIX = '/device-archives';

/** How long an archive link handed to a device stays valid: NervesHub signs them for an hour. */
export const ARCHIVE_LINK_TTL_SECONDS = 60 * 60;

/** The path of an archive's download link: the archive's row id (uuids are unique per product only), `<uuid>.fw`. */
export function archivePath(archiveId: string, uuid: string): string {
  return `${ARCHIVE_PATH_PREFIX}/${archiveId}/${uuid}.fw`;
}

/**
 * Serves archive files to devices from signed, expiring links (single-range 206 support), as firmware links are
 * served; with a store that gives links of its own (S3), devices are sent those instead.
 */
@Injectable()
export class ArchiveDownloads {
  constructor(
    private readonly archives: ArchiveRecordsService,
    private readonly storage: FirmwareStorage,
    @Inject(LINK_SIGNER) private readonly signer: DownloadLinkSigner,
  ) {}

  /** Where a device downloads the archive: straight from the store when it gives links, else a signed link here. */
  async url(archive: { id: string; uuid: string; storage_key: string }): Promise<string> {
    const direct = await this.storage.directDownloadUrl(archive.storage_key);
    return direct ?? this.signer.signedUrl(archivePath(archive.id, archive.uuid), ARCHIVE_LINK_TTL_SECONDS);
  }

  async open(archiveId: string, file: string, request: FirmwareDownloadRequest): Promise<StoredFileAnswer> {
    const name = /^([0-9a-f-]{36})\.fw$/.exec(file);
    if (!/^\d{1,19}$/.test(archiveId) || !name) throw DomainError.notFound();
    if (!this.signer.verify(archivePath(archiveId, name[1]), request.expires, request.signature)) {
      throw new DomainError(ErrorCode.INVALID_DOWNLOAD_LINK, 'invalid or expired download link');
    }
    const storageKey = await this.archives.findStorageKey(archiveId, name[1]);
    if (storageKey === undefined) throw DomainError.notFound();
    return answerStoredFile(this.storage, storageKey, { range: request.range, headOnly: request.headOnly });
  }
}

@ApiTags('Device archive download')
@Controller(ARCHIVE_PATH_PREFIX.slice(1))
export class ArchiveDownloadController {
  constructor(private readonly downloads: ArchiveDownloads) {}

  @Get(':archive_id/:file')
  @Public()
  @ApiParam({ name: 'archive_id', description: 'Server-side archive id, as in the link' })
  @ApiParam({ name: 'file', description: '`<archive uuid>.fw`, as in the link' })
  @ApiQuery({ name: 'expires', required: true, description: 'Expiry, Unix seconds' })
  @ApiQuery({ name: 'signature', required: true, description: 'base64url HMAC-SHA256 of path and expiry' })
  @ApiProduces('application/octet-stream')
  @ApiOperationDoc({
    summary: 'Download an archive file (the link a device gets in its `archive` message)',
    description:
      'Extension of 2.0.0, for devices. The signed link (valid one hour, as NervesHub signs them) is the only ' +
      'credential (no token). `Content-Length`, `Accept-Ranges: bytes`, single ranges (206), 416 for an ' +
      'unsatisfiable range; a bad or expired signature gets 403, an unknown archive 404.',
    isPublic: true,
    errors: [403, 404],
  })
  @ApiStoredFileResponses()
  async download(
    @Param('archive_id') archiveId: string,
    @Param('file') file: string,
    @SignedLink() link: SignedLinkRequest,
    @Res() res: Response,
  ): Promise<void> {
    const answer = await this.downloads.open(archiveId, file, link);
    await sendStoredFile(res, answer);
  }
}
