import { Injectable } from '@nestjs/common';
import { DomainError } from '../common/errors/domain-error';
import { FixedWindowLimiter } from '../common/http/rate-limiter';
import { UsersService } from '../users/users.service';
import type { LoginDto, LoginResultView } from './dto/login.dto';
import { dummyPasswordHash, verifyPassword } from './password-hasher';
import { TokensService } from './tokens.service';

@Injectable()
export class AuthService {
  // Login is strict: per source address and per account, whichever is hit first.
  private readonly perAddress = new FixedWindowLimiter(30, 60_000);
  private readonly perAccount = new FixedWindowLimiter(10, 60_000);

  constructor(
    private readonly users: UsersService,
    private readonly tokens: TokensService,
  ) {}

  async login(input: LoginDto, sourceAddress: string): Promise<{ data: LoginResultView }> {
    this.perAddress.hit(sourceAddress);
    this.perAccount.hit(input.email.toLowerCase());
    const user = await this.users.findByEmail(input.email);
    const ok = await verifyPassword(input.password, user ? user.passwordHash : await dummyPasswordHash());
    if (!user || !ok) throw DomainError.unauthenticated();
    const token = await this.tokens.create(user.id, { note: input.note ?? 'login' });
    return { data: { username: user.username, email: user.email, name: user.name, token } };
  }
}
