import {
  expectConflict,
  expectInvalid,
  expectNotFound,
  fake,
  fakeTransactions,
  fakeTx,
  orgAccess,
  pgError,
  product,
} from '../../test/support/unit-fakes';
import type { DeploymentRecordsService } from '../deployments/deployment-records.module';
import type { AuditService } from '../audit/audit.service';
import type { OrgAccess } from '../common/auth/actor';
import type { FirmwareRecordsService } from '../firmware/firmware-records.service';
import type { FirmwareFileRemover } from '../firmware/storage/firmware-file-remover';
import type { ProductRow } from './product-row';
import { PRODUCT_HAS_DEVICES } from './products.errors';
import type { ProductsRepository } from './products.repository';
import { ProductsService } from './products.service';

const row: ProductRow = {
  id: '5',
  org_id: '3',
  name: 'gateway',
  allow_unsigned_atomvm_firmware: false,
  allow_unsigned_esp_idf_firmware: false,
  allowed_update_tools: ['fwup'],
  require_unique_firmware_version: true,
  extensions: { health: false, geo: false, local_shell: false, logging: false, network_identity: true },
  inserted_at: new Date('2026-01-01T00:00:00Z'),
  updated_at: new Date('2026-01-01T00:00:00Z'),
};

function setup() {
  const products = {
    findByName: jest.fn(async () => row as ProductRow | null),
    insert: jest.fn(async () => product()),
    update: jest.fn(async () => true),
    delete: jest.fn(async () => true),
  };
  const firmware = { deleteAllOfProduct: jest.fn(async () => ['5/a.fw', '5/b.avm']) };
  const files = { schedule: jest.fn(async () => undefined), removeNow: jest.fn(async () => undefined) };
  const audit = { record: jest.fn(async () => undefined) };
  const deployments = { deleteAllOfProduct: jest.fn(async () => undefined) };
  const transactions = fakeTransactions();
  const service = new ProductsService(
    fake<ProductsRepository>(products),
    transactions,
    fake<FirmwareRecordsService>(firmware),
    fake<AuditService>(audit),
    fake<FirmwareFileRemover>(files),
    fake<DeploymentRecordsService>(deployments),
  );
  return { service, products, firmware, files, audit, transactions, deployments };
}

describe('ProductsService.findInOrg', () => {
  it('answers from the product the guard read with the membership, without a query', async () => {
    const { service, products } = setup();
    const access: OrgAccess = { ...orgAccess, product: { name: 'gateway', found: product({ id: '6' }) } };
    await expect(service.findInOrg(access, 'gateway')).resolves.toMatchObject({ id: '6', name: 'gateway' });
    expect(products.findByName).not.toHaveBeenCalled();
  });

  it('is a 404 without a query when the guard found no such product', async () => {
    const { service, products } = setup();
    await expectNotFound(service.findInOrg({ ...orgAccess, product: { name: 'gone', found: null } }, 'gone'));
    expect(products.findByName).not.toHaveBeenCalled();
  });

  it("reads the product by name in the caller's organization otherwise (404 when absent)", async () => {
    const { service, products } = setup();
    const access: OrgAccess = { ...orgAccess, product: { name: 'other', found: null } };
    await expect(service.findInOrg(access, 'gateway')).resolves.toMatchObject({
      id: '5',
      allowedUpdateTools: ['fwup'],
    });
    expect(products.findByName).toHaveBeenCalledWith('3', 'gateway');
    products.findByName.mockResolvedValue(null);
    await expectNotFound(service.findInOrg(orgAccess, 'nope'));
  });
});

