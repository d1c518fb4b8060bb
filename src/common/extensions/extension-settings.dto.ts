import { applyDecorators } from '@nestjs/common';
import { ApiBody, ApiExtraModels, ApiProperty, getSchemaPath } from '@nestjs/swagger';
import { StringCastBooleanField } from '../validation/fields';
import { EXTENSION_KEYS, type ExtensionSettings } from './extension-settings';

const UNKNOWN_EXTENSION = `is not an extension (known: ${EXTENSION_KEYS.join(', ')})`;

/**
 * `PATCH .../extensions` of a product or a device: the names to change, each a boolean (or "true"/"false", as
 * NervesHub's forms and CLI send). Names not sent are unchanged; an unknown name is a 422 naming it.
 */
export class ExtensionSettingsDto implements Partial<ExtensionSettings> {
  /** `{"extensions": {...}}` is read as its content (the shape the product update used to take). */
  static readonly unwrapKey = 'extensions';
  static readonly unknownFieldMessage = () => UNKNOWN_EXTENSION;

  @StringCastBooleanField({ example: true }) health?: boolean;
  @StringCastBooleanField({ example: true }) geo?: boolean;
  @StringCastBooleanField({ example: false }) local_shell?: boolean;
  @StringCastBooleanField({ example: true }) logging?: boolean;
  @StringCastBooleanField({ example: true }) network_identity?: boolean;
}

/** Every extension with its setting. */
export class ExtensionSettingsView implements ExtensionSettings {
  @ApiProperty({ example: true }) health: boolean;
  @ApiProperty({ example: true }) geo: boolean;
  @ApiProperty({ example: false }) local_shell: boolean;
  @ApiProperty({ example: true }) logging: boolean;
  @ApiProperty({ example: true }) network_identity: boolean;
}

/** NervesHub-style envelope of the settings body; documents the wrapped form (the top-level form is the DTO). */
export class ExtensionSettingsWrappedDto {
  @ApiProperty({ type: ExtensionSettingsDto }) extensions: ExtensionSettingsDto;
}

/** The `PATCH .../extensions` body as OpenAPI shows it: the names top-level, or wrapped in `{"extensions": ...}`. */
export function ExtensionSettingsBody() {
  return applyDecorators(
    ApiExtraModels(ExtensionSettingsDto, ExtensionSettingsWrappedDto),
    ApiBody({
      description:
        'The extensions to change, each `true` or `false` (the strings "true"/"false" too), top-level or wrapped ' +
        'as `{"extensions": {...}}`. Names not sent are unchanged; an unknown name is a 422 naming it.',
      schema: {
        anyOf: [
          { $ref: getSchemaPath(ExtensionSettingsDto) },
          { $ref: getSchemaPath(ExtensionSettingsWrappedDto) },
        ],
      },
      examples: {
        topLevel: { value: { health: true, geo: true, logging: true } },
        wrapped: { value: { extensions: { network_identity: 'false' } } },
      },
    }),
  );
}
