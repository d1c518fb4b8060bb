import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/**
 * A running server process that holds device sockets. It renews `lease_until` while alive; devices whose
 * instance's lease ran out (a crashed process) are reaped to `disconnected` by any other instance.
 */
@Entity('gateway_instances')
export class GatewayInstance {
  @PrimaryColumn({ type: 'uuid' })
  id: string;

  @Column({ type: 'varchar', length: 255 })
  hostname: string;

  @Column({ name: 'lease_until', type: 'timestamptz' })
  leaseUntil: Date;

  @CreateDateColumn({ name: 'started_at', type: 'timestamptz', default: () => 'now()' })
  startedAt: Date;
}
