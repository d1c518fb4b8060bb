import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { computeMetaUuid, readFirmwareArchive, verifyMetaSignature } from '../firmware/fwup';
import { buildDemoFirmware, generateDemoSigningKey } from './demo-firmware';

describe('demo firmware', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'demo-fw-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  const meta = {
    product: 'gateway',
    version: '1.1.0',
    platform: 'rpi4',
    architecture: 'aarch64',
    author: 'fleethub demo',
    description: 'Demo firmware 1.1.0',
  };

  it('is a signed fwup archive that the firmware reader accepts', async () => {
    const key = generateDemoSigningKey();
    expect(key.publicKey).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    const path = join(dir, 'demo.fw');
    await writeFile(path, buildDemoFirmware(meta, key.privateKey));
    const archive = await readFirmwareArchive(path);
    expect(archive.metadata).toMatchObject({
      product: 'gateway',
      version: '1.1.0',
      platform: 'rpi4',
      architecture: 'aarch64',
      author: 'fleethub demo',
      description: 'Demo firmware 1.1.0',
    });
    expect(archive.signature).not.toBeNull();
    expect(archive.uuid).toBe(computeMetaUuid(archive.metaConf));
    const keys = [{ name: 'demo', key: key.publicKey }];
    expect(verifyMetaSignature(archive.metaConf, archive.signature!, keys)).toBe('demo');
  });

  it('gives each version its own uuid', async () => {
    const key = generateDemoSigningKey();
    const uuids = new Set<string>();
    for (const version of ['1.0.0', '1.1.0']) {
      const path = join(dir, `v${version}.fw`);
      await writeFile(path, buildDemoFirmware({ ...meta, version }, key.privateKey));
      uuids.add((await readFirmwareArchive(path)).uuid);
    }
    expect(uuids.size).toBe(2);
  });
});
