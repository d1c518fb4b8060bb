import { ApiProperty } from '@nestjs/swagger';

export class FirmwareView {
  @ApiProperty({ format: 'uuid', example: '2b9f7b4c-9a4e-5a4e-8f4e-1c2d3e4f5a6b' }) uuid: string;
  @ApiProperty({ example: 'gateway', description: 'The product name' }) product: string;
  @ApiProperty({ example: 'rpi4' }) platform: string;
  @ApiProperty({ example: 'arm' }) architecture: string;
  @ApiProperty({ example: '1.2.0' }) version: string;
  @ApiProperty({ example: 'Acme Firmware Team', nullable: true, type: String }) author: string | null;
}

export class FirmwareDetailView extends FirmwareView {
  @ApiProperty({ example: 73400320, description: 'Bytes' }) size: number;
  @ApiProperty({ example: '2026-11-22T03:04:05.123Z' }) inserted_at: string;
}

export class FirmwareUploadDto {
  @ApiProperty({
    type: 'string',
    format: 'binary',
    description:
      'An fwup .fw archive, an AtomVM packbeam (.avm) or an ESP-IDF application image (.bin); the format is ' +
      'detected from the content',
  })
  firmware: unknown;
}
