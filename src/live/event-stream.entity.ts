import { CreateDateColumn, Column, Entity, Index, JoinColumn, ManyToOne } from 'typeorm';
import { BigIdColumn } from '../database/columns';
import { GatewayInstance } from '../gateway/gateway-instance.entity';
import { Product } from '../products/product.entity';
import { User } from '../users/user.entity';

/**
 * An open event stream (`GET .../events`), on whichever instance serves it: counted against the per-user limit
 * across instances. Its row goes when the stream ends, and with its instance's row when that instance stops or
 * is reaped (a process that died).
 */
@Entity('event_streams')
@Index('event_streams_user_id_idx', ['userId'])
@Index('event_streams_instance_id_idx', ['instanceId'])
export class EventStreamRecord {
  @BigIdColumn()
  id: string;

  @Column({ name: 'user_id', type: 'bigint' })
  userId: string;

  @ManyToOne(() => User, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'user_id' })
  user?: User;

  @Column({ name: 'instance_id', type: 'uuid' })
  instanceId: string;

  @ManyToOne(() => GatewayInstance, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'instance_id' })
  instance?: GatewayInstance;

  @Column({ name: 'product_id', type: 'bigint' })
  productId: string;

  @ManyToOne(() => Product, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'product_id' })
  product?: Product;

  @CreateDateColumn({ name: 'opened_at', type: 'timestamptz', default: () => 'now()' })
  openedAt: Date;
}
