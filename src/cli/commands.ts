import { Command, Option, SubCommand } from 'nest-commander';
import { TOKEN_RENDERINGS, type TokenRendering } from '../auth/token-rendering';
import type { TokenScope } from '../auth/token-scope';
import { TokensService } from '../auth/tokens.service';
import { isRole } from '../common/auth/roles';
import { DomainError } from '../common/errors/domain-error';
import { MembersService } from '../members/members.service';
import { OrgsService } from '../orgs/orgs.service';
import { SigningKeysService } from '../signing-keys/signing-keys.service';
import { UsersService } from '../users/users.service';
import { CliCommand, UsageError } from './cli-command';

@Command({ name: 'migrate', description: 'Apply pending database migrations (also done at every start)' })
export class MigrateCommand extends CliCommand<object> {
  protected async execute(): Promise<void> {
    // The CLI applies migrations before any command runs (see cli/main.ts); this reports the result.
    this.print('database schema is up to date');
  }
}

interface UsersCreateOptions {
  email?: string;
  username?: string;
  name?: string;
  password?: string;
}

@SubCommand({ name: 'create', description: 'Create a user account' })
export class UsersCreateCommand extends CliCommand<UsersCreateOptions> {
  constructor(private readonly users: UsersService) {
    super();
  }

  protected async execute(o: UsersCreateOptions): Promise<void> {
    const user = await this.users.create({
      email: this.required(o.email, '--email'),
      username: this.required(o.username, '--username'),
      name: o.name,
      password: o.password,
    });
    this.print(`created user ${user.username} <${user.email}>`);
  }

  @Option({ flags: '--email <email>', description: 'Email address (unique)' })
  parseEmail(value: string): string {
    return value;
  }
  @Option({ flags: '--username <username>', description: 'User name (unique)' })
  parseUsername(value: string): string {
    return value;
  }
  @Option({ flags: '--name <name>', description: 'Display name (default: the user name)' })
  parseName(value: string): string {
    return value;
  }
  @Option({
    flags: '--password <password>',
    description: 'Password for POST /api/users/auth (at least 8 characters)',
  })
  parsePassword(value: string): string {
    return value;
  }
}

@Command({ name: 'users', description: 'Manage users', subCommands: [UsersCreateCommand] })
export class UsersCommand extends CliCommand<object> {
  protected async execute(): Promise<void> {
    throw new UsageError('usage: fleethub users create --email E --username U [--name N] [--password P]');
  }
}

interface OrgsCreateOptions {
  name?: string;
  owner?: string;
}

@SubCommand({ name: 'create', description: 'Create an organization with an admin' })
export class OrgsCreateCommand extends CliCommand<OrgsCreateOptions> {
  constructor(
    private readonly orgs: OrgsService,
    private readonly users: UsersService,
  ) {
    super();
  }

  protected async execute(o: OrgsCreateOptions): Promise<void> {
    const name = this.required(o.name, '--name');
    const owner = await this.users.findByEmail(this.required(o.owner, '--owner'));
    if (!owner) throw DomainError.invalidField('owner', 'does not belong to a registered user');
    await this.orgs.create(owner.id, name);
    this.print(`created organization ${name.trim()} (admin: ${owner.email})`);
  }

  @Option({ flags: '--name <name>', description: 'Organization name' })
  parseName(value: string): string {
    return value;
  }
  @Option({ flags: '--owner <email>', description: 'Email of the user who becomes its admin' })
  parseOwner(value: string): string {
    return value;
  }
}

interface AddMemberOptions {
  org?: string;
  email?: string;
  role?: string;
}

@SubCommand({ name: 'add-member', description: 'Add a user to an organization with a role' })
export class OrgsAddMemberCommand extends CliCommand<AddMemberOptions> {
  constructor(private readonly members: MembersService) {
    super();
  }

  protected async execute(o: AddMemberOptions): Promise<void> {
    const org = this.required(o.org, '--org');
    const email = this.required(o.email, '--email');
    const role = this.required(o.role, '--role');
    if (!isRole(role)) throw new UsageError('--role must be view, manage or admin');
    await this.members.addByOrgName(org, email, role);
    this.print(`added ${email} to ${org} as ${role}`);
  }

  @Option({ flags: '--org <name>', description: 'Organization name' })
  parseOrg(value: string): string {
    return value;
  }
  @Option({ flags: '--email <email>', description: 'Email of a registered user' })
  parseEmail(value: string): string {
    return value;
  }
  @Option({ flags: '--role <role>', description: 'view, manage or admin' })
  parseRole(value: string): string {
    return value;
  }
}

@Command({
  name: 'orgs',
  description: 'Manage organizations',
  subCommands: [OrgsCreateCommand, OrgsAddMemberCommand],
})
export class OrgsCommand extends CliCommand<object> {
  protected async execute(): Promise<void> {
    throw new UsageError('usage: fleethub orgs create|add-member ...');
  }
}

interface TokensCreateOptions {
  email?: string;
  note?: string;
  scope?: string;
  expiresInDays?: string;
  rendering?: string;
}

@SubCommand({
  name: 'create',
  description: 'Create a personal access token (printed alone on the last line)',
})
export class TokensCreateCommand extends CliCommand<TokensCreateOptions> {
  constructor(
    private readonly tokens: TokensService,
    private readonly users: UsersService,
  ) {
    super();
  }

