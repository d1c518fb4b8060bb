import { ApiProperty } from '@nestjs/swagger';
import { SignInCodeField } from '../../auth/dto/two-factor.dto';
import { StringField } from '../../common/validation/fields';

export class SignInDto {
  @StringField({ required: true, max: 320, doc: { example: 'ada@example.com' } })
  email: string;

  @StringField({ required: true, max: 1024, trim: false, doc: { example: 'correct horse battery staple' } })
  password: string;

  @SignInCodeField()
  code?: string | null;
}

export class SessionView {
  @ApiProperty({ example: 'ada' }) username: string;
  @ApiProperty({ example: 'ada@example.com' }) email: string;
  @ApiProperty({ example: 'Ada Lovelace' }) name: string;

  @ApiProperty({
    description: 'Send it as `X-CSRF-Token` with every change made with the session cookie',
    example: 'mJ0c3Qm8Yg2xV9sK1pD4rT7uW6zA5bN0eH3fL8qC2oI',
  })
  csrf_token: string;

  @ApiProperty({
    format: 'date-time',
    description: 'When the session ends however much it is used (sign-in + `FLEETHUB_SESSION_MAX_HOURS`)',
    example: '2026-11-22T15:04:05.123Z',
  })
  expires_at: string;

  @ApiProperty({
    format: 'date-time',
    description:
      'When the session ends if it is not used before (`FLEETHUB_SESSION_IDLE_MINUTES` after its last use, ' +
      'recorded to the minute); never after `expires_at`',
    example: '2026-11-22T04:04:05.123Z',
  })
  idle_expires_at: string;
}

export class BrowserSessionView {
  @ApiProperty({ description: 'Session id (a numeric string)', example: '42' }) id: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-22T03:04:05.123Z' }) inserted_at: string;

  @ApiProperty({
    format: 'date-time',
    description: 'Last use, to the minute',
    example: '2026-11-22T03:44:05.123Z',
  })
  last_seen_at: string;

  @ApiProperty({ format: 'date-time', example: '2026-11-22T15:04:05.123Z' }) expires_at: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-22T04:44:05.123Z' }) idle_expires_at: string;

  @ApiProperty({
    type: String,
    nullable: true,
    description: "The browser's User-Agent at sign-in (first 255 characters)",
    example: 'Mozilla/5.0 (X11; Linux x86_64; rv:140.0) Gecko/20100101 Firefox/140.0',
  })
  user_agent: string | null;

  @ApiProperty({ type: String, nullable: true, example: '192.0.2.10' }) source_address: string | null;

  @ApiProperty({ description: 'True for the session whose cookie made this request', example: true })
  current: boolean;
}
