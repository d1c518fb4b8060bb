import { Logger } from '@nestjs/common';
import {
  actor,
  domainError,
  expectNotFound,
  fake,
  fakeTransactions,
  fakeTx,
} from '../../test/support/unit-fakes';
import { ErrorCode } from '../common/errors/error-codes';
import type { TokenRow } from './access.queries';
import { TokenCache } from './token-cache';
import { generateUserToken, hashToken } from './token-codec';
import type { ListedTokenRow } from './tokens.repository';
import type { TokensRepository } from './tokens.repository';
import { TokensService } from './tokens.service';

const listed: ListedTokenRow = {
  id: '11',
  note: null,
  scope: 'all',
  rendering: 'fleethub',
  expires_at: null,
  inserted_at: new Date('2026-01-01T00:00:00Z'),
  last_used_at: null,
  last_used_address: null,
};

const tokenRow: TokenRow = {
  token_id: '11',
  scope: 'read',
  rendering: 'fleethub',
  expires_at: null,
  last_used_at: null,
  inserted_at: new Date('2026-01-01T00:00:00Z'),
  user_id: '7',
  email: 'ada@example.com',
  username: 'ada',
  name: 'Ada',
};

function setup() {
  const tokens = {
    insert: jest.fn(async () => listed),
    findForRevocation: jest.fn(async (): Promise<{ id: string; revoked_at: Date | null } | undefined> => ({
      id: '11',
      revoked_at: null,
    })),
    markRevoked: jest.fn(async () => undefined),
    findLiveByHash: jest.fn(async (): Promise<TokenRow | undefined> => tokenRow),
    touchLastUsed: jest.fn(async () => undefined),
  };
  const revocation = {
    publish: jest.fn(async () => undefined),
    evicted: jest.fn(async (): Promise<number[]> => []),
    cancel: jest.fn(),
  };
  const cache = {
    get: jest.fn((): unknown => undefined),
    startLookup: jest.fn(() => 1),
    put: jest.fn(),
    delete: jest.fn(),
    startRevocation: jest.fn(() => revocation),
    revoke: jest.fn((...args: Parameters<TokenCache['revoke']>): Promise<unknown> =>
      TokenCache.prototype.revoke.apply(cache, args),
    ),
  };
  const transactions = fakeTransactions();
  const service = new TokensService(fake<TokensRepository>(tokens), transactions, fake<TokenCache>(cache));
  return { service, tokens, cache, revocation, transactions };
}

async function expectUnauthenticated(promise: Promise<unknown>): Promise<void> {
  expect((await domainError(promise)).code).toBe(ErrorCode.UNAUTHENTICATED);
}

describe('TokensService: creating', () => {
  it('stores the hash of a fresh token, the note with its blanks collapsed, scope all by default', async () => {
    const { service, tokens } = setup();
    const token = await service.create('7', { note: '  my   laptop\n key ' });
    expect(token).toMatch(/^nhu_/);
    expect(tokens.insert).toHaveBeenCalledWith(
      '7',
      hashToken(token),
      'my laptop key',
      'all',
      null,
      'fleethub',
      undefined,
    );
  });

  it('a blank note is no note', async () => {
    const { service, tokens } = setup();
    await service.create('7', { note: '   ' });
    expect(tokens.insert).toHaveBeenCalledWith(
      '7',
      expect.any(Buffer),
      null,
      'all',
      null,
      'fleethub',
      undefined,
    );
  });

  it('for a user: the scope and expiry asked, the token shown once, Location by id', async () => {
    const { service, tokens } = setup();
    const created = await service.createForUser(actor, {
      scope: 'read',
      expires_at: ' 2030-01-02T03:04:05Z ',
    });
    expect(tokens.insert).toHaveBeenCalledWith(
      '7',
      expect.any(Buffer),
      null,
      'read',
      new Date('2030-01-02T03:04:05Z'),
      'fleethub',
      undefined,
    );
    expect(created.location).toBe('/api/users/me/tokens/11');
    expect(created.body.data.token).toMatch(/^nhu_/);
  });
});

