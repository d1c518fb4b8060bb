import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Request, Response } from 'express';
import { pipeline } from 'node:stream/promises';
import { DataSource } from 'typeorm';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-codes';
import { FirmwareStorage } from '../firmware/storage/firmware-storage';
import { DownloadLinkSigner, downloadPath } from './download-links';

export type ByteRange = { start: number; end: number };

/**
 * Reads a `Range` header against a file of `size` bytes: null when there is none (or several ranges, which may
 * be ignored), a range clamped to the file, or 'unsatisfiable' (→ 416). Devices resume with `bytes=<n>-<size>`,
 * whose end is one past the last byte: ends are clamped.
 */
export function parseRange(header: string | undefined, size: number): ByteRange | null | 'unsatisfiable' {
  if (header === undefined) return null;
  const match = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!match) return /^\s*bytes\s*=.*,/i.test(header) ? null : 'unsatisfiable';
  const [, first, last] = match;
  if (first === '' && last === '') return 'unsatisfiable';
  if (first === '') {
    const suffix = Number(last);
    if (suffix === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(first);
  const end = last === '' ? size - 1 : Math.min(Number(last), size - 1);
  if (start >= size || end < start) return 'unsatisfiable';
  return { start, end };
}

export const LINK_SIGNER = Symbol('LINK_SIGNER');

/** Serves firmware files to devices from signed, expiring links (single-range 206 support). */
@Injectable()
export class FirmwareDownloads {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly storage: FirmwareStorage,
    @Inject(LINK_SIGNER) private readonly signer: DownloadLinkSigner,
  ) {}

  async serve(firmwareId: string, file: string, req: Request, res: Response): Promise<void> {
    const query = req.query as Record<string, unknown>;
    const name = /^([0-9a-f-]{36})\.(?:fw|avm|bin)$/.exec(file);
    if (!/^\d{1,19}$/.test(firmwareId) || !name) throw DomainError.notFound();
    const uuid = name[1];
    if (!this.signer.verify(downloadPath(firmwareId, file), query.expires, query.signature)) {
      throw new DomainError(ErrorCode.ROLE_TOO_LOW, 'invalid or expired download link');
    }
    const [firmware] = await this.db.query<{ storage_key: string }[]>(
      `SELECT storage_key FROM firmwares WHERE id = $1 AND uuid = $2`,
      [firmwareId, uuid],
    );
    if (!firmware) throw DomainError.notFound();
    let size: number;
    try {
      size = await this.storage.size(firmware.storage_key);
    } catch {
      throw DomainError.notFound();
    }
    const range = parseRange(req.headers.range, size);
    res.setHeader('Accept-Ranges', 'bytes');
    res.setHeader('Content-Type', 'application/octet-stream');
    res.setHeader('Cache-Control', 'private, no-store');
    if (range === 'unsatisfiable') {
      res.status(416).setHeader('Content-Range', `bytes */${size}`);
      res.setHeader('Content-Length', '0');
      res.end();
      return;
    }
    if (range) {
      res.status(206);
      res.setHeader('Content-Range', `bytes ${range.start}-${range.end}/${size}`);
      res.setHeader('Content-Length', String(range.end - range.start + 1));
    } else {
      res.status(200);
      res.setHeader('Content-Length', String(size));
    }
    if (req.method === 'HEAD' || size === 0) {
      res.end();
      return;
    }
    const stream = await this.storage.read(firmware.storage_key, range ?? undefined);
    // A client that goes away mid-download is normal; the stream is closed either way.
    await pipeline(stream, res).catch(() => undefined);
  }
}