describe('ProductsService: settings', () => {
  it('changes exactly the settings given, and answers the product with them', async () => {
    const { service, products, audit } = setup();
    const answer = await service.update(orgAccess, 'gateway', {
      allowed_update_tools: ['fwup', 'atomvm'],
      allow_unsigned_atomvm_firmware: true,
    });
    expect(products.update).toHaveBeenCalledWith(
      '5',
      { allowedUpdateTools: ['fwup', 'atomvm'], allowUnsignedAtomvmFirmware: true },
      fakeTx,
    );
    expect(answer.data).toEqual({
      name: 'gateway',
      allow_unsigned_atomvm_firmware: true,
      allow_unsigned_esp_idf_firmware: false,
      allowed_update_tools: ['fwup', 'atomvm'],
      require_unique_firmware_version: true,
    });
    expect(audit.record).toHaveBeenCalledWith(fakeTx, expect.objectContaining({ action: 'product.update' }));
  });

  it('false is a change like any other (the ESP-IDF flag, unique versions)', async () => {
    const { service, products } = setup();
    products.findByName.mockResolvedValue({ ...row, allow_unsigned_esp_idf_firmware: true });
    const answer = await service.update(orgAccess, 'gateway', {
      allow_unsigned_esp_idf_firmware: false,
      require_unique_firmware_version: false,
    });
    expect(products.update).toHaveBeenCalledWith(
      '5',
      { allowUnsignedEspIdfFirmware: false, requireUniqueFirmwareVersion: false },
      fakeTx,
    );
    expect(answer.data).toMatchObject({
      allow_unsigned_esp_idf_firmware: false,
      require_unique_firmware_version: false,
    });
  });

  it('an empty allowed_update_tools is a change (NervesHub allows it)', async () => {
    const { service, products } = setup();
    await service.update(orgAccess, 'gateway', { allowed_update_tools: [] });
    expect(products.update).toHaveBeenCalledWith('5', { allowedUpdateTools: [] }, fakeTx);
  });

  it('no setting given: no transaction, no audit, the product as it is', async () => {
    const { service, products, audit, transactions } = setup();
    await expect(service.update(orgAccess, 'gateway', {})).resolves.toEqual({
      data: expect.objectContaining({ allowed_update_tools: ['fwup'] }),
    });
    expect(transactions.run).not.toHaveBeenCalled();
    expect(products.update).not.toHaveBeenCalled();
    expect(audit.record).not.toHaveBeenCalled();
  });

  it('a product deleted meanwhile is a 404 and nothing is recorded', async () => {
    const { service, products, audit } = setup();
    products.update.mockResolvedValue(false);
    await expectNotFound(service.update(orgAccess, 'gateway', { allow_unsigned_atomvm_firmware: true }));
    expect(audit.record).not.toHaveBeenCalled();
  });
});

describe('ProductsService.create', () => {
  it('a name the organization holds already is 422 name', async () => {
    const { service, products } = setup();
    products.insert.mockRejectedValue(pgError('23505', 'products_org_id_name_key'));
    await expectInvalid(service.create(orgAccess, { name: 'gateway' }), { name: ['has already been taken'] });
  });

  it('the Location percent-encodes the names', async () => {
    const { service, products } = setup();
    products.insert.mockResolvedValue(product({ name: 'a b/c' }));
    const created = await service.create({ ...orgAccess, orgName: 'acme' }, { name: 'a b/c' });
    expect(created.location).toBe('/api/orgs/acme/products/a%20b%2Fc');
  });
});

describe('ProductsService.remove', () => {
  it('deletes the deployment groups, the firmware rows and the product in one transaction that records the files, then removes them', async () => {
    const { service, products, firmware, files, transactions, deployments } = setup();
    await service.remove(orgAccess, 'gateway');
    expect(transactions.run).toHaveBeenCalledTimes(1);
    expect(deployments.deleteAllOfProduct).toHaveBeenCalledWith('5', fakeTx);
    // The groups' releases hold the firmware: they go first.
    expect(deployments.deleteAllOfProduct.mock.invocationCallOrder[0]).toBeLessThan(
      firmware.deleteAllOfProduct.mock.invocationCallOrder[0],
    );
    expect(firmware.deleteAllOfProduct).toHaveBeenCalledWith('5', fakeTx);
    expect(products.delete).toHaveBeenCalledWith('5', fakeTx);
    expect(files.schedule).toHaveBeenCalledWith(['5/a.fw', '5/b.avm'], fakeTx);
    expect(files.removeNow).toHaveBeenCalledWith(['5/a.fw', '5/b.avm']);
    expect(files.removeNow.mock.invocationCallOrder[0]).toBeGreaterThan(
      products.delete.mock.invocationCallOrder[0],
    );
  });

  it('removes no file when the transaction fails: devices remain → 409', async () => {
    const { service, products, files } = setup();
    products.delete.mockRejectedValue(pgError('23503', 'devices_product_id_fkey'));
    await expectConflict(service.remove(orgAccess, 'gateway'), PRODUCT_HAS_DEVICES);
    expect(files.removeNow).not.toHaveBeenCalled();
  });

  it('removes no file when the product is gone meanwhile (404)', async () => {
    const { service, products, files, audit } = setup();
    products.delete.mockResolvedValue(false);
    await expectNotFound(service.remove(orgAccess, 'gateway'));
    expect(files.removeNow).not.toHaveBeenCalled();
    expect(audit.record).not.toHaveBeenCalled();
  });

  it('any other failure of the transaction is rethrown', async () => {
    const { service, products } = setup();
    const failure = pgError('40P01');
    products.delete.mockRejectedValue(failure);
    await expect(service.remove(orgAccess, 'gateway')).rejects.toBe(failure);
  });
});
