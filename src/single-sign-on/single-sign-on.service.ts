import { createHash, randomBytes } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { type Client, errors, generators, Issuer } from 'openid-client';
import { BrowserSessionsService } from '../browser-sessions/browser-sessions.service';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-codes';
import { APP_CONFIG, type AppConfig, type OidcConfig } from '../config/config';
import { normaliseEmail, USERNAME_PATTERN } from '../users/user-fields';
import { UsersService } from '../users/users.service';
import { SingleSignOnRepository } from './single-sign-on.repository';

/** Why a single sign-on did not sign anyone in, in words for the page that says so. */
export type SingleSignOnFailure =
  | 'off'
  | 'state'
  | 'provider_refused'
  | 'unverified_answer'
  | 'unverified_email'
  | 'no_account'
  | 'unreachable';

export class SingleSignOnError extends Error {
  constructor(
    readonly reason: SingleSignOnFailure,
    detail?: string,
  ) {
    super(detail ?? reason);
  }
}

export interface CallbackRequest {
  query: Record<string, unknown>;
  /** The `state` the browser's cookie holds (set by start): it must be the callback's. */
  cookieState: string | undefined;
  userAgent: string | null;
  sourceAddress: string;
}

const SCOPE = 'openid email profile';
const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest();

/**
 * OpenID Connect single sign-on (authorization code flow with PKCE), with `openid-client` doing the protocol:
 * discovery, the token request, and the ID token's checks (signature against the provider's keys, issuer,
 * audience, expiry, nonce). A verified email signs in the account linked to the provider's subject, else the
 * account with that email (linked from then on), else, when the operator allows it, a new account. The result is a
 * browser session like a password sign-in's, marked as single sign-on (which stands for the second factor of an
 * organization that requires one).
 */
@Injectable()
export class SingleSignOnService {
  private readonly logger = new Logger(SingleSignOnService.name);
  private readonly config: OidcConfig | null;
  private readonly redirectUri: string;
  private client: Promise<Client> | undefined;

  constructor(
    @Inject(APP_CONFIG) appConfig: AppConfig,
    private readonly rows: SingleSignOnRepository,
    private readonly users: UsersService,
    private readonly sessions: BrowserSessionsService,
  ) {
    this.config = appConfig.oidc;
    this.redirectUri = `${appConfig.publicUrl}/auth/oidc/callback`;
  }

  /** Whether single sign-on is on, and what its button says. */
  status(): { data: { enabled: boolean; name: string | null; start_url: string | null } } {
    return {
      data: {
        enabled: this.config !== null,
        name: this.config?.displayName ?? null,
        start_url: this.config === null ? null : '/auth/oidc/start',
      },
    };
  }

  /** The provider's authorization URL for a new sign-in, and the state the browser keeps in a cookie. */
  async start(): Promise<{ url: string; state: string }> {
    if (this.config === null) throw new SingleSignOnError('off');
    const client = await this.providerClient();
    const state = generators.state();
    const nonce = generators.nonce();
    const codeVerifier = generators.codeVerifier();
    await this.rows.insertSignIn(sha256(state), nonce, codeVerifier);
    const url = client.authorizationUrl({
      scope: SCOPE,
      state,
      nonce,
      code_challenge: generators.codeChallenge(codeVerifier),
      code_challenge_method: 'S256',
    });
    return { url, state };
  }

