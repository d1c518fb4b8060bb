import { createHash, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { AuthService } from '../auth/auth.service';
import { TokensService } from '../auth/tokens.service';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-codes';
import { bucketKey, RateLimiter } from '../common/http/rate-limiter';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { Transactions } from '../database/transactions';
import { CliSessionsRepository } from './cli-sessions.repository';
import type { CliSessionStatusView, CliSessionView, StartCliSessionDto } from './dto/cli-session.dto';

/** How long the user has to approve, and the CLI to collect its token. */
export const CLI_SESSION_LIFETIME_SEC = 10 * 60;
/** Submissions of the browser form per session, whatever their outcome: 5 guesses of 900,000 codes at most. */
export const CLI_SESSION_MAX_ATTEMPTS = 5;
const SESSION_TOKEN = /^[A-Za-z0-9_-]{43}$/;
const DEFAULT_NOTE = 'nerves_hub_cli';

/** The browser page's state after a visit or a submission (rendered by cli-session-page.ts). */
export type CliSessionPageModel =
  | { kind: 'form'; token: string; problem?: FormProblem; email?: string; attemptsLeft?: number }
  | { kind: 'invalid' }
  | { kind: 'approved' }
  | { kind: 'denied' };

export type FormProblem = 'csrf' | 'code' | 'credentials' | 'rate_limited' | 'incomplete' | 'two_factor';

/** What the page's form posts (application/x-www-form-urlencoded, parsed as is). */
export type CliSessionForm = Record<string, unknown> | undefined;

const field = (form: CliSessionForm, name: string): string => {
  const value = form?.[name];
  return typeof value === 'string' ? value : '';
};

const hashOf = (token: string) => createHash('sha256').update(token).digest();

/**
 * NervesHub's browser sign-in for its CLI: the CLI starts a session and polls it; the user opens its page,
 * types the confirmation code the CLI shows, signs in with email and password and approves; the next poll
 * collects a new API token, once. Sessions live in PostgreSQL, so any instance answers any step.
 */
@Injectable()
export class CliSessionsService {
  private readonly logger = new Logger(CliSessionsService.name);

  constructor(
    private readonly sessions: CliSessionsRepository,
    private readonly auth: AuthService,
    private readonly tokens: TokensService,
    private readonly limiter: RateLimiter,
    private readonly transactions: Transactions,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async start(input: StartCliSessionDto, sourceAddress: string): Promise<{ data: CliSessionView }> {
    await this.limiter.consume(
      bucketKey('cli-session-addr', sourceAddress),
      this.config.rateLimitLoginPerMin * 3,
      'too many sign-in sessions from this address, try again later',
    );
    await this.sessions.deleteExpired();
    const token = randomBytes(32).toString('base64url');
    const code = String(randomInt(100_000, 1_000_000));
    const note = input.note?.trim().replace(/\s+/g, ' ') || DEFAULT_NOTE;
    await this.sessions.insert(hashOf(token), code, note, CLI_SESSION_LIFETIME_SEC);
    return { data: { token, url: `${this.config.publicUrl}/auth/cli/${token}`, confirmation_code: code } };
  }

  /** `waiting`, or `ready` with the new token exactly once; anything else (unknown, expired, used) a 404. */
  async check(token: string): Promise<{ data: CliSessionStatusView }> {
    if (!SESSION_TOKEN.test(token)) throw DomainError.notFound();
    const hash = hashOf(token);
    const session = await this.sessions.findLive(hash);
    if (session?.status === 'waiting') return { data: { status: 'waiting' } };
    if (session?.status !== 'approved') throw DomainError.notFound();
    const userToken = await this.transactions.run(async (tx) => {
      const claimed = await this.sessions.claim(hash, tx);
      if (!claimed) return null;
      return this.tokens.create(claimed.user_id, { note: claimed.note, rendering: 'nerveshub' }, tx);
    });
    if (userToken === null) throw DomainError.notFound();
    return { data: { status: 'ready', user_token: userToken } };
  }

  /** The page at the session's URL: the form while it waits, a constant "invalid" page otherwise. */
  async page(token: string): Promise<CliSessionPageModel> {
    if (!SESSION_TOKEN.test(token)) return { kind: 'invalid' };
    const session = await this.sessions.findLive(hashOf(token));
    return session?.status === 'waiting' ? { kind: 'form', token } : { kind: 'invalid' };
  }

  /**
   * A submission of the page's form: `decision=deny` closes the session; `approve` checks the confirmation
   * code and the credentials. Each submission with a valid CSRF token uses one of the session's attempts
   * before anything is compared, so that concurrent guesses cannot share one.
   */
  async submit(
    token: string,
    form: CliSessionForm,
    csrfPassed: boolean,
    sourceAddress: string,
  ): Promise<CliSessionPageModel> {
    if (!SESSION_TOKEN.test(token)) return { kind: 'invalid' };
    const email = field(form, 'email').trim();
    if (!csrfPassed) {
      const page = await this.page(token);
      return page.kind === 'form' ? { ...page, problem: 'csrf', email } : page;
    }
    const hash = hashOf(token);
    const session = await this.sessions.useAttempt(hash, CLI_SESSION_MAX_ATTEMPTS);
    if (!session) return { kind: 'invalid' };
    if (field(form, 'decision') === 'deny') {
      await this.sessions.close(session.id);
      return { kind: 'denied' };
    }
    const attemptsLeft = CLI_SESSION_MAX_ATTEMPTS - session.attempts;
    const failed = async (problem: FormProblem): Promise<CliSessionPageModel> => {
      await this.sessions.closeIfExhausted(session.id, CLI_SESSION_MAX_ATTEMPTS);
      if (attemptsLeft <= 0) return { kind: 'invalid' };
      return { kind: 'form', token, problem, email, attemptsLeft };
    };
    const code = field(form, 'confirmation_code').replace(/\s+/g, '');
    const password = field(form, 'password');
    if (email === '' || password === '' || code === '') return failed('incomplete');
    if (!sameCode(code, session.confirmation_code)) return failed('code');
    let userId: string;
    try {
      const twoFactorCode = field(form, 'two_factor_code');
      userId = (await this.auth.verifyCredentials(email, password, sourceAddress, twoFactorCode)).id;
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      if (err.code === ErrorCode.RATE_LIMITED) return failed('rate_limited');
      return failed(err.code === ErrorCode.VALIDATION_FAILED ? 'two_factor' : 'credentials');
    }
    if (!(await this.sessions.approve(session.id, userId))) return { kind: 'invalid' };
    this.logger.log({ userId }, 'CLI sign-in approved');
    return { kind: 'approved' };
  }
}

function sameCode(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
