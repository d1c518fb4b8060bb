import { parseArchivesChange } from '../archives/archive-records.service';
import { archivePayload } from './archive-delivery';

describe('archive messages', () => {
  it("has NervesHub's keys, uploaded_at as a naive ISO 8601 datetime", () => {
    const payload = archivePayload(
      {
        deployment_group_id: '3',
        product_id: '1',
        id: '7',
        uuid: '6f1c2e4a-7b3d-5e9f-8a1b-2c3d4e5f6a7b',
        version: '1.0.0',
        description: null,
        platform: 'rpi4',
        architecture: 'aarch64',
        size: '1234',
        storage_key: 'archives/1/x.fw',
        inserted_at: new Date('2026-11-22T03:04:05.678Z'),
      },
      'https://example.com/a.fw',
    );
    expect(payload).toEqual({
      size: 1234,
      uuid: '6f1c2e4a-7b3d-5e9f-8a1b-2c3d4e5f6a7b',
      version: '1.0.0',
      description: null,
      platform: 'rpi4',
      architecture: 'aarch64',
      uploaded_at: '2026-11-22T03:04:05',
      url: 'https://example.com/a.fw',
    });
  });

  it('reads bus changes, and nothing else', () => {
    expect(parseArchivesChange('{"group":"3","product":"1"}')).toEqual({ group: '3', product: '1' });
    expect(parseArchivesChange('{"group":3}')).toBeNull();
    expect(parseArchivesChange('not json')).toBeNull();
    expect(parseArchivesChange('null')).toBeNull();
  });
});
