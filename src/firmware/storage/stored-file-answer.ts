import { DomainError } from '../../common/errors/domain-error';
import { parseRange } from './byte-range';
import type { FirmwareStorage, StoredBytes } from './firmware-storage';

/** How a stored file is answered over HTTP: the controller writes it as is (see `sendStoredFile`). */
export interface StoredFileAnswer {
  /** 302: the file is to be fetched from the store itself (`Location`, a presigned link). */
  status: 200 | 206 | 302 | 416;
  /** In the order they are sent. */
  headers: Record<string, string>;
  /** The bytes to send; null when the response has no body (302, 416, HEAD, an empty file). */
  body: StoredBytes | null;
}

export interface StoredFileRequest {
  /** The `Range` header, when sent. */
  range: string | undefined;
  /** A HEAD request: headers only. */
  headOnly: boolean;
  /** Headers sent with the bytes (200, 206), after the others; e.g. `Content-Disposition`. */
  fileHeaders?: Record<string, string>;
}

/**
 * Answers the file stored under `key`: a 302 to the store's own link when it gives one (S3), otherwise the whole
 * file (200) or one byte range (206; `Content-Range`), or 416 for a range outside it. A file the store has lost is
 * the constant 404.
 */
export async function answerStoredFile(
  storage: FirmwareStorage,
  key: string,
  request: StoredFileRequest,
): Promise<StoredFileAnswer> {
  const direct = await storage.directDownloadUrl(key);
  if (direct !== null) {
    return { status: 302, headers: { Location: direct, 'Cache-Control': 'private, no-store' }, body: null };
  }
  let size: number;
  try {
    size = await storage.size(key);
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
  Object.assign(headers, request.fileHeaders);
  const status = range ? 206 : 200;
  if (request.headOnly || size === 0) return { status, headers, body: null };
  return { status, headers, body: await storage.read(key, range ?? undefined) };
}