  /** The provider's answer: a browser session's secret when it signs someone in, else a SingleSignOnError. */
  async callback(request: CallbackRequest): Promise<{ secret: string }> {
    if (this.config === null) throw new SingleSignOnError('off');
    const state = typeof request.query.state === 'string' ? request.query.state : undefined;
    // The state is used once (taken from the table), and only by the browser that started the sign-in.
    const pending = state === undefined ? undefined : await this.rows.takeSignIn(sha256(state));
    if (state === undefined || pending === undefined || request.cookieState !== state) {
      throw new SingleSignOnError('state');
    }
    if (typeof request.query.error === 'string') {
      throw new SingleSignOnError('provider_refused', request.query.error);
    }
    const client = await this.providerClient();
    const params = client.callbackParams(
      `${this.redirectUri}?${new URLSearchParams(stringEntries(request.query)).toString()}`,
    );
    let claims: Record<string, unknown>;
    try {
      const tokens = await client.callback(this.redirectUri, params, {
        state,
        nonce: pending.nonce,
        code_verifier: pending.code_verifier,
        response_type: 'code',
      });
      claims = tokens.claims();
      // A provider that follows the specification to the letter releases scope claims (email) from the
      // userinfo endpoint, not in the ID token; openid-client checks that its subject is the ID token's.
      if (claims.email === undefined && tokens.access_token !== undefined) {
        const info = await client.userinfo(tokens);
        claims = {
          ...claims,
          email: info.email,
          email_verified: info.email_verified,
          name: info.name ?? claims.name,
        };
      }
    } catch (err) {
      if (err instanceof errors.OPError) throw new SingleSignOnError('provider_refused', err.message);
      if (err instanceof errors.RPError) {
        // What failed (signature, issuer, audience, expiry, nonce) is for the operator's log, not the page.
        this.logger.warn({ reason: err.message }, 'single sign-on: the provider answer failed verification');
        throw new SingleSignOnError('unverified_answer', err.message);
      }
      throw new SingleSignOnError('unreachable', err instanceof Error ? err.message : String(err));
    }
    const userId = await this.userFor(claims);
    const { secret } = await this.sessions.open(
      { id: userId },
      { userAgent: request.userAgent, sourceAddress: request.sourceAddress },
      'oidc',
    );
    return { secret };
  }

  /** The account these verified claims sign in to: linked, matched by verified email, or created. */
  private async userFor(claims: Record<string, unknown>): Promise<string> {
    const issuer = String(claims.iss);
    const subject = String(claims.sub);
    const linked = await this.rows.findLinkedUserId(issuer, subject);
    if (linked !== undefined) return linked;
    const email = typeof claims.email === 'string' ? normaliseEmail(claims.email) : '';
    if (email === '' || claims.email_verified !== true) throw new SingleSignOnError('unverified_email');
    const existing = await this.users.findByEmail(email);
    let userId = existing?.id;
    if (userId === undefined) {
      if (!this.config!.createUsers) throw new SingleSignOnError('no_account', email);
      userId = await this.createUser(email, typeof claims.name === 'string' ? claims.name : null);
    }
    await this.rows.link(userId, issuer, subject, email);
    this.logger.log({ userId, issuer }, 'single sign-on linked an account');
    return userId;
  }

  /** A new account for a verified email: a username from its local part (a suffix if taken), no password. */
  private async createUser(email: string, name: string | null): Promise<string> {
    const base =
      email
        .split('@')[0]
        .replace(/[^A-Za-z0-9_.-]/g, '')
        .slice(0, 48) || 'user';
    for (let attempt = 0; attempt < 5; attempt++) {
      const username = attempt === 0 ? base : `${base}-${randomBytes(3).toString('hex')}`;
      if (!USERNAME_PATTERN.test(username)) continue;
      try {
        return (await this.users.create({ email, username, name: name?.slice(0, 255) ?? username })).id;
      } catch (err) {
        // A username taken by another account: try a suffix. The email taken (a race): sign that account in.
        if (!(err instanceof DomainError) || err.code !== ErrorCode.VALIDATION_FAILED) throw err;
        const raced = await this.users.findByEmail(email);
        if (raced) return raced.id;
      }
    }
    throw new SingleSignOnError('no_account', email);
  }

  /** The provider's client, from its discovery document (fetched once; again after a failure). */
  private providerClient(): Promise<Client> {
    const config = this.config!;
    this.client ??= Issuer.discover(config.issuer).then(
      (issuer) =>
        new issuer.Client({
          client_id: config.clientId,
          client_secret: config.clientSecret,
          redirect_uris: [this.redirectUri],
          response_types: ['code'],
        }),
      (err: unknown) => {
        this.client = undefined;
        throw new SingleSignOnError('unreachable', err instanceof Error ? err.message : String(err));
      },
    );
    return this.client;
  }
}

function stringEntries(query: Record<string, unknown>): [string, string][] {
  return Object.entries(query).filter((entry): entry is [string, string] => typeof entry[1] === 'string');
}