  protected async execute(o: TokensCreateOptions): Promise<void> {
    const email = this.required(o.email, '--email');
    const scope = (o.scope ?? 'all') as TokenScope;
    if (scope !== 'all' && scope !== 'read') throw new UsageError('--scope must be all or read');
    const rendering = (o.rendering ?? 'fleethub') as TokenRendering;
    if (!TOKEN_RENDERINGS.includes(rendering))
      throw new UsageError('--rendering must be fleethub or nerveshub');
    let expiresAt: Date | null = null;
    if (o.expiresInDays !== undefined) {
      if (!/^\d{1,5}$/.test(o.expiresInDays) || Number(o.expiresInDays) < 1) {
        throw new UsageError('--expires-in-days must be a whole number of days from 1 to 99999');
      }
      expiresAt = new Date(Date.now() + Number(o.expiresInDays) * 86_400_000);
    }
    const user = await this.users.findByEmail(email);
    if (!user) throw DomainError.invalidField('email', 'does not belong to a registered user');
    const token = await this.tokens.create(user.id, { note: o.note ?? null, scope, expiresAt, rendering });
    const expiry = expiresAt ? `, expires ${expiresAt.toISOString()}` : '';
    process.stderr.write(
      `token for ${user.email} (scope ${scope}, rendering ${rendering}${expiry}); it is shown only once:\n`,
    );
    this.print(token);
  }

  @Option({ flags: '--email <email>', description: 'Owner of the token' })
  parseEmail(value: string): string {
    return value;
  }
  @Option({ flags: '--note <note>', description: 'A note to recognise the token by' })
  parseNote(value: string): string {
    return value;
  }
  @Option({ flags: '--scope <scope>', description: 'all (default) or read' })
  parseScope(value: string): string {
    return value;
  }
  @Option({ flags: '--expires-in-days <days>', description: 'Expire after this many days' })
  parseExpiresInDays(value: string): string {
    return value;
  }
  @Option({
    flags: '--rendering <rendering>',
    description: "fleethub (default) or nerveshub: NervesHub's shapes (tags as lists), for NervesHub's CLI",
  })
  parseRendering(value: string): string {
    return value;
  }
}

interface TokensRevokeOptions {
  token?: string;
}

@SubCommand({ name: 'revoke', description: 'Revoke a personal access token' })
export class TokensRevokeCommand extends CliCommand<TokensRevokeOptions> {
  constructor(private readonly tokens: TokensService) {
    super();
  }

  protected async execute(o: TokensRevokeOptions): Promise<void> {
    const revoked = await this.tokens.revoke(this.required(o.token, '--token'));
    if (!revoked) throw new Error('no active token matches');
    this.print('token revoked');
  }

  @Option({ flags: '--token <token>', description: 'The token to revoke (nhu_...)' })
  parseToken(value: string): string {
    return value;
  }
}

@Command({
  name: 'tokens',
  description: 'Manage access tokens',
  subCommands: [TokensCreateCommand, TokensRevokeCommand],
})
export class TokensCommand extends CliCommand<object> {
  protected async execute(): Promise<void> {
    throw new UsageError('usage: fleethub tokens create|revoke ...');
  }
}

interface KeysAddOptions {
  org?: string;
  name?: string;
  key?: string;
}

@SubCommand({ name: 'add', description: 'Add a firmware signing key (fwup public key) to an organization' })
export class KeysAddCommand extends CliCommand<KeysAddOptions> {
  constructor(private readonly keys: SigningKeysService) {
    super();
  }

  protected async execute(o: KeysAddOptions): Promise<void> {
    const key = await this.keys.createByOrgName(
      this.required(o.org, '--org'),
      this.required(o.name, '--name'),
      this.required(o.key, '--key'),
    );
    this.print(`added signing key ${key.name} to ${o.org}`);
  }

  @Option({ flags: '--org <name>', description: 'Organization name' })
  parseOrg(value: string): string {
    return value;
  }
  @Option({ flags: '--name <name>', description: 'A name for the key, unique in the organization' })
  parseName(value: string): string {
    return value;
  }
  @Option({
    flags: '--key <base64>',
    description: 'The fwup public key (44 base64 characters, fwup-key.pub)',
  })
  parseKey(value: string): string {
    return value;
  }
}

@Command({ name: 'keys', description: 'Manage firmware signing keys', subCommands: [KeysAddCommand] })
export class KeysCommand extends CliCommand<object> {
  protected async execute(): Promise<void> {
    throw new UsageError('usage: fleethub keys add --org O --name N --key BASE64');
  }
}

/** The groups: run without a subcommand, each only prints its usage (no service, no database). */
export const GROUP_COMMANDS = [KeysCommand, UsersCommand, OrgsCommand, TokensCommand];

export const CLI_COMMANDS = [
  KeysCommand,
  KeysAddCommand,
  MigrateCommand,
  UsersCommand,
  UsersCreateCommand,
  OrgsCommand,
  OrgsCreateCommand,
  OrgsAddMemberCommand,
  TokensCommand,
  TokensCreateCommand,
  TokensRevokeCommand,
];
