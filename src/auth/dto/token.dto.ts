import { applyDecorators } from '@nestjs/common';
import { ApiProperty } from '@nestjs/swagger';
import { CustomField, EnumField, StringField } from '../../common/validation/fields';
import { TOKEN_RENDERINGS, type TokenRendering } from '../token-rendering';
import { TOKEN_SCOPES, type TokenScope } from '../token-scope';

const TIMESTAMP =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:(Z)|([+-])(\d{2}):?(\d{2}))$/i;

/**
 * An ISO 8601 date and time with a time zone (`Z` or `±hh:mm`), or null. Stricter than `Date.parse`, which
 * takes `2027-02-30` for March 2nd and a time without a zone as local time.
 */
export function parseTimestamp(text: string): Date | null {
  const m = TIMESTAMP.exec(text);
  if (!m) return null;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map((part) => Number(part ?? 0));
  const millis = Number((m[7] ?? '').padEnd(3, '0').slice(0, 3));
  const offsetMinutes = m[8] ? 0 : (m[9] === '-' ? -1 : 1) * (Number(m[10]) * 60 + Number(m[11]));
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return null;
  if (!m[8] && (Number(m[10]) > 23 || Number(m[11]) > 59)) return null;
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  if (date.getUTCDate() !== day) return null;
  date.setUTCHours(hour, minute, second, millis);
  return new Date(date.getTime() - offsetMinutes * 60_000);
}

const EXPIRES_AT_FORMAT = 'must be an ISO 8601 date and time with a time zone, e.g. 2027-01-31T12:00:00Z';

export function checkExpiresAt(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') return EXPIRES_AT_FORMAT;
  const date = parseTimestamp(value.trim());
  if (!date) return EXPIRES_AT_FORMAT;
  return date.getTime() > Date.now() ? null : 'must be in the future';
}

const ExpiresAtField = () =>
  applyDecorators(
    CustomField('expiresAt', checkExpiresAt),
    ApiProperty({
      type: String,
      format: 'date-time',
      required: false,
      nullable: true,
      example: '2027-01-31T12:00:00Z',
      description:
        'When the token stops working: an ISO 8601 date and time with a time zone, in the future. ' +
        'Absent or null: it never expires.',
    }),
  );

export class CreateTokenDto {
  @StringField({
    max: 255,
    nullable: true,
    doc: { description: 'A note to recognise the token by', example: 'ci' },
  })
  note?: string | null;

  @EnumField(TOKEN_SCOPES, {
    doc: {
      description: '`all` (the default) or `read`: a read token can make only GET calls',
      example: 'read',
      nullable: true,
    },
  })
  scope?: TokenScope | null;

  @EnumField(TOKEN_RENDERINGS, {
    doc: {
      description:
        "`fleethub` (the default): answers as the spec renders them. `nerveshub`: NervesHub's shapes where they " +
        "differ (`tags` of devices and scripts as lists), for NervesHub's own clients such as its CLI",
      example: 'nerveshub',
      nullable: true,
    },
  })
  rendering?: TokenRendering | null;

  @ExpiresAtField()
  expires_at?: string | null;
}

/** A personal access token as listed: never the token or its hash. */
export class TokenView {
  @ApiProperty({ example: '42', description: 'The id to revoke it by' }) id: string;
  @ApiProperty({ type: String, nullable: true, example: 'ci' }) note: string | null;
  @ApiProperty({ enum: TOKEN_SCOPES, example: 'all' }) scope: TokenScope;
  @ApiProperty({
    enum: TOKEN_RENDERINGS,
    example: 'fleethub',
    description:
      "How answers to this token render: the spec's shapes (`fleethub`) or NervesHub's (`nerveshub`: `tags` as lists)",
  })
  rendering: TokenRendering;

  @ApiProperty({
    type: String,
    nullable: true,
    example: null,
    description: 'When it stops (or stopped) working; null: never',
  })
  expires_at: string | null;

  @ApiProperty({ example: '2026-11-22T03:04:05.123Z', description: 'When it was created' })
  inserted_at: string;

  @ApiProperty({
    type: String,
    nullable: true,
    example: '2026-11-23T08:00:00.000Z',
    description: 'When it was last used, to the minute; null: never',
  })
  last_used_at: string | null;

  @ApiProperty({
    type: String,
    nullable: true,
    description: 'The address it was last used from (recorded with last_used_at, at most once a minute)',
    example: '203.0.113.7',
  })
  last_used_address: string | null;
}

/** A new token: the only response that ever holds it. */
export class TokenCreatedView extends TokenView {
  @ApiProperty({
    example: 'nhu_4Vq0mWcC9yGm1ZpQ3xTkRb7nHs2LdJf8aEoUiY6tB5vXw3pT9k',
    description: 'The token itself, shown only in this response',
  })
  token: string;
}
