import { ApiProperty } from '@nestjs/swagger';
import { DELTA_STATES, type DeltaState } from '../firmware-delta.entity';

const EXAMPLE_TIME = '2026-11-22T03:04:05.123Z';

/** An fwup delta between two firmware of a product (NervesHub's firmware delta), as the API shows it. */
export class FirmwareDeltaView {
  @ApiProperty({ format: 'uuid', description: 'The firmware the device runs (the delta applies to it)' })
  source_uuid: string;

  @ApiProperty({ example: '1.2.0' }) source_version: string;

  @ApiProperty({ format: 'uuid', description: 'The firmware the delta installs' })
  target_uuid: string;

  @ApiProperty({ example: '1.3.0' }) target_version: string;

  @ApiProperty({
    enum: DELTA_STATES,
    example: 'ready',
    description:
      '`pending` (requested, waiting for a builder or for its retry), `building`, `ready` (devices get it), ' +
      '`failed` (recorded `error`; devices get the full file)',
  })
  state: DeltaState;

  @ApiProperty({ example: 1, description: 'Builds started (at most 3)' }) attempts: number;

  @ApiProperty({ nullable: true, type: String, example: null, description: 'Why the last build failed' })
  error: string | null;

  @ApiProperty({ nullable: true, type: Number, example: 2_411_520, description: 'Bytes of the delta file' })
  size: number | null;

  @ApiProperty({ nullable: true, type: Number, example: 73_400_320, description: 'Bytes of the source file' })
  source_size: number | null;

  @ApiProperty({ nullable: true, type: Number, example: 73_531_904, description: 'Bytes of the target file' })
  target_size: number | null;

  @ApiProperty({
    nullable: true,
    type: Number,
    example: 71_120_384,
    description: 'Bytes a device saves by downloading the delta instead of the target (`target_size - size`)',
  })
  saved_bytes: number | null;

  @ApiProperty({
    nullable: true,
    type: String,
    example: '1.6.0',
    description:
      'The oldest fwup that applies it: a device reporting an older `fwup_version` gets the full file',
  })
  fwup_version: string | null;

  @ApiProperty({ nullable: true, type: Number, example: 5210, description: 'Milliseconds the build took' })
  build_ms: number | null;

  @ApiProperty({ example: EXAMPLE_TIME }) inserted_at: string;
  @ApiProperty({ example: EXAMPLE_TIME }) updated_at: string;
}

/** The fwup deltas serving a deployment group's current release. */
export class DeploymentDeltaStatusView {
  @ApiProperty({ description: "The group's `delta_updatable`: whether its devices may get deltas at all" })
  delta_updatable: boolean;

  @ApiProperty({ format: 'uuid', description: "The current release's firmware (every delta's target)" })
  firmware_uuid: string;

  @ApiProperty({
    type: [FirmwareDeltaView],
    description: 'The deltas requested to that firmware, newest first',
  })
  deltas: FirmwareDeltaView[];
}
