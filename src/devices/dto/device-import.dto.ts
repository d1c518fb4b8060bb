import { ApiProperty } from '@nestjs/swagger';

export class DeviceImportErrorView {
  @ApiProperty({ example: 17, description: "The entry's position in the manifest (from 0)" }) index: number;
  @ApiProperty({ type: String, nullable: true, example: 'sn0123030a29b17ab001' }) identifier: string | null;
  @ApiProperty({ example: "certificate holds a public key that another device's certificate holds" })
  error: string;
}

export class DeviceImportView {
  @ApiProperty({ example: '12' }) id: string;

  @ApiProperty({
    enum: ['running', 'done', 'interrupted'],
    example: 'done',
    description: '`interrupted`: the instance running it stopped (send the manifest again: it is idempotent)',
  })
  status: 'running' | 'done' | 'interrupted';

  @ApiProperty({ example: 'microchip_trust_and_go' }) format: string;
  @ApiProperty({ type: [String], example: ['factory'] }) tags: string[];
  @ApiProperty({ example: 10000 }) total: number;
  @ApiProperty({ example: 10000 }) processed: number;
  @ApiProperty({ example: 9998, description: 'Devices created' }) created: number;

  @ApiProperty({ example: 0, description: 'Entries whose device already had this certificate' })
  unchanged: number;

  @ApiProperty({ example: 2 }) failed: number;

  @ApiProperty({ type: [DeviceImportErrorView], description: 'The first 1,000 refused entries' })
  errors: DeviceImportErrorView[];

  @ApiProperty({ example: '2026-11-22T03:04:05.123Z' }) inserted_at: string;
  @ApiProperty({ example: '2026-11-22T03:04:19.456Z' }) updated_at: string;
}
