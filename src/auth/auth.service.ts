import { Inject, Injectable } from '@nestjs/common';
import { DomainError } from '../common/errors/domain-error';
import { bucketKey, RateLimiter } from '../common/http/rate-limiter';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { UsersService } from '../users/users.service';
import type { LoginDto, LoginResultView } from './dto/login.dto';
import { dummyPasswordHash, verifyPassword } from './password-hasher';
import { TokensService } from './tokens.service';

const TOO_MANY_LOGINS = 'too many login attempts, try again later';

@Injectable()
export class AuthService {
  constructor(
    private readonly users: UsersService,
    private readonly tokens: TokensService,
    private readonly limiter: RateLimiter,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async login(input: LoginDto, sourceAddress: string): Promise<{ data: LoginResultView }> {
    // Login is strict: per account, and per source address (three times as many), whichever is hit first.
    const limit = this.config.rateLimitLoginPerMin;
    await this.limiter.consume(bucketKey('login-addr', sourceAddress), limit * 3, TOO_MANY_LOGINS);
    await this.limiter.consume(bucketKey('login-acct', input.email.toLowerCase()), limit, TOO_MANY_LOGINS);
    const user = await this.users.findByEmail(input.email);
    const ok = await verifyPassword(input.password, user ? user.passwordHash : await dummyPasswordHash());
    if (!user || !ok) throw DomainError.unauthenticated();
    const token = await this.tokens.create(user.id, { note: input.note ?? 'login' });
    return { data: { username: user.username, email: user.email, name: user.name, token } };
  }
}
