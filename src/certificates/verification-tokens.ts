import { createHmac, timingSafeEqual } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { ServerKeyService } from '../device-auth/server-key.service';

/** How long a CA verification token is accepted after it was issued (NervesHub: one hour). */
export const VERIFICATION_TOKEN_TTL_SECONDS = 60 * 60;
/** A token issued by an instance whose clock runs ahead is accepted up to this much "from the future". */
const CLOCK_SKEW_SECONDS = 60;
/** Where the verification certificate carries the token: a URI subject alternative name (NervesHub's form). */
export const VERIFICATION_URI_PREFIX = 'urn:nerveshub:verify:';

const VERSION = '1';
const TOKEN = /^1\.([1-9]\d{0,18})\.(\d{1,12})\.([A-Za-z0-9_-]{43})$/;

export type TokenCheck = 'valid' | 'invalid' | 'expired' | 'other_org';

/**
 * Proof-of-possession tokens for CA registration: `1.<org id>.<issued at, unix seconds>.<mac>`, where the mac is
 * HMAC-SHA256 (base64url) of the rest under the server key's `sign-ca-verification-tokens` sub-key. Stateless:
 * any instance sharing the server key checks any other's tokens; nothing is stored.
 */
@Injectable()
export class VerificationTokens {
  constructor(private readonly serverKey: ServerKeyService) {}

  issue(orgId: string, now = new Date()): string {
    const body = `${VERSION}.${orgId}.${Math.floor(now.getTime() / 1000)}`;
    return `${body}.${this.mac(body)}`;
  }

  /** Whether `token` was issued by this server for `orgId` within the last hour. */
  check(token: string, orgId: string, now = new Date()): TokenCheck {
    const match = TOKEN.exec(token);
    if (!match) return 'invalid';
    const body = token.slice(0, token.lastIndexOf('.'));
    const expected = Buffer.from(this.mac(body), 'ascii');
    if (!timingSafeEqual(expected, Buffer.from(match[3], 'ascii'))) return 'invalid';
    if (match[1] !== orgId) return 'other_org';
    const age = Math.floor(now.getTime() / 1000) - Number(match[2]);
    if (age < -CLOCK_SKEW_SECONDS || age > VERIFICATION_TOKEN_TTL_SECONDS) return 'expired';
    return 'valid';
  }

  private mac(body: string): string {
    return createHmac('sha256', this.serverKey.subkey('sign-ca-verification-tokens'))
      .update(body)
      .digest('base64url');
  }
}
