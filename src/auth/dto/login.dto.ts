import { ApiProperty } from '@nestjs/swagger';
import { StringField } from '../../common/validation/fields';
import { SignInCodeField } from './two-factor.dto';

export class LoginDto {
  @StringField({ required: true, max: 320, doc: { example: 'ada@example.com' } })
  email: string;

  @StringField({ required: true, max: 1024, trim: false, doc: { example: 'correct horse battery staple' } })
  password: string;

  @StringField({
    max: 255,
    nullable: true,
    doc: { description: 'A note to recognise the token by', example: 'ci' },
  })
  note?: string | null;

  @SignInCodeField()
  code?: string | null;
}

export class LoginResultView {
  @ApiProperty({ example: 'ada' }) username: string;
  @ApiProperty({ example: 'ada@example.com' }) email: string;
  @ApiProperty({ example: 'Ada Lovelace' }) name: string;
  @ApiProperty({ description: 'A new personal access token, shown only now', example: 'nhu_...' })
  token: string;
}
