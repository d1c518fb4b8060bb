import { applyDecorators } from '@nestjs/common';
import { ApiProperty, type ApiPropertyOptions } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { ValidateBy, type ValidationArguments } from 'class-validator';
import { BLANK } from '../errors/messages';
import { hasMoreCodePoints, isUnstorableText } from '../values';

/** A check returns null when the value is fine, else the one message the client sees. */
type Check = (value: unknown, object: object) => string | null;

function Checked(name: string, check: Check): PropertyDecorator {
  return ValidateBy({
    name,
    validator: {
      validate: (value: unknown, args?: ValidationArguments) => check(value, args?.object ?? {}) === null,
      defaultMessage: (args?: ValidationArguments) => check(args?.value, args?.object ?? {}) ?? 'is invalid',
    },
  });
}

const trimIfString = Transform(({ value }: { value: unknown }) =>
  typeof value === 'string' ? value.trim() : value,
);

export interface StringFieldOptions {
  required?: boolean;
  /** When sent, it must not be blank (for optional fields of updates). Implied by `required`. */
  nonBlank?: boolean;
  /** Maximum length in characters (after trimming). */
  max?: number;
  /** Maximum size in bytes (UTF-8), for large texts. */
  maxBytes?: number;
  trim?: boolean;
  /** When not required, an explicit null is accepted and means "none". */
  nullable?: boolean;
  pattern?: { regex: RegExp; message: string };
  doc?: ApiPropertyOptions;
}

export function checkString(value: unknown, options: StringFieldOptions): string | null {
  if (value === undefined || (value === null && !options.required && options.nullable)) {
    return options.required ? BLANK : null;
  }
  if (typeof value !== 'string') return value === null && options.required ? BLANK : 'must be a string';
  if ((options.required || options.nonBlank) && value.trim() === '') return BLANK;
  if (options.max !== undefined && hasMoreCodePoints(value, options.max)) {
    return `should be at most ${options.max} character(s)`;
  }
  if (options.maxBytes !== undefined && Buffer.byteLength(value, 'utf8') > options.maxBytes) {
    return `should be at most ${options.maxBytes} byte(s)`;
  }
  if (value.includes('\u0000')) return 'must not contain NUL characters';
  if (isUnstorableText(value)) return 'must be valid Unicode text (no unpaired surrogates)';
  if (options.pattern && !options.pattern.regex.test(value)) return options.pattern.message;
  return null;
}

/** A string property: validation, trimming and its OpenAPI description in one decorator. */
export function StringField(options: StringFieldOptions = {}): PropertyDecorator {
  return applyDecorators(
    ...(options.trim === false ? [] : [trimIfString]),
    Checked('stringField', (value) => checkString(value, options)),
    ApiProperty({
      type: String,
      required: options.required ?? false,
      nullable: options.nullable,
      maxLength: options.max,
      ...options.doc,
    } as ApiPropertyOptions),
  );
}

const checkBoolean: Check = (value) =>
  value === undefined || typeof value === 'boolean' ? null : 'must be true or false';

/** A JSON boolean (strings such as "true" are refused; so is null). */
export function BooleanField(doc: ApiPropertyOptions = {}): PropertyDecorator {
  return applyDecorators(
    Checked('booleanField', checkBoolean),
    ApiProperty({ type: Boolean, required: false, ...doc } as ApiPropertyOptions),
  );
}

const BOOLEAN_STRINGS: Readonly<Record<string, boolean>> = { true: true, false: false };

/**
 * A JSON boolean, or exactly the string "true" or "false" read as that boolean (NervesHub casts such strings,
 * and its CLI sends every value as one). Anything else, "1", "yes", "TRUE" and null included, is refused.
 */
export function StringCastBooleanField(doc: ApiPropertyOptions = {}): PropertyDecorator {
  return applyDecorators(
    Transform(({ value }: { value: unknown }) =>
      typeof value === 'string' && Object.hasOwn(BOOLEAN_STRINGS, value) ? BOOLEAN_STRINGS[value] : value,
    ),
    Checked('booleanField', checkBoolean),
    ApiProperty({
      oneOf: [{ type: 'boolean' }, { type: 'string', enum: Object.keys(BOOLEAN_STRINGS) }],
      required: false,
      description: 'A JSON boolean; the strings "true" and "false" are read as one',
      ...doc,
    } as ApiPropertyOptions),
  );
}

/** One of a fixed set of strings. */
export function EnumField(
  values: readonly string[],
  options: { required?: boolean; doc?: ApiPropertyOptions } = {},
) {
  return applyDecorators(
    Checked('enumField', (value) => {
      if (value === undefined || value === null) return options.required ? BLANK : null;
      return typeof value === 'string' && values.includes(value) ? null : 'is invalid';
    }),
    ApiProperty({ enum: values, required: options.required ?? false, ...options.doc } as ApiPropertyOptions),
  );
}

/** Any value checked by a custom rule (the DTO documents it separately). */
export function CustomField(name: string, check: Check): PropertyDecorator {
  return Checked(name, check);
}

export const MAX_TAGS = 100;
export const MAX_TAG_LENGTH = 255;

export function checkTags(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  const pieces =
    typeof value === 'string' ? value.split(',') : Array.isArray(value) ? (value as unknown[]) : null;
  if (pieces === null || pieces.some((piece) => typeof piece !== 'string')) {
    return 'must be a comma-separated string (or an array of strings)';
  }
  const tags = (pieces as string[]).map((p) => p.trim()).filter((p) => p !== '');
  if (tags.length > MAX_TAGS) return `should have at most ${MAX_TAGS} tags`;
  if (tags.some((tag) => hasMoreCodePoints(tag, MAX_TAG_LENGTH)))
    return `each tag should be at most ${MAX_TAG_LENGTH} characters`;
  if (tags.some((tag) => tag.includes('\u0000'))) return 'must not contain NUL characters';
  if (tags.some(isUnstorableText)) return 'must be valid Unicode text (no unpaired surrogates)';
  return null;
}

/** Tags as a comma-separated string (an array of strings is accepted too); normalised by the service. */
export function TagsField(doc: ApiPropertyOptions = {}): PropertyDecorator {
  return applyDecorators(
    Checked('tagsField', checkTags),
    ApiProperty({
      type: String,
      required: false,
      description: 'Comma-separated tags; each is trimmed and empty pieces are dropped',
      example: 'beta,lab',
      ...doc,
    } as ApiPropertyOptions),
  );
}
