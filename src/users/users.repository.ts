import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { Queryable, Tx } from '../database/transactions';
import { User } from './user.entity';

/** A user as other features read it (members, iroh owners): id, email and display name. */
export interface UserSummary {
  id: string;
  email: string;
  name: string;
}

/** The `users` table. Emails are given normalised (see `normaliseEmail`). */
@Injectable()
export class UsersRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  insert(user: Pick<User, 'email' | 'username' | 'name' | 'passwordHash'>, tx?: Tx): Promise<User> {
    const repo = (tx ?? this.db).getRepository(User);
    return repo.save(repo.create(user));
  }

  findByEmail(email: string): Promise<User | null> {
    return this.db.getRepository(User).findOneBy({ email });
  }

  async findSummaryByEmail(email: string, tx: Queryable = this.db): Promise<UserSummary | null> {
    const users: UserSummary[] = await tx.query(`SELECT id, email, name FROM users WHERE email = $1`, [
      email,
    ]);
    return users[0] ?? null;
  }

  /**
   * Deletes the users with these (normalised) emails; their tokens and memberships go with them, what they did
   * elsewhere stays without them (`fleethub demo` undoing a failed seed). Answers how many.
   */
  async deleteByEmails(emails: readonly string[], tx: Queryable): Promise<number> {
    const [, deleted] = await tx.query<[unknown, number]>(`DELETE FROM users WHERE email = ANY($1)`, [
      emails,
    ]);
    return deleted;
  }
}
