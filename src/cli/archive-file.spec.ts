import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readFirmwareArchive, verifyMetaSignature } from '../firmware/fwup';
import { buildArchiveFile, generateFwupKeyFiles, readFwupPrivateKey } from './archive-file';

describe('fleethub archives: fwup key files and signed archives', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fleethub-archive-file-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('writes keys in fwup -g formats and signs an archive that verifies with the public key only', async () => {
    const files = generateFwupKeyFiles();
    expect(Buffer.from(files.priv, 'base64')).toHaveLength(64);
    expect(files.pub).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    const privateKey = readFwupPrivateKey(`${files.priv}\n`);
    const data = Buffer.from('weights '.repeat(1000));
    const archive = buildArchiveFile(
      {
        product: 'models',
        version: '1.2.3',
        platform: 'generic',
        architecture: 'generic',
        author: 'me',
        description: 'a model',
      },
      { path: '/some/where/model v1.bin', data },
      privateKey,
    );
    const path = join(dir, 'model.fw');
    await writeFile(path, archive);
    const read = await readFirmwareArchive(path);
    expect(read.metadata).toMatchObject({ product: 'models', version: '1.2.3', description: 'a model' });
    expect(read.entries.map((e) => e.name)).toEqual(['meta.conf.ed25519', 'meta.conf', 'data/model_v1.bin']);
    expect(verifyMetaSignature(read.metaConf, read.signature!, [{ name: 'k', key: files.pub }])).toBe('k');
    const other = generateFwupKeyFiles();
    expect(verifyMetaSignature(read.metaConf, read.signature!, [{ name: 'k', key: other.pub }])).toBeNull();
  });

  it('refuses a private key file that is not one', () => {
    expect(() => readFwupPrivateKey('bm90IGEga2V5')).toThrow('not an fwup private key');
    const files = generateFwupKeyFiles();
    const raw = Buffer.from(files.priv, 'base64');
    raw[40] ^= 1;
    expect(() => readFwupPrivateKey(raw.toString('base64'))).toThrow('does not match');
  });
});
