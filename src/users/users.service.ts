import { Injectable } from '@nestjs/common';
import { hashPassword } from '../auth/password-hasher';
import type { Actor } from '../common/auth/actor';
import { DomainError, type FieldErrors } from '../common/errors/domain-error';
import { ALREADY_TAKEN } from '../common/errors/messages';
import { isUniqueViolation } from '../common/errors/postgres-errors';
import type { Tx } from '../database/transactions';
import type { UserView } from './dto/user.view';
import type { UserRecord } from './user-record';
import { EMAIL_PATTERN, USERNAME_PATTERN, normaliseEmail } from './user-fields';
import { type UserSummary, UsersRepository } from './users.repository';

export interface NewUser {
  email: string;
  username: string;
  name?: string;
  password?: string;
}

@Injectable()
export class UsersService {
  constructor(private readonly users: UsersRepository) {}

  me(actor: Actor): { data: UserView } {
    return { data: { username: actor.username, email: actor.email, name: actor.name } };
  }

  /** A new user (inside `tx` when given: the account exists only if that transaction commits). */
  async create(input: NewUser, tx?: Tx): Promise<UserRecord> {
    const email = normaliseEmail(input.email);
    const username = input.username.trim();
    const name = input.name?.trim() || username;
    const problems: FieldErrors = {};
    if (!EMAIL_PATTERN.test(email) || email.length > 320) problems.email = ['is not a valid email address'];
    if (!USERNAME_PATTERN.test(username)) {
      problems.username = ['must be 1-64 characters: letters, digits, "_", "." or "-"'];
    }
    if (name.length > 255) problems.name = ['should be at most 255 character(s)'];
    if (input.password !== undefined && input.password.length < 8) {
      problems.password = ['should be at least 8 character(s)'];
    }
    if (Object.keys(problems).length > 0) throw DomainError.invalid(problems);

    const passwordHash = input.password === undefined ? null : await hashPassword(input.password);
    try {
      return await this.users.insert({ email, username, name, passwordHash }, tx);
    } catch (err) {
      if (isUniqueViolation(err)) {
        const taken = await this.users.findByEmail(email);
        throw DomainError.invalidField(taken ? 'email' : 'username', ALREADY_TAKEN);
      }
      throw err;
    }
  }

  findByEmail(email: string): Promise<UserRecord | null> {
    return this.users.findByEmail(normaliseEmail(email));
  }

  /** The id, email and name of the user with this email (any case, surrounding spaces ignored), or null. */
  findSummaryByEmail(email: string): Promise<UserSummary | null> {
    return this.users.findSummaryByEmail(normaliseEmail(email));
  }
}
