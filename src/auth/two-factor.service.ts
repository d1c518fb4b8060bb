import { Inject, Injectable } from '@nestjs/common';
import { AuditService } from '../audit/audit.service';
import type { Actor } from '../common/auth/actor';
import { DomainError } from '../common/errors/domain-error';
import { rateLimited, RateLimiter } from '../common/http/rate-limiter';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { type Queryable, Transactions } from '../database/transactions';
import { OrgsService } from '../orgs/orgs.service';
import type { UserRecord } from '../users/user-record';
import type {
  BackupCodesView,
  TwoFactorConfirmedView,
  TwoFactorEnrolmentView,
  TwoFactorStatusView,
} from './dto/two-factor.dto';
import {
  hashBackupCode,
  newBackupCodes,
  newTotpSecret,
  normalizeBackupCode,
  normalizeTotpCode,
  otpauthUri,
  qrCodeSvg,
  totpStep,
} from './totp';
import { type TwoFactorRow, TwoFactorRepository } from './two-factor.repository';

const CODE_REQUIRED = "can't be blank: two-factor sign-in is on for this account";
const CODE_INVALID = 'is invalid or was already used';
const TOO_MANY_CODES = 'too many wrong two-factor codes, try again later';

/** Who a check of a code is for: the user, and the audit's actor (the user itself at sign-in). */
interface CodeOwner {
  userId: string;
  actor: Actor;
}

/**
 * TOTP two-factor sign-in (RFC 6238) with single-use backup codes. Enrolment is two steps (a secret, then a first
 * code that proves the app has it); once on, every password sign-in needs a code. Wrong codes are rate limited per
 * user (the password's own limits per account and address apply to sign-ins as well) and audited in each of the
 * user's organizations, as are turning it on and off and new backup codes.
 */
