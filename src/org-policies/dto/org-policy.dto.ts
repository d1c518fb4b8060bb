import { applyDecorators } from '@nestjs/common';
import { ApiProperty, type ApiPropertyOptions } from '@nestjs/swagger';
import { BooleanField, CustomField } from '../../common/validation/fields';
import type { Role } from '../../common/auth/roles';

export const TOKEN_SCOPE_VALUES = ['all', 'read'] as const;
export const MAX_TOKEN_LIFETIME_DAYS = 3650;

const checkLifetime = (value: unknown): string | null =>
  value === undefined ||
  value === null ||
  (Number.isInteger(value) && (value as number) >= 1 && (value as number) <= MAX_TOKEN_LIFETIME_DAYS)
    ? null
    : `must be a whole number of days from 1 to ${MAX_TOKEN_LIFETIME_DAYS}, or null`;

const checkScopes = (value: unknown): string | null => {
  if (value === undefined) return null;
  if (!Array.isArray(value) || value.length === 0) return 'must be a non-empty list of token scopes';
  return value.every((v) => (TOKEN_SCOPE_VALUES as readonly unknown[]).includes(v))
    ? null
    : `each scope must be one of ${TOKEN_SCOPE_VALUES.join(', ')}`;
};

const LIFETIME_DOC = {
  type: Number,
  nullable: true,
  minimum: 1,
  maximum: MAX_TOKEN_LIFETIME_DAYS,
  description:
    'Personal access tokens created more than this many days ago are refused (403) in the organization; null: no limit',
  example: 90,
};
const SCOPES_DOC: ApiPropertyOptions = {
  isArray: true,
  enum: [...TOKEN_SCOPE_VALUES],
  description: 'The personal access token scopes accepted in the organization (others: 403)',
  example: ['read'],
};

/** `PATCH .../policies`: only the fields sent change; an empty body changes nothing. */
export class UpdateOrgPolicyDto {
  /** A misspelt policy must not pass silently as "nothing changed". */
  static readonly unknownFieldMessage = () => 'is not an organization policy';

  @BooleanField({ description: 'Members must have two-factor sign-in on to work in the organization' })
  require_two_factor?: boolean;

  @applyDecorators(
    CustomField('maxTokenLifetime', checkLifetime),
    ApiProperty({ ...LIFETIME_DOC, required: false }),
  )
  max_token_lifetime_days?: number | null;

  @applyDecorators(
    CustomField('allowedTokenScopes', checkScopes),
    ApiProperty({ ...SCOPES_DOC, required: false }),
  )
  allowed_token_scopes?: string[];
}

export class OrgPolicyView {
  @ApiProperty({ description: 'Members must have two-factor sign-in on to work in the organization' })
  require_two_factor: boolean;
  @ApiProperty(LIFETIME_DOC) max_token_lifetime_days: number | null;
  @ApiProperty(SCOPES_DOC) allowed_token_scopes: string[];
  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'Null: never changed' })
  updated_at: string | null;
}

export class MemberSecurityView {
  @ApiProperty({ example: 'ada@example.com' }) email: string;
  @ApiProperty({ example: 'Ada Lovelace' }) name: string;
  @ApiProperty({ enum: ['view', 'manage', 'admin'] }) role: Role;
  @ApiProperty({ description: 'Whether the member has two-factor sign-in on' }) two_factor: boolean;
  @ApiProperty({
    description: 'Whether the member meets the organization’s sign-in policy (can work in it)',
  })
  compliant: boolean;
}
