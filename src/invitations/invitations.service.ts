import { createHash, createHmac, randomBytes } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { AuditService } from '../audit/audit.service';
import { AuthService } from '../auth/auth.service';
import type { OrgAccess } from '../common/auth/actor';
import type { Role } from '../common/auth/roles';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-codes';
import { Created, pathSegment } from '../common/http/created';
import { bucketKey, RateLimiter } from '../common/http/rate-limiter';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { Transactions } from '../database/transactions';
import { ServerKeyService } from '../device-auth/server-key.service';
import { Mailer } from '../mail/mailer';
import type { MemberView } from '../members/dto/member.dto';
import { MembersService } from '../members/members.service';
import { MembershipsRepository } from '../orgs/memberships.repository';
import { EMAIL_PATTERN, normaliseEmail } from '../users/user-fields';
import { UsersService } from '../users/users.service';
import type { InvitationView } from './dto/invitation.dto';
import { InvitationsRepository, type LiveInvitationRow } from './invitations.repository';

/** As NervesHub: an invitation is good for 48 hours. */
export const INVITATION_LIFETIME_SEC = 48 * 3600;
const LINK_TOKEN = /^[A-Za-z0-9_-]{43}$/;

export type InvitationProblem = 'csrf' | 'credentials' | 'rate_limited' | 'fields' | 'password_mismatch';

/** The invitation page's state (rendered by invitation-page.ts). */
export type InvitationPageModel =
  | {
      kind: 'form';
      token: string;
      orgName: string;
      email: string;
      role: Role;
      /** The email has an account by now: the form asks for its password only. */
      hasAccount: boolean;
      problem?: InvitationProblem;
      fieldErrors?: Record<string, string[]>;
      values?: { name: string; username: string };
    }
  | { kind: 'invalid' }
  | { kind: 'accepted'; orgName: string; email: string };

export type InvitationForm = Record<string, unknown> | undefined;

const field = (form: InvitationForm, name: string): string => {
  const value = form?.[name];
  return typeof value === 'string' ? value : '';
};
const hashOf = (token: string) => createHash('sha256').update(token).digest();

/**
 * NervesHub's `POST .../users/invite`: a registered user joins at once; anyone else gets an invitation, mailed
 * when SMTP is configured and always listed for the organization's admins with its link, which the invited
 * person opens to create their account and join (fleethub's page). Invitations expire; one per email and
 * organization is pending at a time (a new one replaces it).
 */