@Injectable()
export class TwoFactorService {
  constructor(
    private readonly rows: TwoFactorRepository,
    private readonly limiter: RateLimiter,
    private readonly transactions: Transactions,
    private readonly audit: AuditService,
    private readonly orgs: OrgsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async status(actor: Actor): Promise<{ data: TwoFactorStatusView }> {
    const row = await this.rows.find(actor.userId);
    const on = row?.confirmed_at != null;
    return {
      data: {
        enabled: on,
        enabled_at: on ? row.confirmed_at!.toISOString() : null,
        backup_codes_left: on ? row.backup_codes_left : 0,
      },
    };
  }

  /** Which of these users have two-factor sign-in on (the organization policy's members list). */
  enabledAmong(userIds: string[]): Promise<Set<string>> {
    return this.rows.enabledAmong(userIds);
  }

  /** `POST .../two_factor`: a new secret to scan; replaces a pending one. 409 while two-factor sign-in is on. */
  async enrol(actor: Actor): Promise<{ data: TwoFactorEnrolmentView }> {
    const secret = newTotpSecret();
    if (!(await this.rows.startEnrolment(actor.userId, secret))) {
      throw DomainError.conflict('two-factor sign-in is already on: turn it off first to enrol again');
    }
    const uri = otpauthUri(secret, actor.email);
    return { data: { secret, otpauth_uri: uri, qr_code_svg: await qrCodeSvg(uri) } };
  }

  /** `POST .../two_factor/confirm`: the first code turns it on and brings the backup codes (shown only now). */
  async confirm(actor: Actor, code: string): Promise<{ data: TwoFactorConfirmedView }> {
    const row = await this.rows.find(actor.userId);
    if (!row || row.confirmed_at !== null) {
      throw DomainError.conflict(
        row ? 'two-factor sign-in is already on' : 'no enrolment to confirm: start one with POST first',
      );
    }
    const owner = { userId: actor.userId, actor };
    this.refuseWhileBlocked(owner.userId);
    const normalized = normalizeTotpCode(code);
    const step = normalized === undefined ? undefined : totpStep(row.secret, normalized);
    const backupCodes = newBackupCodes();
    const confirmedAt = await this.transactions.run(async (tx) => {
      const done =
        step !== undefined &&
        (await this.rows.useStep(
          actor.userId,
          step,
          { backupCodeHashes: backupCodes.map((c) => hashBackupCode(normalizeBackupCode(c)!)) },
          tx,
        ));
      if (!done) return undefined;
      await this.record(tx, owner, 'user.two_factor_enable', {});
      return (await this.rows.find(actor.userId, tx))?.confirmed_at ?? new Date();
    });
    if (confirmedAt === undefined) return this.wrongCode(owner, 'confirm');
    return { data: { enabled: true, enabled_at: confirmedAt.toISOString(), backup_codes: backupCodes } };
  }

  /** `POST .../two_factor/disable`: a current code or a backup code turns it off. */
  async disable(actor: Actor, code: string): Promise<void> {
    const owner = { userId: actor.userId, actor };
    const row = await this.enabledRow(actor.userId);
    this.refuseWhileBlocked(owner.userId);
    const done = await this.transactions.run(async (tx) => {
      if (!(await this.spendCode(owner, row, code, 'disable', tx))) return false;
      await this.rows.delete(actor.userId, tx);
      await this.record(tx, owner, 'user.two_factor_disable', {});
      return true;
    });
    if (!done) return this.wrongCode(owner, 'disable');
  }

  /** `POST .../two_factor/backup_codes`: ten new backup codes for a current code; the old ones stop working. */
  async regenerateBackupCodes(actor: Actor, code: string): Promise<{ data: BackupCodesView }> {
    const owner = { userId: actor.userId, actor };
    const row = await this.enabledRow(actor.userId);
    this.refuseWhileBlocked(owner.userId);
    const backupCodes = newBackupCodes();
    const done = await this.transactions.run(async (tx) => {
      if (!(await this.spendCode(owner, row, code, 'backup_codes', tx))) return false;
      await this.rows.replaceBackupCodes(
        actor.userId,
        backupCodes.map((c) => hashBackupCode(normalizeBackupCode(c)!)),
        tx,
      );
      await this.record(tx, owner, 'user.two_factor_backup_codes', {});
      return true;
    });
    if (!done) return this.wrongCode(owner, 'backup_codes');
    return { data: { backup_codes: backupCodes } };
  }

  /**
   * At a password sign-in whose password was right: nothing when the user has no two-factor sign-in; else the
   * code (a current one or a backup code) must be given and be good, or the contract's 422 naming `code`.
   */
  async checkSignIn(user: UserRecord, code: string | null | undefined): Promise<void> {
    const row = await this.rows.find(user.id);
    if (!row || row.confirmed_at === null) return;
    if (code === undefined || code === null || code.trim() === '') {
      throw DomainError.invalidField('code', CODE_REQUIRED);
    }
    const actor: Actor = {
      userId: user.id,
      email: user.email,
      username: user.username,
      name: user.name,
      tokenId: 'sign-in',
      scope: 'all',
    };
    const owner = { userId: user.id, actor };
    this.refuseWhileBlocked(owner.userId);
    if (!(await this.transactions.run((tx) => this.spendCode(owner, row, code, 'sign_in', tx)))) {
      return this.wrongCode(owner, 'sign_in');
    }
  }

  private async enabledRow(userId: string): Promise<TwoFactorRow> {
    const row = await this.rows.find(userId);
    if (!row || row.confirmed_at === null) throw DomainError.conflict('two-factor sign-in is not on');
    return row;
  }

  /**
   * Accepts a current TOTP code (once: no replay) or an unused backup code (spent, audited in `tx`); false for
   * anything else, which the caller answers with wrongCode once its transaction is over.
   */
  private async spendCode(
    owner: CodeOwner,
    row: TwoFactorRow,
    code: string,
    purpose: string,
    tx: Queryable,
  ): Promise<boolean> {
    const totp = normalizeTotpCode(code);
    if (totp !== undefined) {
      const step = totpStep(row.secret, totp);
      return step !== undefined && this.rows.useStep(owner.userId, step, undefined, tx);
    }
    const backup = normalizeBackupCode(code);
    if (backup === undefined || !(await this.rows.useBackupCode(owner.userId, hashBackupCode(backup), tx))) {
      return false;
    }
    await this.record(tx, owner, 'user.two_factor_backup_code_used', { purpose });
    return true;
  }

  /** A wrong code: audited and counted against the user; 422 naming `code`, or 429 past the limit. */
  private async wrongCode(owner: CodeOwner, purpose: string): Promise<never> {
    await this.transactions.run((tx) => this.record(tx, owner, 'user.two_factor_failure', { purpose }));
    const limit = this.config.rateLimitLoginPerMin;
    if (limit > 0) {
      const result = await this.limiter.hitOrBlock('two-factor', owner.userId, limit);
      if (!result.allowed) throw rateLimited(result, TOO_MANY_CODES);
    }
    throw DomainError.invalidField('code', CODE_INVALID);
  }

  private refuseWhileBlocked(userId: string): void {
    const block = this.limiter.blocked('two-factor', userId);
    if (block !== undefined) throw rateLimited(block, TOO_MANY_CODES);
  }

  /** An account's security event goes to the audit log of each organization the user belongs to. */
  private async record(
    tx: Queryable,
    owner: CodeOwner,
    action: string,
    details: Record<string, unknown>,
  ): Promise<void> {
    await this.audit.recordInOrgs(tx, await this.orgs.idsOfMember(owner.userId, tx), {
      actor: owner.actor,
      action,
      targetType: 'user',
      targetId: owner.actor.email,
      details,
    });
  }
}
