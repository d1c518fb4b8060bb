import { ApiProperty } from '@nestjs/swagger';
import { StringField } from '../../common/validation/fields';

export class ArchiveView {
  @ApiProperty({ format: 'uuid', example: '6f1c2e4a-7b3d-5e9f-8a1b-2c3d4e5f6a7b' }) uuid: string;
  @ApiProperty({ example: 'gateway', description: 'The product name' }) product: string;
  @ApiProperty({ example: '1.4.0', description: "meta.conf's meta-version (SemVer)" }) version: string;
  @ApiProperty({ example: 'rpi4' }) platform: string;
  @ApiProperty({ example: 'aarch64' }) architecture: string;
  @ApiProperty({ example: 'Acme ML Team', nullable: true, type: String }) author: string | null;
  @ApiProperty({ example: 'Object detection model', nullable: true, type: String })
  description: string | null;
  @ApiProperty({ nullable: true, type: String }) misc: string | null;
  @ApiProperty({ nullable: true, type: String, example: 'a1b2c3d' }) vcs_identifier: string | null;
  @ApiProperty({ example: 1048576, description: 'Bytes' }) size: number;
  @ApiProperty({ example: 'release', description: 'The organization signing key whose signature verified' })
  signed_with: string;
  @ApiProperty({ example: '2026-11-22T03:04:05.123Z' }) inserted_at: string;
}

export class ArchiveUploadDto {
  @ApiProperty({
    type: 'string',
    format: 'binary',
    description: "An fwup .fw file signed with one of the organization's keys (`fwup -S`)",
  })
  archive: unknown;
}

export class AttachArchiveDto {
  @StringField({
    required: true,
    max: 64,
    doc: {
      format: 'uuid',
      description: 'The uuid of an archive of this product',
      example: '6f1c2e4a-7b3d-5e9f-8a1b-2c3d4e5f6a7b',
    },
  })
  archive: string;
}

/** The group's archive: null when none is attached. */
export class DeploymentGroupArchiveView {
  @ApiProperty({ example: 'production', description: 'The deployment group' }) deployment_group: string;
  @ApiProperty({ type: ArchiveView, nullable: true, description: 'null when the group has none' })
  archive: ArchiveView | null;
}
