import { Column, Entity, Index, JoinColumn, ManyToOne, Unique } from 'typeorm';
import { BigIdColumn, InsertedAtColumn, UpdatedAtColumn } from '../../database/columns';
import { Firmware } from '../firmware.entity';

export const DELTA_STATES = ['pending', 'building', 'ready', 'failed'] as const;
export type DeltaState = (typeof DELTA_STATES)[number];

/**
 * The fwup delta from one firmware (`source`, what a device runs) to another of the same product (`target`), built
 * once per pair in the background (NervesHub's `firmware_deltas`): pending until a builder claims it, building
 * under a lease, then ready (its file stored beside the firmware) or failed (after its attempts, or at once when the
 * pair can never give a delta). Deleting either firmware deletes it.
 */
@Entity('firmware_deltas')
@Unique('firmware_deltas_source_id_target_id_key', ['sourceId', 'targetId'])
@Index('firmware_deltas_target_id_idx', ['targetId'])
@Index('firmware_deltas_pending_idx', ['nextAttemptAt'], { where: `state = 'pending'` })
@Index('firmware_deltas_building_idx', ['leaseUntil'], { where: `state = 'building'` })
export class FirmwareDelta {
  @BigIdColumn()
  id: string;

  @Column({ name: 'source_id', type: 'bigint' })
  sourceId: string;

  @ManyToOne(() => Firmware, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'source_id' })
  source?: Firmware;

  @Column({ name: 'target_id', type: 'bigint' })
  targetId: string;

  @ManyToOne(() => Firmware, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'target_id' })
  target?: Firmware;

  @Column({ type: 'enum', enum: DELTA_STATES, enumName: 'firmware_delta_state', default: 'pending' })
  state: DeltaState;

  /** Builds started (a build whose lease ran out counts). */
  @Column({ type: 'integer', default: 0 })
  attempts: number;

  /** Why the last build failed; null once ready. */
  @Column({ type: 'varchar', length: 1000, nullable: true })
  error: string | null;

  /** A pending delta is not claimed before this (the retry's backoff). */
  @Column({ name: 'next_attempt_at', type: 'timestamptz', default: () => 'now()' })
  nextAttemptAt: Date;

  /** A building delta whose lease ran out is taken over by another builder. */
  @Column({ name: 'lease_until', type: 'timestamptz', nullable: true })
  leaseUntil: Date | null;

  /** The build holding the lease: only it may record the result. */
  @Column({ name: 'lease_token', type: 'uuid', nullable: true })
  leaseToken: string | null;

  /** Bytes of the delta file (ready deltas). */
  @Column({ type: 'bigint', nullable: true })
  size: string | null;

  @Column({ name: 'source_size', type: 'bigint', nullable: true })
  sourceSize: string | null;

  @Column({ name: 'target_size', type: 'bigint', nullable: true })
  targetSize: string | null;

  @Column({ type: 'char', length: 64, nullable: true })
  sha256: string | null;

  /** SHA-256 of each 1 MiB part of the delta file. */
  @Column({ name: 'chunk_sha256', type: 'text', array: true, nullable: true })
  chunkSha256: string[] | null;

  /** The oldest fwup that applies the delta (from the target's meta.conf). */
  @Column({ name: 'fwup_version', type: 'varchar', length: 64, nullable: true })
  fwupVersion: string | null;

  /** Milliseconds the successful build took (download of both files, unpacking, encoding, packing). */
  @Column({ name: 'build_ms', type: 'integer', nullable: true })
  buildMs: number | null;

  @Column({ name: 'storage_key', type: 'varchar', length: 255, nullable: true })
  storageKey: string | null;

  @InsertedAtColumn()
  insertedAt: Date;

  @UpdatedAtColumn()
  updatedAt: Date;
}
