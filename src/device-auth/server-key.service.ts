import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { link, mkdir, open, readFile, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/config';

/** What a sub-key is for; each purpose gets its own key, so that one use cannot stand in for another. */
export type ServerKeyPurpose =
  'encrypt-shared-secrets' | 'sign-download-urls' | 'sign-ca-verification-tokens' | 'sign-invitation-links';

export const SECRET_KEY_FILE = 'secret_key';
const MIN_KEY_LENGTH = 32;
const HKDF_SALT = Buffer.from('fleethub server key v1', 'utf8');

/** Layout of an encrypted blob: version ‖ 12-byte nonce ‖ AES-256-GCM ciphertext ‖ 16-byte tag. */
const BLOB_VERSION = 0x01;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

function isMissing(err: unknown): boolean {
  return (err as { code?: string }).code === 'ENOENT';
}

function isExisting(err: unknown): boolean {
  return (err as { code?: string }).code === 'EEXIST';
}

/**
 * The server's secret key: FLEETHUB_SECRET_KEY when set, else one generated on first start and kept in
 * `<data dir>/secret_key` (mode 600). The key text's UTF-8 bytes are the HKDF input in both cases, so the
 * file's content can be moved into FLEETHUB_SECRET_KEY unchanged. Nothing uses the key itself: each purpose
 * derives its own sub-key with HKDF-SHA256.
 */
@Injectable()
export class ServerKeyService implements OnModuleInit {
  private readonly logger = new Logger(ServerKeyService.name);
  private master: Buffer | null = null;
  private readonly subkeys = new Map<ServerKeyPurpose, Buffer>();

  constructor(@Inject(APP_CONFIG) private readonly config: Pick<AppConfig, 'secretKey' | 'dataDir'>) {}

  async onModuleInit(): Promise<void> {
    await this.load();
  }

  /** Resolves the key once (idempotent); called by Nest at start, by hand elsewhere. */
  async load(): Promise<void> {
    if (this.master) return;
    const text = this.config.secretKey ?? (await this.keyFromDataDir());
    this.master = Buffer.from(text, 'utf8');
  }

  /** A 32-byte key for one purpose. */
  subkey(purpose: ServerKeyPurpose): Buffer {
    let key = this.subkeys.get(purpose);
    if (!key) {
      if (!this.master) throw new Error('ServerKeyService used before the key was loaded');
      key = Buffer.from(hkdfSync('sha256', this.master, HKDF_SALT, `fleethub:${purpose}`, 32));
      this.subkeys.set(purpose, key);
    }
    return key;
  }

  /** AES-256-GCM under the `encrypt-shared-secrets` sub-key, with a random nonce. */
  encrypt(plain: string): Buffer {
    const nonce = randomBytes(NONCE_BYTES);
    const version = Buffer.from([BLOB_VERSION]);
    const cipher = createCipheriv('aes-256-gcm', this.subkey('encrypt-shared-secrets'), nonce);
    cipher.setAAD(version);
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return Buffer.concat([version, nonce, body, cipher.getAuthTag()]);
  }

  /** The plain text of an `encrypt` blob; throws when it was not made with this key or was altered. */
  decrypt(blob: Buffer): string {
    if (blob.length < 1 + NONCE_BYTES + TAG_BYTES || blob[0] !== BLOB_VERSION) {
      throw new Error('not an encrypted value of a known version');
    }
    const nonce = blob.subarray(1, 1 + NONCE_BYTES);
    const tag = blob.subarray(blob.length - TAG_BYTES);
    const decipher = createDecipheriv('aes-256-gcm', this.subkey('encrypt-shared-secrets'), nonce);
    decipher.setAAD(blob.subarray(0, 1));
    decipher.setAuthTag(tag);
    const body = blob.subarray(1 + NONCE_BYTES, blob.length - TAG_BYTES);
    return Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8');
  }

  /**
   * Reads `<data dir>/secret_key`, creating it first when absent. Creation writes a private temporary file and
   * hard-links it into place, which fails when the file already exists: of concurrent starts exactly one
   * wins, and every one of them then reads back the winner's key.
   */
  private async keyFromDataDir(): Promise<string> {
    const path = join(this.config.dataDir, SECRET_KEY_FILE);
    const existing = await this.readKeyFile(path);
    if (existing !== null) return existing;

    await mkdir(this.config.dataDir, { recursive: true, mode: 0o700 });
    const temporary = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
    const handle = await open(temporary, 'wx', 0o600);
    try {
      await handle.writeFile(`${randomBytes(32).toString('base64')}\n`, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    try {
      await link(temporary, path);
      this.logger.log({ path }, 'generated a new server secret key');
    } catch (err) {
      if (!isExisting(err)) throw err;
    } finally {
      await unlink(temporary).catch(() => undefined);
    }
    const created = await this.readKeyFile(path);
    if (created === null) throw new Error(`${path} vanished while it was being created`);
    return created;
  }

  private async readKeyFile(path: string): Promise<string | null> {
    let text: string;
    try {
      text = (await readFile(path, 'utf8')).trim();
    } catch (err) {
      if (isMissing(err)) return null;
      throw err;
    }
    if (text.length < MIN_KEY_LENGTH) {
      throw new Error(`${path} must hold a key of at least ${MIN_KEY_LENGTH} characters`);
    }
    if (((await stat(path)).mode & 0o077) !== 0) {
      this.logger.warn({ path }, 'the server secret key file is readable by other users; chmod 600 it');
    }
    return text;
  }
}
