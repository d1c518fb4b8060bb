import { ApiProperty } from '@nestjs/swagger';
import { ROLES, type Role } from '../../common/auth/roles';
import { EnumField, StringField } from '../../common/validation/fields';

export class AddMemberDto {
  @StringField({
    required: true,
    max: 320,
    doc: { example: 'grace@example.com', description: 'A registered user' },
  })
  email: string;

  @EnumField(ROLES, { required: true, doc: { example: 'manage' } })
  role: Role;
}

export class UpdateMemberDto {
  @EnumField(ROLES, { required: true, doc: { example: 'admin' } })
  role: Role;
}

export class MemberView {
  @ApiProperty({ example: 'grace@example.com' }) email: string;
  @ApiProperty({ example: 'Grace Hopper' }) name: string;
  @ApiProperty({ enum: ROLES, example: 'manage' }) role: Role;
}

export class CredentialsEndedView {
  @ApiProperty({ description: 'Browser sessions ended', example: 2 }) sessions_ended: number;
  @ApiProperty({ description: 'Personal access tokens revoked', example: 3 }) tokens_revoked: number;
}
