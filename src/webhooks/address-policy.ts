import { BlockList, isIP } from 'node:net';
import type { CidrRange } from '../config/config';

/** Internal ranges no delivery connects to unless the operator allows them (FLEETHUB_WEBHOOK_ALLOW_CIDRS). */
const INTERNAL_RANGES: [string, number, 'ipv4' | 'ipv6', string][] = [
  ['0.0.0.0', 8, 'ipv4', 'unspecified'],
  ['10.0.0.0', 8, 'ipv4', 'private'],
  ['100.64.0.0', 10, 'ipv4', 'shared (carrier-grade NAT)'],
  ['127.0.0.0', 8, 'ipv4', 'loopback'],
  ['169.254.0.0', 16, 'ipv4', 'link-local (cloud metadata)'],
  ['172.16.0.0', 12, 'ipv4', 'private'],
  ['192.0.0.0', 24, 'ipv4', 'IETF protocol assignments'],
  ['192.0.2.0', 24, 'ipv4', 'documentation'],
  ['192.168.0.0', 16, 'ipv4', 'private'],
  ['198.18.0.0', 15, 'ipv4', 'benchmarking'],
  ['198.51.100.0', 24, 'ipv4', 'documentation'],
  ['203.0.113.0', 24, 'ipv4', 'documentation'],
  ['224.0.0.0', 4, 'ipv4', 'multicast'],
  ['240.0.0.0', 4, 'ipv4', 'reserved'],
  ['::', 128, 'ipv6', 'unspecified'],
  ['::1', 128, 'ipv6', 'loopback'],
  ['64:ff9b:1::', 48, 'ipv6', 'local NAT64'],
  ['100::', 64, 'ipv6', 'discard'],
  ['2001:db8::', 32, 'ipv6', 'documentation'],
  ['fc00::', 7, 'ipv6', 'unique local (private)'],
  ['fe80::', 10, 'ipv6', 'link-local'],
  ['fec0::', 10, 'ipv6', 'site-local'],
  ['ff00::', 8, 'ipv6', 'multicast'],
];

/** An IPv4 address carried in IPv6 (`::ffff:a.b.c.d`, `::a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`), else null. */
function embeddedIpv4(address: string): string | null {
  const lower = address.toLowerCase();
  const dotted = /^(?:::ffff:|::|64:ff9b::)(\d{1,3}(?:\.\d{1,3}){3})$/.exec(lower);
  if (dotted) return dotted[1];
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (hex) {
    const hi = parseInt(hex[1], 16);
    const lo = parseInt(hex[2], 16);
    return [hi >> 8, hi & 255, lo >> 8, lo & 255].join('.');
  }
  return null;
}

/**
 * Decides which addresses a delivery may connect to: public ones, plus the operator's allowed ranges. Judged on
 * the resolved address at connect time (see `safeLookup`), so a name that resolves elsewhere later (DNS
 * rebinding) is judged again.
 */
export class AddressPolicy {
  private readonly allowed = new BlockList();
  private readonly internal: { list: BlockList; label: string }[] = [];

  constructor(allowedRanges: CidrRange[]) {
    for (const range of allowedRanges) this.allowed.addSubnet(range.address, range.prefix, range.family);
    for (const [address, prefix, family, label] of INTERNAL_RANGES) {
      const list = new BlockList();
      list.addSubnet(address, prefix, family);
      this.internal.push({ list, label });
    }
  }

  /** Null when a delivery may connect to `address`, else why not (e.g. `127.0.0.1 is loopback`). */
  refusal(address: string): string | null {
    const version = isIP(address);
    if (version === 0) return `${address} is not an IP address`;
    const v4 = version === 6 ? embeddedIpv4(address) : null;
    const [checked, family] = v4
      ? [v4, 'ipv4' as const]
      : [address, version === 4 ? ('ipv4' as const) : ('ipv6' as const)];
    if (this.allowed.check(checked, family) || (v4 !== null && this.allowed.check(address, 'ipv6')))
      return null;
    for (const { list, label } of this.internal) {
      if (list.check(checked, family)) return `${address} is ${label}`;
    }
    return null;
  }
}
