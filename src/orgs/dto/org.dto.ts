import { ApiProperty } from '@nestjs/swagger';
import { ROLES, type Role } from '../../common/auth/roles';
import { StringField } from '../../common/validation/fields';

export const ORG_NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

export class CreateOrgDto {
  @StringField({
    required: true,
    pattern: { regex: ORG_NAME_PATTERN, message: 'must be 1-64 characters: letters, digits, "_" or "-"' },
    doc: { example: 'acme', pattern: ORG_NAME_PATTERN.source },
  })
  name: string;
}

export class OrgView {
  @ApiProperty({ example: 'acme' }) name: string;
}

export class OrgWithRoleView {
  @ApiProperty({ example: 'acme' }) name: string;
  @ApiProperty({ enum: ROLES, example: 'admin' }) role: Role;
}
