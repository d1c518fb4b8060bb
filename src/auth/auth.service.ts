import { Inject, Injectable } from '@nestjs/common';
import { DomainError } from '../common/errors/domain-error';
import { bucketKey, RateLimiter } from '../common/http/rate-limiter';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { UsersService } from '../users/users.service';
import type { LoginDto, LoginResultView } from './dto/login.dto';
import { dummyPasswordHash, verifyPassword } from './password-hasher';
import type { TokenRendering } from './token-rendering';
import { TokensService } from './tokens.service';
import { TwoFactorService } from './two-factor.service';
import type { UserRecord } from '../users/user-record';

const TOO_MANY_LOGINS = 'too many login attempts, try again later';

@Injectable()
export class AuthService {
  constructor(
    private readonly users: UsersService,
    private readonly tokens: TokensService,
    private readonly twoFactor: TwoFactorService,
    private readonly limiter: RateLimiter,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /**
   * A new token for the credentials' user. `rendering`: `nerveshub` for NervesHub's own sign-in route
   * (`POST /api/users/login`), which only NervesHub's clients call.
   */
  async login(
    input: LoginDto,
    sourceAddress: string,
    rendering: TokenRendering = 'fleethub',
  ): Promise<{ data: LoginResultView }> {
    const user = await this.verifyCredentials(input.email, input.password, sourceAddress, input.code);
    const token = await this.tokens.create(user.id, { note: input.note ?? 'login', rendering });
    return { data: { username: user.username, email: user.email, name: user.name, token } };
  }

  /**
   * The user these credentials belong to, under the login rate limits; the contract's 401 otherwise. A user with
   * two-factor sign-in also needs `code` (422 naming `code` when it is missing or wrong, after a right password).
   */
  async verifyCredentials(
    email: string,
    password: string,
    sourceAddress: string,
    code?: string | null,
  ): Promise<UserRecord> {
    // Login is strict: per account, and per source address (three times as many), whichever is hit first.
    const limit = this.config.rateLimitLoginPerMin;
    await this.limiter.consume(bucketKey('login-addr', sourceAddress), limit * 3, TOO_MANY_LOGINS);
    await this.limiter.consume(bucketKey('login-acct', email.toLowerCase()), limit, TOO_MANY_LOGINS);
    const user = await this.users.findByEmail(email);
    const ok = await verifyPassword(password, user ? user.passwordHash : await dummyPasswordHash());
    if (!user || !ok) throw DomainError.unauthenticated();
    await this.twoFactor.checkSignIn(user, code);
    return user;
  }
}