@Injectable()
export class InvitationsService {
  constructor(
    private readonly invitations: InvitationsRepository,
    private readonly members: MembersService,
    private readonly memberships: MembershipsRepository,
    private readonly users: UsersService,
    private readonly auth: AuthService,
    private readonly keys: ServerKeyService,
    private readonly mailer: Mailer,
    private readonly limiter: RateLimiter,
    private readonly transactions: Transactions,
    private readonly audit: AuditService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /** The member (201) for a registered email; `'invited'` (NervesHub's 204) when an invitation was made. */
  async invite(
    access: OrgAccess,
    rawEmail: string,
    role: Role,
  ): Promise<Created<{ data: MemberView }> | 'invited'> {
    const email = normaliseEmail(rawEmail);
    if (await this.users.findByEmail(email)) {
      const added = await this.members.add(access, email, role);
      return new Created(`/api/orgs/${pathSegment(access.orgName)}/users/${pathSegment(email)}`, added);
    }
    if (!EMAIL_PATTERN.test(email)) throw DomainError.invalidField('email', 'is not a valid email address');
    const nonce = randomBytes(16);
    const token = this.linkToken(nonce);
    const expiresAt = await this.transactions.run(async (tx) => {
      const expires = await this.invitations.replace(
        {
          orgId: access.orgId,
          email,
          role,
          invitedById: access.actor.userId,
          nonce,
          tokenHash: hashOf(token),
        },
        INVITATION_LIFETIME_SEC,
        tx,
      );
      await this.audit.record(tx, {
        orgId: access.orgId,
        actor: access.actor,
        action: 'invitation.create',
        targetType: 'invitation',
        targetId: email,
        details: { role, mailed: this.mailer.enabled },
      });
      return expires;
    });
    await this.mailer.send({
      to: email,
      subject: `${access.actor.name} invited you to ${access.orgName} on fleethub`,
      text:
        `${access.actor.name} (${access.actor.email}) invited you to join the organization ${access.orgName} ` +
        `on fleethub, as ${role}.\n\nCreate your account and join here, before ${expiresAt.toISOString()}:\n\n` +
        `${this.linkOf(token)}\n\nIf you did not expect this, ignore this message.\n`,
    });
    return 'invited';
  }

  /** The organization's pending invitations (admins only), newest first, each with its link. */
  async list(access: OrgAccess): Promise<{ data: InvitationView[] }> {
    await this.invitations.deleteExpired(access.orgId);
    const rows = await this.invitations.listPending(access.orgId);
    return {
      data: rows.map((row) => ({
        email: row.email,
        role: row.role,
        invited_by: row.invited_by_email,
        url: this.linkOf(this.linkToken(row.nonce)),
        expires_at: row.expires_at.toISOString(),
        inserted_at: row.inserted_at.toISOString(),
      })),
    };
  }

  /** Withdraws the pending invitation of `email`: its link stops working (audited); none pending: 404. */
  async revoke(access: OrgAccess, rawEmail: string): Promise<void> {
    const email = normaliseEmail(rawEmail);
    await this.transactions.run(async (tx) => {
      if (!(await this.invitations.deletePending(access.orgId, email, tx))) throw DomainError.notFound();
      await this.audit.record(tx, {
        orgId: access.orgId,
        actor: access.actor,
        action: 'invitation.revoke',
        targetType: 'invitation',
        targetId: email,
        details: {},
      });
    });
  }

  async page(token: string): Promise<InvitationPageModel> {
    const invitation = await this.pending(token);
    return invitation ? this.form(token, invitation) : { kind: 'invalid' };
  }

  /**
   * The page's form: a new account (name, username, password twice) or, for an email registered since the
   * invitation, that account's password; then the membership, once (concurrent acceptances: one wins).
   */
  async accept(
    token: string,
    form: InvitationForm,
    csrfPassed: boolean,
    sourceAddress: string,
  ): Promise<InvitationPageModel> {
    const invitation = await this.pending(token);
    if (!invitation) return { kind: 'invalid' };
    const base = await this.form(token, invitation);
    const values = { name: field(form, 'name').trim(), username: field(form, 'username').trim() };
    if (!csrfPassed) return { ...base, problem: 'csrf', values };
    const password = field(form, 'password');
    let existingUserId: string | null = null;
    try {
      if (base.hasAccount) {
        existingUserId = (await this.auth.verifyCredentials(invitation.email, password, sourceAddress)).id;
      } else {
        await this.limiter.consume(
          bucketKey('invitation-addr', sourceAddress),
          this.config.rateLimitLoginPerMin * 3,
          'too many attempts from this address, try again later',
        );
        if (password !== field(form, 'password_confirmation')) {
          return { ...base, problem: 'password_mismatch', values };
        }
      }
      const accepted = await this.transactions.run(async (tx) => {
        if (!(await this.invitations.markAccepted(invitation.id, tx))) return false;
        const userId =
          existingUserId ??
          (
            await this.users.create(
              { email: invitation.email, username: values.username, name: values.name, password },
              tx,
            )
          ).id;
        if ((await this.memberships.findRole(invitation.org_id, userId, tx)) === null) {
          await this.memberships.insert(invitation.org_id, userId, invitation.role, tx);
        }
        await this.audit.record(tx, {
          orgId: invitation.org_id,
          actor: null,
          action: 'invitation.accept',
          targetType: 'member',
          targetId: invitation.email,
          details: { role: invitation.role, new_account: existingUserId === null },
        });
        return true;
      });
      if (!accepted) return { kind: 'invalid' };
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      if (err.code === ErrorCode.RATE_LIMITED) return { ...base, problem: 'rate_limited', values };
      if (err.code === ErrorCode.UNAUTHENTICATED) return { ...base, problem: 'credentials', values };
      if (err.code === ErrorCode.VALIDATION_FAILED) {
        return { ...base, problem: 'fields', fieldErrors: err.fields, values };
      }
      throw err;
    }
    return { kind: 'accepted', orgName: invitation.org_name, email: invitation.email };
  }

  private async pending(token: string): Promise<LiveInvitationRow | undefined> {
    if (!LINK_TOKEN.test(token)) return undefined;
    return this.invitations.findPending(hashOf(token));
  }

  private async form(
    token: string,
    invitation: LiveInvitationRow,
  ): Promise<Extract<InvitationPageModel, { kind: 'form' }>> {
    return {
      kind: 'form',
      token,
      orgName: invitation.org_name,
      email: invitation.email,
      role: invitation.role,
      hasAccount: (await this.users.findByEmail(invitation.email)) !== null,
    };
  }

  /** The link's token: derived from the invitation's nonce with the server key, never stored. */
  private linkToken(nonce: Buffer): string {
    return createHmac('sha256', this.keys.subkey('sign-invitation-links')).update(nonce).digest('base64url');
  }

  private linkOf(token: string): string {
    return `${this.config.publicUrl}/invitations/${token}`;
  }
}
