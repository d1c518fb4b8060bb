import type { ServerResponse } from 'node:http';
import type { StoredFileAnswer } from '../../firmware/storage/stored-file-answer';

/**
 * Writes a stored file's answer: status, headers in order, then the bytes (a client that goes away mid-download
 * is normal). For handlers that answer with `@Res()`.
 */
export async function sendStoredFile(res: ServerResponse, answer: StoredFileAnswer): Promise<void> {
  res.statusCode = answer.status;
  for (const [name, value] of Object.entries(answer.headers)) res.setHeader(name, value);
  if (answer.body === null) {
    res.end();
    return;
  }
  await answer.body.sendTo(res).catch(() => undefined);
}
