import { Logger } from '@nestjs/common';
import { fake } from '../../../test/support/unit-fakes';
import { FirmwareFileRemover, retryDelaySec } from './firmware-file-remover';
import type { FirmwareStorage } from './firmware-storage';
import type { StorageDeletionsRepository } from './storage-deletions.repository';

function setup() {
  const deletions = {
    record: jest.fn(async () => undefined),
    forget: jest.fn(async () => undefined),
    due: jest.fn(async () => [
      { id: '1', storage_key: '5/a.fw', attempts: 0 },
      { id: '2', storage_key: '5/b.fw', attempts: 3 },
    ]),
    postpone: jest.fn(async () => undefined),
  };
  const storage = { remove: jest.fn(async (_key: string) => undefined) };
  const remover = new FirmwareFileRemover(
    fake<StorageDeletionsRepository>(deletions),
    fake<FirmwareStorage>(storage),
  );
  return { remover, deletions, storage };
}

describe('FirmwareFileRemover', () => {
  let warn: jest.SpyInstance;
  beforeEach(() => {
    warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
  });
  afterEach(() => warn.mockRestore());

  it('records the files in the given transaction, with a grace before the sweeper may take them', async () => {
    const { remover, deletions } = setup();
    const tx = { query: jest.fn() };
    await remover.schedule(['5/a.fw'], tx as never);
    expect(deletions.record).toHaveBeenCalledWith(['5/a.fw'], 60, tx);
  });

  it("discards a refused upload's file now, or leaves it to the sweeper when the store cannot remove it", async () => {
    const { remover, deletions, storage } = setup();
    await remover.discard('5/x.fw');
    expect(storage.remove).toHaveBeenCalledWith('5/x.fw');
    expect(deletions.record).not.toHaveBeenCalled();
    storage.remove.mockRejectedValueOnce(new Error('store down'));
    await expect(remover.discard('5/y.fw')).resolves.toBeUndefined();
    expect(deletions.record).toHaveBeenCalledWith(['5/y.fw'], 0);
  });

  it('removes each file now and forgets its record only once it is removed', async () => {
    const { remover, deletions, storage } = setup();
    storage.remove.mockRejectedValueOnce(new Error('store down'));
    await expect(remover.removeNow(['5/a.fw', '5/b.fw'])).resolves.toBeUndefined();
    expect(storage.remove.mock.calls).toEqual([['5/a.fw'], ['5/b.fw']]);
    expect(deletions.forget.mock.calls).toEqual([['5/b.fw']]);
    expect(warn).toHaveBeenCalledWith(
      expect.objectContaining({ key: '5/a.fw' }),
      'firmware file not removed; it will be retried',
    );
  });

  it('the sweeper removes what is due and postpones what fails again, backing off', async () => {
    const { remover, deletions, storage } = setup();
    storage.remove.mockImplementation(async (key: string) => {
      if (key === '5/b.fw') throw new Error('store down');
    });
    await remover.sweep();
    expect(deletions.forget.mock.calls).toEqual([['5/a.fw']]);
    expect(deletions.postpone).toHaveBeenCalledWith('2', retryDelaySec(3));
    expect(retryDelaySec(3)).toBe(480);
  });

  it('backs off from a minute to at most an hour', () => {
    expect([0, 1, 2, 5, 6, 50].map(retryDelaySec)).toEqual([60, 120, 240, 1920, 3600, 3600]);
  });

  it('a sweep asked for while one runs joins it', async () => {
    const { remover, deletions } = setup();
    await Promise.all([remover.sweep(), remover.sweep()]);
    expect(deletions.due).toHaveBeenCalledTimes(1);
  });
});
