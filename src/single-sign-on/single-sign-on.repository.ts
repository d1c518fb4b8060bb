import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';

const SIGN_IN_TTL = `interval '10 minutes'`;

/** The `oidc_sign_ins` (sign-ins in progress) and `user_identities` (linked provider accounts) tables. */
@Injectable()
export class SingleSignOnRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async insertSignIn(stateHash: Buffer, nonce: string, codeVerifier: string): Promise<void> {
    await this.db.query(`DELETE FROM oidc_sign_ins WHERE inserted_at < now() - ${SIGN_IN_TTL}`);
    await this.db.query(`INSERT INTO oidc_sign_ins (state_hash, nonce, code_verifier) VALUES ($1, $2, $3)`, [
      stateHash,
      nonce,
      codeVerifier,
    ]);
  }

  /** The sign-in started with this state, removed so that it is used once; undefined when unknown or expired. */
  async takeSignIn(stateHash: Buffer): Promise<{ nonce: string; code_verifier: string } | undefined> {
    const [rows]: [{ nonce: string; code_verifier: string }[], number] = await this.db.query(
      `DELETE FROM oidc_sign_ins WHERE state_hash = $1 AND inserted_at > now() - ${SIGN_IN_TTL}
       RETURNING nonce, code_verifier`,
      [stateHash],
    );
    return rows[0];
  }

  async findLinkedUserId(issuer: string, subject: string): Promise<string | undefined> {
    const rows: { user_id: string }[] = await this.db.query(
      `SELECT user_id FROM user_identities WHERE issuer = $1 AND subject = $2`,
      [issuer, subject],
    );
    return rows[0]?.user_id;
  }

  async link(userId: string, issuer: string, subject: string, email: string): Promise<void> {
    await this.db.query(
      `INSERT INTO user_identities (user_id, issuer, subject, email) VALUES ($1, $2, $3, $4)
       ON CONFLICT (issuer, subject) DO NOTHING`,
      [userId, issuer, subject, email],
    );
  }
}
