import { semverSortKey } from '../firmware/fwup/semver-sort-key';
import type { MembershipGroup } from './deployment-groups.repository';
import { chooseGroup, deviceMatchesGroup } from './deployment-membership.service';

function group(id: string, overrides: Partial<MembershipGroup> & { version?: string } = {}): MembershipGroup {
  const { version = '1.0.0', ...rest } = overrides;
  return {
    id,
    is_active: true,
    lock_device_membership: false,
    platform: 'rpi4',
    architecture: 'aarch64',
    conditions_version: '',
    conditions_tags: [],
    conditions_tag_operator: 'and',
    version_sort_key: semverSortKey(version)!,
    ...rest,
  };
}

const device = (overrides: Partial<Parameters<typeof chooseGroup>[0]> = {}) => ({
  tags: ['a', 'b'],
  firmware_platform: 'rpi4',
  firmware_architecture: 'aarch64',
  firmware_version: '1.2.0',
  deployment_group_id: null as string | null,
  ...overrides,
});

describe('deviceMatchesGroup', () => {
  it.each([
    [{}, {}, true],
    [{ firmware_platform: 'bbb' }, {}, false],
    [{ firmware_platform: null }, {}, false],
    [{ firmware_architecture: 'arm' }, {}, false],
    [{}, { conditions_tags: ['a', 'c'] }, false],
    [{}, { conditions_tags: ['a', 'c'], conditions_tag_operator: 'or' as const }, true],
    [{}, { conditions_tags: ['a', 'b'] }, true],
    [{ tags: [] }, { conditions_tags: [], conditions_tag_operator: 'or' as const }, true],
    [{}, { conditions_version: '~> 1.2' }, true],
    [{}, { conditions_version: '>= 2.0.0' }, false],
    [{ firmware_version: null }, { conditions_version: '' }, true],
    [{ firmware_version: null }, { conditions_version: '>= 0.0.0' }, false],
  ])('device %p, group %p: %p', (d, g, expected) => {
    expect(deviceMatchesGroup(device(d), group('1', g))).toBe(expected);
  });
});

describe('chooseGroup', () => {
  it('prefers the highest firmware version, then more matching tags, then the lower id', () => {
    expect(chooseGroup(device(), [group('1'), group('2', { version: '1.1.0' })])).toBe('2');
    const tagged = group('3', { conditions_tags: ['a', 'b'] });
    const oneTag = group('2', { conditions_tags: ['a'] });
    expect(chooseGroup(device(), [group('1'), oneTag, tagged])).toBe('3');
    expect(chooseGroup(device(), [group('5'), group('4')])).toBe('4');
    expect(chooseGroup(device(), [group('10'), group('9')])).toBe('9');
  });

  it('takes neither inactive nor locked groups', () => {
    expect(
      chooseGroup(device(), [group('1', { is_active: false }), group('2', { lock_device_membership: true })]),
    ).toBeNull();
  });

  it('keeps a matching group, even inactive, over a better one; leaves one it no longer matches unless locked', () => {
    const better = group('2', { version: '9.0.0' });
    expect(
      chooseGroup(device({ deployment_group_id: '1' }), [group('1', { is_active: false }), better]),
    ).toBe('1');
    const mismatched = group('1', { conditions_version: '>= 5.0.0' });
    expect(chooseGroup(device({ deployment_group_id: '1' }), [mismatched, better])).toBe('2');
    const locked = { ...mismatched, lock_device_membership: true };
    expect(chooseGroup(device({ deployment_group_id: '1' }), [locked, better])).toBe('1');
  });
});
