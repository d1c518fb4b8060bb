import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { CustomField, StringField } from '../../common/validation/fields';
import {
  checkDetails,
  checkEndpointId,
  checkInstance,
  DEFAULT_INSTANCE,
  DETAILS_MAX_BYTES,
  DETAILS_MAX_DEPTH,
  ENDPOINT_ID_PATTERN,
  INSTANCE_MAX_LENGTH,
} from './iroh-fields';

const trimmed = () =>
  Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value));

const EndpointIdField = () =>
  applyDecorators(
    trimmed(),
    CustomField('endpointId', checkEndpointId),
    ApiProperty({
      type: String,
      required: true,
      pattern: ENDPOINT_ID_PATTERN.source,
      description: 'The endpoint id: an ed25519 public key as 64 hexadecimal characters (stored lower-cased)',
      example: 'ae58ff8833241ac82d6ff7611046ed67b5072d142c588d0063e942d9a75502b6',
    }),
  );

const InstanceField = () =>
  applyDecorators(
    trimmed(),
    CustomField('instance', checkInstance),
    ApiProperty({
      type: String,
      required: false,
      nullable: true,
      minLength: 1,
      maxLength: INSTANCE_MAX_LENGTH,
      default: DEFAULT_INSTANCE,
      description: 'Which endpoint of the holder this is (trimmed, 1–64 characters)',
      example: DEFAULT_INSTANCE,
    }),
  );

const DetailsField = () =>
  applyDecorators(
    CustomField('details', checkDetails),
    ApiPropertyOptional({
      type: 'object',
      additionalProperties: true,
      nullable: true,
      default: {},
      description:
        `Free-form, non-authoritative, never a secret; at most ${DETAILS_MAX_BYTES} bytes serialized and ` +
        `${DETAILS_MAX_DEPTH} levels of objects and arrays deep (\`details\` itself is the first), else a 422 ` +
        'on `details`; no NUL characters or unpaired surrogates',
      example: { hostname: 'build-box' },
    }),
  );

export class CreateIrohEndpointDto {
  @EndpointIdField()
  identifier: string;

  @InstanceField()
  instance?: string | null;

  @DetailsField()
  details?: Record<string, unknown> | null;

  @StringField({
    nullable: true,
    max: 320,
    doc: {
      description:
        'The address of a member of this organization who holds the endpoint; omit (or null) for one held ' +
        'by the organization or one a device will claim',
      example: 'grace@example.com',
    },
  })
  user_email?: string | null;
}
