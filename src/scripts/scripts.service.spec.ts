import {
  expectNotFound,
  fake,
  fakeTransactions,
  fakeTx,
  orgAccess,
  product,
} from '../../test/support/unit-fakes';
import type { AuditService } from '../audit/audit.service';
import type { ProductsService } from '../products/products.service';
import type { ScriptRow } from './script-view';
import type { ScriptsRepository } from './scripts.repository';
import { ScriptsService } from './scripts.service';

const row: ScriptRow = {
  id: '12',
  name: 'reboot',
  tags: 'a,b',
  text: 'Nerves.Runtime.reboot()',
  inserted_at: new Date('2026-01-01T00:00:00Z'),
  updated_at: new Date('2026-01-01T00:00:00Z'),
  author_id: null,
  author_name: null,
  author_email: null,
};

function setup() {
  const scripts = {
    insert: jest.fn(async () => '12'),
    update: jest.fn(async () => true),
    delete: jest.fn(async () => true),
    findInProduct: jest.fn(async (): Promise<ScriptRow | null> => row),
    listPage: jest.fn(async () => [row]),
    countInProduct: jest.fn(async () => 31),
  };
  const products = { findInOrg: jest.fn(async () => product()) };
  const audit = { record: jest.fn(async () => undefined) };
  const transactions = fakeTransactions();
  const service = new ScriptsService(
    fake<ScriptsRepository>(scripts),
    transactions,
    fake<ProductsService>(products),
    fake<AuditService>(audit),
  );
  return { service, scripts, audit, transactions };
}

describe('ScriptsService', () => {
  it('stores the tags normalised and joined with commas, the text as given', async () => {
    const { service, scripts } = setup();
    await service.create(orgAccess, 'gateway', {
      name: 'reboot',
      text: '  IO.puts(1)\n',
      tags: [' b ', 'a', 'b', ''],
    });
    expect(scripts.insert).toHaveBeenCalledWith(
      { productId: '5', name: 'reboot', text: '  IO.puts(1)\n', tags: 'b,a', createdById: '7' },
      fakeTx,
    );
  });

  it('a tags string is split on commas', async () => {
    const { service, scripts } = setup();
    await service.update(orgAccess, 'gateway', '12', { tags: 'x, y ,,x' });
    expect(scripts.update).toHaveBeenCalledWith('5', '12', { tags: 'x,y' }, fakeTx);
  });

  it.each(['boopsnoot', '0', '-1', '1.5', '99999999999999999999'])(
    'an id that is not a script id (%j) is a 404 without a query',
    async (id) => {
      const { service, scripts, transactions } = setup();
      await expectNotFound(service.show(orgAccess, 'gateway', id));
      await expectNotFound(service.update(orgAccess, 'gateway', id, { name: 'x' }));
      await expectNotFound(service.remove(orgAccess, 'gateway', id));
      expect(scripts.findInProduct).not.toHaveBeenCalled();
      expect(transactions.run).not.toHaveBeenCalled();
    },
  );

  it('update changes only the fields given and records their names; none given opens no transaction', async () => {
    const { service, scripts, audit, transactions } = setup();
    await service.update(orgAccess, 'gateway', '12', { text: 'x' });
    expect(scripts.update).toHaveBeenCalledWith('5', '12', { text: 'x' }, fakeTx);
    expect(audit.record).toHaveBeenCalledWith(
      fakeTx,
      expect.objectContaining({ action: 'script.update', details: { product: 'gateway', fields: ['text'] } }),
    );
    await service.update(orgAccess, 'gateway', '12', {});
    expect(transactions.run).toHaveBeenCalledTimes(1);
  });

  it('a script of another product (or gone) is a 404 and records nothing', async () => {
    const { service, scripts, audit } = setup();
    scripts.update.mockResolvedValue(false);
    scripts.delete.mockResolvedValue(false);
    scripts.findInProduct.mockResolvedValue(null);
    await expectNotFound(service.update(orgAccess, 'gateway', '12', { name: 'x' }));
    await expectNotFound(service.remove(orgAccess, 'gateway', '12'));
    await expectNotFound(service.show(orgAccess, 'gateway', '12'));
    expect(audit.record).not.toHaveBeenCalled();
  });

  it('lists a page: default size 10, offset from the page number, total from the count', async () => {
    const { service, scripts } = setup();
    const listed = await service.list(orgAccess, 'gateway', { page: '3' });
    expect(scripts.listPage).toHaveBeenCalledWith('5', 10, 20);
    expect(listed.pagination).toMatchObject({
      page_number: 3,
      page_size: 10,
      total_entries: 31,
      total_pages: 4,
    });
  });
});
