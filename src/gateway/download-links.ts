import { createHmac, timingSafeEqual } from 'node:crypto';

/** How long a firmware link handed to a device stays valid (NervesHub's presigned S3 links: 24 h). */
export const DOWNLOAD_LINK_TTL_SECONDS = 24 * 60 * 60;

export const DOWNLOAD_PATH_PREFIX = '/device-firmware';

/**
 * The path of a firmware's download link: the firmware's row id (uuids are unique per product only) and its file
 * name, `<uuid>.fw|.avm|.bin` by its tool.
 */
export function downloadPath(firmwareId: string, fileName: string): string {
  return `${DOWNLOAD_PATH_PREFIX}/${firmwareId}/${fileName}`;
}

/** The path of an fwup delta's download link: the delta's row id and `<target uuid>.fw`. */
export function deltaDownloadPath(deltaId: string, fileName: string): string {
  return `${DOWNLOAD_PATH_PREFIX}/deltas/${deltaId}/${fileName}`;
}

/**
 * Signed, expiring firmware links: `?expires=<unix seconds>&signature=<base64url HMAC-SHA256(path "\n" expires)>`
 * with a key derived from the server secret. The link is the only credential, as with NervesHub's links.
 */
export class DownloadLinkSigner {
  constructor(
    private readonly key: Buffer,
    private readonly publicUrl: string,
    private readonly now: () => number = Date.now,
  ) {}

  url(firmwareId: string, fileName: string, ttlSeconds = DOWNLOAD_LINK_TTL_SECONDS): string {
    return this.signedUrl(downloadPath(firmwareId, fileName), ttlSeconds);
  }

  /** The signed, expiring link of any download path (a firmware's, a delta's, an archive's). */
  signedUrl(path: string, ttlSeconds = DOWNLOAD_LINK_TTL_SECONDS): string {
    const expires = Math.floor(this.now() / 1000) + ttlSeconds;
    return `${this.publicUrl}${path}?expires=${expires}&signature=${this.sign(path, expires)}`;
  }

  /** True when the signature matches (compared in constant time) and the link has not expired. */
  verify(path: string, expires: unknown, signature: unknown): boolean {
    if (typeof expires !== 'string' || !/^\d{1,12}$/.test(expires)) return false;
    if (typeof signature !== 'string' || signature.length > 128) return false;
    const expected = Buffer.from(this.sign(path, Number(expires)));
    const given = Buffer.from(signature);
    const valid = given.length === expected.length && timingSafeEqual(given, expected);
    return valid && Number(expires) * 1000 >= this.now();
  }

  private sign(path: string, expires: number): string {
    return createHmac('sha256', this.key).update(`${path}\n${expires}`).digest('base64url');
  }
}

/** The link-signing key, derived from the server secret for this one purpose. */
export function deriveLinkKey(secret: string | Buffer): Buffer {
  return createHmac('sha256', secret).update('fleethub:sign-download-urls').digest();
}