describe('TokensService: revoking', () => {
  it.each(['abc', '0', '-1', '99999999999999999999'])(
    'an id that is not a bigint (%j) is a 404 without a transaction',
    async (id) => {
      const { service, transactions, cache } = setup();
      await expectNotFound(service.revokeForUser(actor, id));
      expect(transactions.run).not.toHaveBeenCalled();
      expect(cache.startRevocation).not.toHaveBeenCalled();
    },
  );

  it("revokes the caller's token, publishes in the transaction, and waits for every instance", async () => {
    const { service, tokens, revocation } = setup();
    await service.revokeForUser(actor, '11');
    expect(tokens.findForRevocation).toHaveBeenCalledWith({ id: '11', userId: '7' }, fakeTx);
    expect(tokens.markRevoked).toHaveBeenCalledWith('11', fakeTx);
    expect(revocation.publish).toHaveBeenCalledWith(fakeTx, ['11']);
    expect(revocation.evicted).toHaveBeenCalledTimes(1);
    expect(revocation.cancel).not.toHaveBeenCalled();
  });

  it('does not answer before the instances have evicted the token', async () => {
    const { service, revocation } = setup();
    let answer!: (pids: number[]) => void;
    revocation.evicted.mockReturnValue(new Promise<number[]>((resolve) => (answer = resolve)));
    let done = false;
    const revoking = service.revokeForUser(actor, '11').then(() => (done = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(done).toBe(false);
    answer([]);
    await revoking;
    expect(done).toBe(true);
  });

  it('logs the instances that did not confirm, and still succeeds', async () => {
    const { service, revocation } = setup();
    revocation.evicted.mockResolvedValue([4242]);
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    try {
      await service.revokeForUser(actor, '11');
      expect(warn).toHaveBeenCalledWith(
        { listenerPids: [4242] },
        'token revocation not confirmed by every instance',
      );
    } finally {
      warn.mockRestore();
    }
  });

  it("another user's or an unknown token is a 404; the revocation is cancelled, nothing published", async () => {
    const { service, tokens, revocation } = setup();
    tokens.findForRevocation.mockResolvedValue(undefined);
    await expectNotFound(service.revokeForUser(actor, '12'));
    expect(revocation.cancel).toHaveBeenCalledTimes(1);
    expect(revocation.publish).not.toHaveBeenCalled();
    expect(revocation.evicted).not.toHaveBeenCalled();
  });

  it('revoking again is fine: no write, no publication, cancelled', async () => {
    const { service, tokens, revocation } = setup();
    tokens.findForRevocation.mockResolvedValue({ id: '11', revoked_at: new Date() });
    await expect(service.revokeForUser(actor, '11')).resolves.toBeUndefined();
    expect(tokens.markRevoked).not.toHaveBeenCalled();
    expect(revocation.publish).not.toHaveBeenCalled();
    expect(revocation.cancel).toHaveBeenCalledTimes(1);
  });

  it('a failed transaction cancels the revocation and is rethrown', async () => {
    const { service, tokens, revocation } = setup();
    const failure = new Error('db down');
    tokens.markRevoked.mockRejectedValue(failure);
    await expect(service.revokeForUser(actor, '11')).rejects.toBe(failure);
    expect(revocation.cancel).toHaveBeenCalledTimes(1);
    expect(revocation.evicted).not.toHaveBeenCalled();
  });

  it('revoke(token): a token with a bad checksum is false without touching the database', async () => {
    const { service, transactions } = setup();
    await expect(service.revoke('nhu_notARealToken')).resolves.toBe(false);
    expect(transactions.run).not.toHaveBeenCalled();
  });

  it('revoke(token): selects by hash; true only when it revoked', async () => {
    const { service, tokens } = setup();
    const token = generateUserToken();
    await expect(service.revoke(token)).resolves.toBe(true);
    expect(tokens.findForRevocation).toHaveBeenCalledWith({ hash: hashToken(token) }, fakeTx);
    tokens.findForRevocation.mockResolvedValue({ id: '11', revoked_at: new Date() });
    await expect(service.revoke(token)).resolves.toBe(false);
  });
});

describe('TokensService: authenticating', () => {
  it.each([undefined, '', 'Basic abc', ['Bearer x', 'Bearer y']])(
    'no usable Authorization header (%j) is a 401',
    async (header) => {
      const { service, tokens } = setup();
      await expectUnauthenticated(service.authenticate(header));
      expect(tokens.findLiveByHash).not.toHaveBeenCalled();
    },
  );

  it('a token with a bad checksum is a 401 without a query', async () => {
    const { service, tokens } = setup();
    await expectUnauthenticated(
      service.authenticate('Bearer nhu_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'),
    );
    expect(tokens.findLiveByHash).not.toHaveBeenCalled();
  });

  it('a cached token answers without a query', async () => {
    const { service, tokens, cache } = setup();
    cache.get.mockReturnValue(actor);
    await expect(service.authenticate(`token ${generateUserToken()}`)).resolves.toBe(actor);
    expect(tokens.findLiveByHash).not.toHaveBeenCalled();
  });

  it('no live token (unknown, revoked or expired) is a 401, and the key is dropped from the cache', async () => {
    const { service, tokens, cache } = setup();
    tokens.findLiveByHash.mockResolvedValue(undefined);
    const token = generateUserToken();
    await expectUnauthenticated(service.authenticate(`Bearer ${token}`));
    expect(tokens.findLiveByHash).toHaveBeenCalledWith(hashToken(token));
    expect(cache.delete).toHaveBeenCalledWith(hashToken(token).toString('base64'));
    expect(cache.put).not.toHaveBeenCalled();
  });

  it('a live token is the actor, cached with its expiry under the lookup started before the query', async () => {
    const expires = new Date('2030-01-01T00:00:00Z');
    const ctx = setup();
    ctx.tokens.findLiveByHash.mockResolvedValue({ ...tokenRow, expires_at: expires });
    ctx.cache.startLookup.mockReturnValue(17);
    const token = generateUserToken();
    const found = await ctx.service.authenticate(`Bearer ${token}`);
    expect(found).toEqual({
      userId: '7',
      email: 'ada@example.com',
      username: 'ada',
      name: 'Ada',
      tokenId: '11',
      scope: 'read',
      rendering: 'fleethub',
      tokenIssuedAt: Date.parse('2026-01-01T00:00:00Z'),
    });
    expect(ctx.cache.put).toHaveBeenCalledWith(hashToken(token).toString('base64'), 17, found, expires);
  });

  it('writes last_used_at at most once a minute per token', async () => {
    const { service, tokens } = setup();
    tokens.findLiveByHash.mockResolvedValue({ ...tokenRow, last_used_at: new Date(Date.now() - 120_000) });
    await service.authenticate(`Bearer ${generateUserToken()}`, '203.0.113.7');
    await service.authenticate(`Bearer ${generateUserToken()}`, '203.0.113.8');
    expect(tokens.touchLastUsed).toHaveBeenCalledTimes(1);
    expect(tokens.touchLastUsed).toHaveBeenCalledWith('11', '203.0.113.7');
  });

  it('does not write last_used_at when the stored one is less than a minute old', async () => {
    const { service, tokens } = setup();
    tokens.findLiveByHash.mockResolvedValue({ ...tokenRow, last_used_at: new Date(Date.now() - 10_000) });
    await service.authenticate(`Bearer ${generateUserToken()}`);
    expect(tokens.touchLastUsed).not.toHaveBeenCalled();
  });
});
