import { Column, Entity, PrimaryColumn } from 'typeorm';
import { InsertedAtColumn } from '../database/columns';

/**
 * A single sign-on in progress: what the callback must check (the `state` it was sent with, by its SHA-256; the
 * `nonce` the ID token must carry; the PKCE verifier). Deleted by the callback that uses it (a replayed `state`
 * finds nothing) or after ten minutes.
 */
@Entity('oidc_sign_ins')
export class OidcSignIn {
  @PrimaryColumn({ name: 'state_hash', type: 'bytea' })
  stateHash: Buffer;

  @Column({ type: 'varchar', length: 128 })
  nonce: string;

  @Column({ name: 'code_verifier', type: 'varchar', length: 128 })
  codeVerifier: string;

  @InsertedAtColumn()
  insertedAt: Date;
}
