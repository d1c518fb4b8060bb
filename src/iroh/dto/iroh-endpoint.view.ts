import { ApiProperty } from '@nestjs/swagger';
import { IROH_OWNER_TYPES, type IrohOwnerType } from '../endpoint-view';
import { IROH_SOURCES, type IrohSource } from '../iroh-endpoint.entity';

export { IROH_OWNER_TYPES, type IrohOwnerType } from '../endpoint-view';

/** What holds an endpoint. All four keys are always present, null where they do not apply. */
export class IrohOwnerView {
  @ApiProperty({ enum: IROH_OWNER_TYPES, example: 'device' }) type: IrohOwnerType;
  @ApiProperty({ type: String, nullable: true, example: 'nerves-1234' }) device_identifier: string | null;
  @ApiProperty({ type: String, nullable: true, example: null }) user_email: string | null;
  @ApiProperty({ type: String, nullable: true, example: null }) user_name: string | null;
}

export class IrohEndpointView {
  @ApiProperty({ example: 'ae58ff8833241ac82d6ff7611046ed67b5072d142c588d0063e942d9a75502b6' })
  identifier: string;

  @ApiProperty({ enum: ['iroh'], example: 'iroh' }) service: string;
  @ApiProperty({ example: 'default' }) instance: string;

  @ApiProperty({ type: 'object', additionalProperties: true, example: {} })
  details: Record<string, unknown>;

  @ApiProperty({ enum: IROH_SOURCES, example: 'device_reported' }) source: IrohSource;
  @ApiProperty({ type: IrohOwnerView }) owner: IrohOwnerView;

  @ApiProperty({ type: String, format: 'date-time', nullable: true, example: '2026-11-22T03:04:05.123Z' })
  last_reported_at: string | null;

  @ApiProperty({ type: String, format: 'date-time', example: '2026-11-22T03:04:05.123Z' })
  inserted_at: string;

  @ApiProperty({ type: String, format: 'date-time', example: '2026-11-22T03:04:05.123Z' })
  updated_at: string;
}
