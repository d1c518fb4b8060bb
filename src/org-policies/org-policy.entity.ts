import { Column, Entity, JoinColumn, OneToOne, PrimaryColumn } from 'typeorm';
import { UpdatedAtColumn } from '../database/columns';
import { Org } from '../orgs/org.entity';

/** An organization's sign-in and token policies; an organization without a row has the defaults (no policy). */
@Entity('org_policies')
export class OrgPolicy {
  @PrimaryColumn({ name: 'org_id', type: 'bigint' })
  orgId: string;

  @OneToOne(() => Org, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'org_id' })
  org?: Org;

  /** Members must have two-factor sign-in on to work in the organization. */
  @Column({ name: 'require_two_factor', type: 'boolean', default: false })
  requireTwoFactor: boolean;

  /** Personal access tokens older than this (days since created) are refused in the organization; null: any. */
  @Column({ name: 'max_token_lifetime_days', type: 'integer', nullable: true })
  maxTokenLifetimeDays: number | null;

  /** The personal access token scopes accepted in the organization. */
  @Column({ name: 'allowed_token_scopes', type: 'text', array: true, default: () => "'{all,read}'" })
  allowedTokenScopes: string[];

  @UpdatedAtColumn()
  updatedAt: Date;
}
