import type { LookupAddress } from 'node:dns';
import { parseCidr } from '../config/config';
import { AddressPolicy } from './address-policy';
import { safeLookup } from './webhook-sender';

const policy = (ranges: string[] = []) => new AddressPolicy(ranges.map((r) => parseCidr(r)!));

describe('AddressPolicy', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.8.9.10', 'loopback'],
    ['::1', 'loopback'],
    ['169.254.169.254', 'link-local'],
    ['10.0.0.1', 'private'],
    ['10.255.255.255', 'private'],
    ['172.16.5.4', 'private'],
    ['192.168.1.1', 'private'],
    ['fd00::1', 'unique local'],
    ['fe80::1', 'link-local'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:169.254.169.254', 'link-local'],
    ['100.64.0.1', 'shared'],
    ['224.0.0.1', 'multicast'],
  ])('refuses %s (%s)', (address, label) => {
    expect(policy().refusal(address)).toContain(label);
  });

  it.each(['93.184.216.34', '1.1.1.1', '2606:4700:4700::1111', '172.32.0.1', '11.0.0.1'])(
    'allows the public address %s',
    (address) => {
      expect(policy().refusal(address)).toBeNull();
    },
  );

  it('allows exactly the ranges the operator lists', () => {
    const allowing = policy(['127.0.0.1/32', '10.1.0.0/16']);
    expect(allowing.refusal('127.0.0.1')).toBeNull();
    expect(allowing.refusal('::ffff:127.0.0.1')).toBeNull();
    expect(allowing.refusal('127.0.0.2')).toContain('loopback');
    expect(allowing.refusal('10.1.200.3')).toBeNull();
    expect(allowing.refusal('10.2.0.1')).toContain('private');
    expect(allowing.refusal('::1')).toContain('loopback');
  });

  it('refuses what is not an address', () => {
    expect(policy().refusal('example.com')).toContain('not an IP address');
  });
});

describe('safeLookup', () => {
  const resolver = (table: Record<string, LookupAddress[]>) => ({
    resolve: (name: string) => Promise.resolve(table[name] ?? []),
  });
  const lookup = (p: AddressPolicy, table: Record<string, LookupAddress[]>, name: string, all: boolean) =>
    new Promise<{ err: NodeJS.ErrnoException | null; result: unknown }>((resolve) =>
      safeLookup(p, resolver(table))(name, { all }, (err, address, family) =>
        resolve({ err, result: all ? address : { address, family } }),
      ),
    );

  const table: Record<string, LookupAddress[]> = {
    'rebind.test': [{ address: '127.0.0.1', family: 4 }],
    'metadata.test': [{ address: '169.254.169.254', family: 4 }],
    'v6loop.test': [{ address: '::1', family: 6 }],
    'mixed.test': [
      { address: '10.0.0.7', family: 4 },
      { address: '93.184.216.34', family: 4 },
    ],
    'public.test': [{ address: '93.184.216.34', family: 4 }],
  };

  it.each(['rebind.test', 'metadata.test', 'v6loop.test'])(
    'refuses %s, which resolves internally',
    async (name) => {
      for (const all of [false, true]) {
        const { err } = await lookup(policy(), table, name, all);
        expect(err?.message).toMatch(/^address refused: /);
      }
    },
  );

  it('keeps only the allowed addresses of a name', async () => {
    expect((await lookup(policy(), table, 'mixed.test', true)).result).toEqual([
      { address: '93.184.216.34', family: 4 },
    ]);
    expect((await lookup(policy(), table, 'mixed.test', false)).result).toEqual({
      address: '93.184.216.34',
      family: 4,
    });
  });

  it('lets an allowed range through', async () => {
    const { err, result } = await lookup(policy(['127.0.0.1/32']), table, 'rebind.test', false);
    expect(err).toBeNull();
    expect(result).toEqual({ address: '127.0.0.1', family: 4 });
  });

  it('refuses a name without addresses', async () => {
    const { err } = await lookup(policy(), table, 'nothing.test', false);
    expect(err?.message).toBe('address refused: nothing.test: no address');
  });
});
