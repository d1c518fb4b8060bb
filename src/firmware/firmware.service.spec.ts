import { access, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildFw, type FwMeta, generateFwupKeyPair } from '../../test/support/fw-builder';
import { writeEspImage } from '../../test/support/fw-builder-esp-idf';
import { writePackbeam } from '../../test/support/fw-builder-packbeam';
import {
  domainError,
  expectInvalid,
  fake,
  fakeTransactions,
  fakeTx,
  orgAccess,
  pgError,
  product,
} from '../../test/support/unit-fakes';
import type { AuditService } from '../audit/audit.service';
import { ErrorCode } from '../common/errors/error-codes';
import type { ProductRecord } from '../products/product-record';
import type { ProductsService } from '../products/products.service';
import type { SigningKeysService } from '../signing-keys/signing-keys.service';
import { ESP_IDF_UNVERIFIABLE } from './firmware-inspection';
import { toolNotAllowed } from './firmware.errors';
import { FirmwareService } from './firmware.service';
import type { FirmwareDeltaRecords } from './deltas/firmware-delta-records.service';
import type { FirmwaresRepository } from './firmwares.repository';
import { UNRECOGNISED_FORMAT } from './formats/detect-format';
import { computeMetaUuid } from './fwup';
import type { ReceivedFile } from './received-file';
import type { FirmwareFileRemover } from './storage/firmware-file-remover';
import type { FirmwareStorage } from './storage/firmware-storage';
import { UploadedFileStore } from './storage/uploaded-file-store';

const SHA = 'ab'.repeat(32);
const signer = generateFwupKeyPair();

let dir: string;
let fileNo = 0;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'firmware-service-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const nextPath = (ext: string) => join(dir, `upload-${++fileNo}${ext}`);
const received = (path: string, size = 1): ReceivedFile => ({ path, size, sha256: SHA, chunkSha256: [SHA] });
const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false,
  );

/** A signed fwup archive of `gateway` (the fake product), or as `meta` says. */
async function fwup(meta: FwMeta = {}, signed = true): Promise<{ file: ReceivedFile; uuid: string }> {
  const built = await buildFw(nextPath('.fw'), {
    meta: { product: 'gateway', version: '1.2.3', ...meta },
    signWith: signed ? signer.privateKey : undefined,
  });
  return { file: received(built.path, built.size), uuid: computeMetaUuid(built.metaConf) };
}

function setup(target: ProductRecord = product({ allowedUpdateTools: ['fwup', 'atomvm', 'esp-idf'] })) {
  const firmwares = {
    lockProductUploads: jest.fn(async () => undefined),
    existsByUuid: jest.fn(async () => false),
    existsByVersion: jest.fn(async () => false),
    insert: jest.fn(async (values: Record<string, unknown>) => ({ ...values, id: '90' })),
  };
  const products = { findInOrg: jest.fn(async () => target) };
  const keys = { forOrg: jest.fn(async () => [{ name: 'release', key: signer.publicKey }]) };
  const storage = {
    adopt: jest.fn(async (_key: string, _path: string) => undefined),
    remove: jest.fn(async () => undefined),
  };
  const files = {
    schedule: jest.fn(async () => undefined),
    removeNow: jest.fn(async () => undefined),
    discard: jest.fn(async () => undefined),
  };
  const audit = { record: jest.fn(async () => undefined) };
  const service = new FirmwareService(
    fake<FirmwaresRepository>(firmwares),
    fakeTransactions(),
    fake<ProductsService>(products),
    fake<SigningKeysService>(keys),
    fake<FirmwareStorage>(storage),
    fake<FirmwareFileRemover>(files),
    fake<AuditService>(audit),
    fake<FirmwareDeltaRecords>({}),
    new UploadedFileStore(fake<FirmwareStorage>(storage), fake<FirmwareFileRemover>(files)),
  );
  return { service, firmwares, keys, storage, files, audit };
}

/** The storage key of an upload: product id, uuid, a random part of its own, the tool's extension. */
const storageKeyOf = (uuid: string) => expect.stringMatching(new RegExp(`^5/${uuid}-[0-9a-f]{12}\\.fw$`));

/** The refusal's field and message, after checking that nothing was stored or recorded and the file is gone. */
async function refusal(ctx: ReturnType<typeof setup>, file: ReceivedFile): Promise<Record<string, string[]>> {
  const err = await domainError(ctx.service.ingest(orgAccess, 'gateway', file));
  expect(err.code).toBe(ErrorCode.VALIDATION_FAILED);
  expect(await exists(file.path)).toBe(false);
  expect(ctx.storage.adopt).not.toHaveBeenCalled();
  expect(ctx.firmwares.insert).not.toHaveBeenCalled();
  expect(ctx.audit.record).not.toHaveBeenCalled();
  return err.fields;
}

