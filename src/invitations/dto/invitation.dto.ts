import { ApiProperty } from '@nestjs/swagger';
import { ROLES, type Role } from '../../common/auth/roles';

export class InvitationView {
  @ApiProperty({ example: 'grace@example.com' }) email: string;
  @ApiProperty({ enum: ROLES, example: 'manage' }) role: Role;

  @ApiProperty({
    type: String,
    nullable: true,
    example: 'ada@example.com',
    description: 'Who invited (null: that account is gone)',
  })
  invited_by: string | null;

  @ApiProperty({
    example: 'https://fleethub.example.com/invitations/Yk3...',
    description:
      'Where the invited person creates their account and joins; whoever has it can, until it expires',
  })
  url: string;

  @ApiProperty({ example: '2026-11-24T03:04:05.123Z' }) expires_at: string;
  @ApiProperty({ example: '2026-11-22T03:04:05.123Z' }) inserted_at: string;
}
