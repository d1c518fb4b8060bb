import { ApiProperty } from '@nestjs/swagger';
import { StringField } from '../../common/validation/fields';

export class StartCliSessionDto {
  @StringField({
    max: 255,
    nullable: true,
    doc: { description: 'The note of the API token the sign-in mints', example: 'nerves_hub_cli 3.1.0' },
  })
  note?: string | null;
}

export class CliSessionView {
  @ApiProperty({
    description: 'What the CLI polls `GET /api/auth/cli_session/{token}` with; keep it secret',
    example: 'q3N0v6dZ0bV0yq1uQkS8mW7vQhC8o2rX9fJ5tL1pY4E',
  })
  token: string;

  @ApiProperty({
    description: 'The page where the user signs in and approves, on this server',
    example: 'https://fleethub.example.com/auth/cli/q3N0v6dZ0bV0yq1uQkS8mW7vQhC8o2rX9fJ5tL1pY4E',
  })
  url: string;

  @ApiProperty({
    description: 'Six digits the CLI shows and the user types on that page',
    example: '312812',
  })
  confirmation_code: string;
}

export class CliSessionStatusView {
  @ApiProperty({ enum: ['waiting', 'ready'], example: 'ready' })
  status: 'waiting' | 'ready';

  @ApiProperty({
    required: false,
    description:
      'Once `ready`: a new API token of the user who approved (`rendering: nerveshub`), in this answer only',
    example: 'nhu_4Vq0mWcC9yGm1ZpQ3xTkRb7nHs2LdJf8aEoUiY6tB5vXw3pT9k',
  })
  user_token?: string;
}