describe('FirmwareService.ingest: the order of checks, and the received file removed on every refusal', () => {
  it('a file of no known format is refused', async () => {
    const path = nextPath('.fw');
    await writeFile(path, 'PK but not quite: plain text');
    expect(await refusal(setup(), received(path))).toEqual({ firmware: [UNRECOGNISED_FORMAT] });
  });

  it("the tool is checked against the product's allowed_update_tools before the file is parsed", async () => {
    const path = nextPath('.fw');
    await writeFile(path, Buffer.concat([Buffer.from('PK\x03\x04', 'latin1'), Buffer.alloc(64, 0xee)]));
    const ctx = setup(product({ allowedUpdateTools: ['atomvm'] }));
    expect(await refusal(ctx, received(path))).toEqual({ firmware: [toolNotAllowed('gateway', 'fwup')] });
    expect(ctx.keys.forOrg).not.toHaveBeenCalled();
  });

  it('the same file parsed with fwup allowed is a format error, not the tool refusal', async () => {
    const path = nextPath('.fw');
    await writeFile(path, Buffer.concat([Buffer.from('PK\x03\x04', 'latin1'), Buffer.alloc(64, 0xee)]));
    const fields = await refusal(setup(), received(path));
    expect(fields.firmware).toHaveLength(1);
    expect(fields.firmware[0]).not.toBe(toolNotAllowed('gateway', 'fwup'));
  });

  it('an ESP-IDF image is refused by the unsigned policy before it is read (even one of another product)', async () => {
    const path = nextPath('.bin');
    await writeEspImage(path, { projectName: 'someone_else', version: '1.0.0' });
    const ctx = setup(product({ allowedUpdateTools: ['esp-idf'], allowUnsignedEspIdfFirmware: false }));
    expect(await refusal(ctx, received(path))).toEqual({ firmware: [ESP_IDF_UNVERIFIABLE] });
  });

  it('an unsigned AtomVM packbeam is refused unless the product accepts them', async () => {
    const path = nextPath('.avm');
    await writePackbeam(path, { application: 'gateway', vsn: '1.0.0' });
    const fields = await refusal(setup(product({ allowedUpdateTools: ['atomvm'] })), received(path));
    expect(fields.firmware[0]).toMatch(/^is an unsigned AtomVM packbeam/);
  });

  it('the declared product must be the product of the path (checked before the signature)', async () => {
    const { file } = await fwup({ product: 'other' }, false);
    const ctx = setup();
    expect(await refusal(ctx, file)).toEqual({
      firmware: ['is built for the product "other", but was uploaded to "gateway"'],
    });
    expect(ctx.keys.forOrg).not.toHaveBeenCalled();
  });

  it('the version must be SemVer (checked before the signature)', async () => {
    const { file } = await fwup({ version: 'one' }, false);
    const ctx = setup();
    expect(await refusal(ctx, file)).toEqual({ version: ['must be a valid semantic version'] });
    expect(ctx.keys.forOrg).not.toHaveBeenCalled();
  });

  it("a signed fwup is checked with the organization's keys", async () => {
    const { file } = await fwup();
    const ctx = setup();
    ctx.keys.forOrg.mockResolvedValue([{ name: 'other', key: generateFwupKeyPair().publicKey }]);
    expect(await refusal(ctx, file)).toEqual({
      firmware: ["signature does not match any of the organization's signing keys"],
    });
    expect(ctx.keys.forOrg).toHaveBeenCalledWith('3');
  });

  it('a uuid the product holds already is 422 uuid before the file goes to the store', async () => {
    const { file, uuid } = await fwup();
    const ctx = setup();
    ctx.firmwares.existsByUuid.mockResolvedValue(true);
    expect(await refusal(ctx, file)).toEqual({ uuid: ['has already been taken'] });
    expect(ctx.firmwares.existsByUuid).toHaveBeenCalledWith('5', uuid, undefined);
    expect(ctx.storage.adopt).not.toHaveBeenCalled();
    expect(await exists(file.path)).toBe(false);
  });

  it('a uuid taken while the file went to the store is 422 uuid, decided under the upload lock, and the stored file removed', async () => {
    const { file, uuid } = await fwup();
    const ctx = setup();
    ctx.firmwares.existsByUuid.mockResolvedValueOnce(false).mockResolvedValueOnce(true);
    await expectInvalid(ctx.service.ingest(orgAccess, 'gateway', file), { uuid: ['has already been taken'] });
    expect(await exists(file.path)).toBe(false);
    expect(ctx.firmwares.existsByUuid).toHaveBeenLastCalledWith('5', uuid, fakeTx);
    expect(ctx.firmwares.lockProductUploads).toHaveBeenCalledWith('5', fakeTx);
    expect(ctx.firmwares.lockProductUploads.mock.invocationCallOrder[0]).toBeLessThan(
      ctx.firmwares.existsByUuid.mock.invocationCallOrder[1],
    );
    expect(ctx.storage.adopt.mock.invocationCallOrder[0]).toBeLessThan(
      ctx.firmwares.lockProductUploads.mock.invocationCallOrder[0],
    );
    expect(ctx.files.discard).toHaveBeenCalledWith(ctx.storage.adopt.mock.calls[0][0]);
    expect(ctx.firmwares.insert).not.toHaveBeenCalled();
  });

  it('a version the product holds already is 422 version when the product requires unique versions', async () => {
    const { file } = await fwup();
    const ctx = setup();
    ctx.firmwares.existsByVersion.mockResolvedValue(true);
    expect(await refusal(ctx, file)).toEqual({ version: ['has already been taken'] });
    expect(ctx.firmwares.existsByVersion).toHaveBeenCalledWith('5', '1.2.3', undefined);
    expect(ctx.storage.adopt).not.toHaveBeenCalled();
  });

  it('a repeated version is accepted when the product does not require unique versions', async () => {
    const { file } = await fwup();
    const ctx = setup(product({ requireUniqueFirmwareVersion: false }));
    ctx.firmwares.existsByVersion.mockResolvedValue(true);
    await ctx.service.ingest(orgAccess, 'gateway', file);
    expect(ctx.firmwares.existsByVersion).not.toHaveBeenCalled();
    expect(ctx.firmwares.insert).toHaveBeenCalled();
  });

  it('an insert that loses the uuid race removes the adopted file and answers 422 uuid', async () => {
    const { file, uuid } = await fwup();
    const ctx = setup();
    ctx.firmwares.insert.mockRejectedValue(pgError('23505', 'firmwares_product_id_uuid_key'));
    await expectInvalid(ctx.service.ingest(orgAccess, 'gateway', file), { uuid: ['has already been taken'] });
    expect(ctx.storage.adopt).toHaveBeenCalledWith(storageKeyOf(uuid), file.path);
    expect(ctx.files.discard).toHaveBeenCalledWith(ctx.storage.adopt.mock.calls[0][0]);
    expect(await exists(file.path)).toBe(false);
  });

  it('a store that does not take the file is a 503 with the cause kept; nothing recorded, the file removed', async () => {
    const { file } = await fwup();
    const ctx = setup();
    const down = new Error('connect ECONNREFUSED');
    ctx.storage.adopt.mockRejectedValue(down);
    const err = await domainError(ctx.service.ingest(orgAccess, 'gateway', file));
    expect(err.code).toBe(ErrorCode.SERVICE_UNAVAILABLE);
    expect(err.headers).toEqual({ 'Retry-After': '5' });
    expect(err.cause).toBe(down);
    expect(ctx.firmwares.insert).not.toHaveBeenCalled();
    expect(ctx.storage.remove).not.toHaveBeenCalled();
    expect(await exists(file.path)).toBe(false);
  });

  it('any other failure after adoption removes the stored file too, and is rethrown', async () => {
    const { file, uuid } = await fwup();
    const ctx = setup();
    const failure = new Error('audit down');
    ctx.audit.record.mockRejectedValue(failure);
    await expect(ctx.service.ingest(orgAccess, 'gateway', file)).rejects.toBe(failure);
    expect(ctx.files.discard).toHaveBeenCalledWith(storageKeyOf(uuid));
    expect(await exists(file.path)).toBe(false);
  });

  it('an accepted upload is adopted into storage under product/uuid-random, recorded with the key that signed it', async () => {
    const { file, uuid } = await fwup();
    const ctx = setup();
    const created = await ctx.service.ingest(orgAccess, 'gateway', file);
    expect(created.location).toBe(`/api/orgs/acme/products/gateway/firmwares/${uuid}`);
    expect(ctx.storage.adopt).toHaveBeenCalledWith(storageKeyOf(uuid), file.path);
    expect(ctx.firmwares.insert).toHaveBeenCalledWith(
      expect.objectContaining({
        productId: '5',
        uuid,
        version: '1.2.3',
        tool: 'fwup',
        storageKey: ctx.storage.adopt.mock.calls[0][0],
        signedWith: 'release',
        uploadedById: '7',
        size: String(file.size),
      }),
      fakeTx,
    );
    expect(ctx.storage.remove).not.toHaveBeenCalled();
    expect(await exists(file.path)).toBe(false);
  });

  it('an unknown product is refused and the file removed', async () => {
    const { file } = await fwup();
    const ctx = setup();
    const products = { findInOrg: jest.fn(async () => Promise.reject(new Error('404'))) };
    const service = new FirmwareService(
      fake<FirmwaresRepository>(ctx.firmwares),
      fakeTransactions(),
      fake<ProductsService>(products),
      fake<SigningKeysService>(ctx.keys),
      fake<FirmwareStorage>(ctx.storage),
      fake<FirmwareFileRemover>(ctx.files),
      fake<AuditService>(ctx.audit),
      fake<FirmwareDeltaRecords>({}),
      new UploadedFileStore(fake<FirmwareStorage>(ctx.storage), fake<FirmwareFileRemover>(ctx.files)),
    );
    await expect(service.ingest(orgAccess, 'nope', file)).rejects.toThrow('404');
    expect(await exists(file.path)).toBe(false);
  });
});
