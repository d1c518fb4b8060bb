import { ApiProperty } from '@nestjs/swagger';

/** A new shared secret: the only time the secret is ever shown. */
export class SharedSecretCreatedView {
  @ApiProperty({
    example: 'nhp_4Vq0mWcC9yGm1ZpQ3xTkRb7nHs2LdJf8aEoUiY6tB5v',
    description:
      'Access key devices send in `x-nh-key`: `nhp_` (product) or `nhd_` (device) + 43 Base62 characters',
  })
  key: string;

  @ApiProperty({
    example: 'Xw3pT9kLm2QvB7nR4cZs8YdH1fJg6aEuKo5iNtWb0yV',
    description: 'Shown only in this response; store it on the device (NervesHubLink shared_secret settings)',
  })
  secret: string;

  @ApiProperty({ example: '2026-11-22T03:04:05.123Z' }) inserted_at: string;
}

/** A shared secret as listed: never the secret itself. */
export class SharedSecretView {
  @ApiProperty({ example: 'nhp_4Vq0mWcC9yGm1ZpQ3xTkRb7nHs2LdJf8aEoUiY6tB5v' }) key: string;
  @ApiProperty({ example: '2026-11-22T03:04:05.123Z' }) inserted_at: string;

  @ApiProperty({
    type: String,
    nullable: true,
    example: null,
    description: 'When the key was deactivated; devices can no longer authenticate with it',
  })
  deactivated_at: string | null;
}
