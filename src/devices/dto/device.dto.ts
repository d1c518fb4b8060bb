import { ApiProperty } from '@nestjs/swagger';
import {
  BooleanField,
  CustomField,
  StringCastBooleanField,
  StringField,
  TagsField,
} from '../../common/validation/fields';
import { MAX_CERT_FIELD } from '../../certificates/dto/ca-certificate.dto';
import { CONNECTION_STATUSES, type ConnectionStatus } from '../device.entity';

// Printable, no whitespace, no "/", 1–255 characters: usable as a path segment everywhere.
export const DEVICE_IDENTIFIER_PATTERN = /^[^\s/\p{C}]{1,255}$/u;

const EXTENSIONS_MOVED = 'is not a device field: use PATCH .../devices/{identifier}/extensions';

/** Undocumented on purpose: the field exists only to say where the device's extension settings are changed. */
function MovedExtensionSettings(): PropertyDecorator {
  return CustomField('movedExtensionSettings', (value) => (value === undefined ? null : EXTENSIONS_MOVED));
}

export class CreateDeviceDto {
  @StringField({
    required: true,
    max: 255,
    pattern: {
      regex: DEVICE_IDENTIFIER_PATTERN,
      message: 'must be 1-255 printable characters without whitespace or "/"',
    },
    doc: { example: 'nerves-4f2a', description: 'Unique across the server' },
  })
  identifier: string;

  @StringField({ max: 1024, nullable: true, doc: { example: 'Lab bench unit' } })
  description?: string | null;

  @TagsField()
  tags?: string | string[] | null;
}

export class UpdateDeviceDto {
  @StringField({ max: 1024, nullable: true, doc: { example: 'Lab bench unit' } })
  description?: string | null;

  @TagsField()
  tags?: string | string[] | null;

  @BooleanField({ example: true })
  updates_enabled?: boolean;

  /** Refused rather than ignored: the opt-outs were changed here before, and a client still sending them must know. */
  @MovedExtensionSettings()
  extensions?: unknown;
}

/**
 * `PUT .../devices/{identifier}`: NervesHub's device update as its CLI sends it: the identifier repeated, every
 * value possibly a string (`updates_enabled` "true"/"false").
 */
export class PutDeviceDto {
  @StringField({
    max: 255,
    doc: {
      example: 'nerves-4f2a',
      description: "The path's identifier, repeated (NervesHub's CLI sends it); it cannot change",
    },
  })
  identifier?: string;

  @StringField({ max: 1024, nullable: true, doc: { example: 'Lab bench unit' } })
  description?: string | null;

  @TagsField()
  tags?: string | string[] | null;

  @StringCastBooleanField({ example: true })
  updates_enabled?: boolean;

  /** Refused rather than ignored: the opt-outs were changed here before, and a client still sending them must know. */
  @MovedExtensionSettings()
  extensions?: unknown;
}

export class UpgradeDto {
  @StringField({
    required: true,
    max: 64,
    doc: { example: '2b9f7b4c-9a4e-5a4e-8f4e-1c2d3e4f5a6b', description: 'Target firmware UUID' },
  })
  uuid: string;
}

/**
 * Console code reaches the device as one frame per character (NervesHubLink's console protocol): the bound keeps
 * one call's frames to a burst the device socket sends in a few tens of milliseconds.
 */
export const MAX_CONSOLE_CODE_LENGTH = 16_384;

export class ConsoleCodeDto {
  @StringField({
    trim: false,
    max: MAX_CONSOLE_CODE_LENGTH,
    doc: { example: 'IO.puts("hello")', description: 'Elixir code for the device console' },
  })
  code?: string;

  @StringField({
    trim: false,
    max: MAX_CONSOLE_CODE_LENGTH,
    doc: { description: 'Legacy alias of `code`', deprecated: true },
  })
  body?: string;
}

/** NervesHub's `POST .../devices/auth`: which device a certificate belongs to. */
export class DeviceCertificateAuthDto {
  @StringField({
    required: true,
    max: MAX_CERT_FIELD,
    doc: {
      description:
        "A device's certificate: base64 of its PEM, as NervesHub clients send it (the PEM itself is accepted too)",
      example: 'LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJ...',
    },
  })
  certificate: string;
}

/** NervesHub's body for a certificate that names no device of the product. */
export class CertificateUnauthorizedBody {
  @ApiProperty({ enum: ['Unauthorized'], example: 'Unauthorized' }) status: string;
}

export class FirmwareMetadataView {
  @ApiProperty({ nullable: true, type: String }) id: string | null;
  @ApiProperty({ nullable: true, type: String }) uuid: string | null;
  @ApiProperty({ nullable: true, type: String }) product: string | null;
  @ApiProperty({ nullable: true, type: String }) platform: string | null;
  @ApiProperty({ nullable: true, type: String }) architecture: string | null;
  @ApiProperty({ nullable: true, type: String }) version: string | null;
  @ApiProperty({ nullable: true, type: String }) author: string | null;
  @ApiProperty({ nullable: true, type: String }) description: string | null;
  @ApiProperty({ nullable: true, type: String }) misc: string | null;
  @ApiProperty({ nullable: true, type: String }) vcs_identifier: string | null;
  @ApiProperty({ nullable: true, type: String }) fwup_version: string | null;
}

/** The device's deployment group as the device record shows it (NervesHub's four fields). */
export class DeviceDeploymentGroupView {
  @ApiProperty() name: string;
  @ApiProperty() is_active: boolean;
  @ApiProperty() firmware_uuid: string;
  @ApiProperty() firmware_version: string;
}

export class DeviceView {
  @ApiProperty({ example: 'nerves-4f2a' }) identifier: string;
  @ApiProperty({ example: 'acme' }) org_name: string;
  @ApiProperty({ example: 'gateway' }) product_name: string;
  @ApiProperty({ nullable: true, type: String, example: 'Lab bench unit' }) description: string | null;
  @ApiProperty({ example: 'beta,lab', description: 'Comma-separated; "" when none' }) tags: string;
  @ApiProperty({ nullable: true, type: String, example: '1.2.0', description: 'Reported firmware version' })
  version: string | null;
  @ApiProperty({ enum: CONNECTION_STATUSES, example: 'not_seen' }) connection_status: ConnectionStatus;
  @ApiProperty({ example: false, description: 'True exactly when connection_status is connected' })
  online: boolean;
  @ApiProperty({ nullable: true, type: String, example: '2026-11-22T03:04:05.123Z' }) last_communication:
    string | null;
  @ApiProperty({ example: true }) updates_enabled: boolean;
  @ApiProperty({ nullable: true, type: String, example: null }) updates_blocked_until: string | null;
  @ApiProperty({ type: DeviceDeploymentGroupView, nullable: true, example: null })
  deployment_group: DeviceDeploymentGroupView | null;
  @ApiProperty({ type: FirmwareMetadataView, nullable: true }) firmware_metadata: FirmwareMetadataView | null;
}
