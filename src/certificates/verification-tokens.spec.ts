import { fake } from '../../test/support/unit-fakes';
import type { ServerKeyService } from '../device-auth/server-key.service';
import { VERIFICATION_TOKEN_TTL_SECONDS, VerificationTokens } from './verification-tokens';

function tokens(key = 7): VerificationTokens {
  return new VerificationTokens(fake<ServerKeyService>({ subkey: () => Buffer.alloc(32, key) }));
}

const ISSUED = new Date('2026-11-26T05:00:00Z');
const after = (seconds: number) => new Date(ISSUED.getTime() + seconds * 1000);

describe('CA verification tokens', () => {
  it('are valid for their organization for one hour, and no longer', () => {
    const t = tokens();
    const token = t.issue('42', ISSUED);
    expect(token).toMatch(/^1\.42\.\d+\.[A-Za-z0-9_-]{43}$/);
    expect(t.check(token, '42', ISSUED)).toBe('valid');
    expect(t.check(token, '42', after(VERIFICATION_TOKEN_TTL_SECONDS))).toBe('valid');
    expect(t.check(token, '42', after(VERIFICATION_TOKEN_TTL_SECONDS + 1))).toBe('expired');
    // Issued by an instance whose clock runs a little ahead.
    expect(t.check(token, '42', after(-60))).toBe('valid');
    expect(t.check(token, '42', after(-61))).toBe('expired');
  });

  it('name another organization as such', () => {
    const t = tokens();
    expect(t.check(t.issue('42', ISSUED), '43', ISSUED)).toBe('other_org');
  });

  it('are invalid when altered, made with another server key, or malformed', () => {
    const t = tokens();
    const token = t.issue('42', ISSUED);
    const [version, org, issuedAt, mac] = token.split('.');
    const flipped = (mac[0] === 'A' ? 'B' : 'A') + mac.slice(1);
    for (const candidate of [
      [version, org, issuedAt, flipped].join('.'),
      // Another organization or a later time, with the original mac.
      [version, '43', issuedAt, mac].join('.'),
      [version, org, String(Number(issuedAt) + 3600), mac].join('.'),
      ['2', org, issuedAt, mac].join('.'),
      tokens(8).issue('42', ISSUED),
      '',
      'garbage',
      `${token}.`,
      ` ${token}`,
    ]) {
      expect(t.check(candidate, '42', ISSUED)).toBe('invalid');
    }
  });
});
