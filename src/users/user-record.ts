import type { User } from './user.entity';

/**
 * A user as other features see it (UsersService): the account's fields without the persistence class. Features
 * outside users depend on this, never on the entity.
 */
export type UserRecord = Pick<
  User,
  'id' | 'email' | 'username' | 'name' | 'passwordHash' | 'insertedAt' | 'updatedAt'
>;
