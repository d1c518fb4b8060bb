import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/** Fixed-window hit counters shared by every instance (rate limits). Expired windows are swept. */
@Entity('rate_limit_buckets')
@Index('rate_limit_buckets_expires_at_idx', ['expiresAt'])
export class RateLimitBucket {
  @PrimaryColumn({ type: 'varchar', length: 255 })
  key: string;

  @Column({ type: 'integer', default: 0 })
  hits: number;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt: Date;
}
