import { ApiProperty } from '@nestjs/swagger';

export class UserView {
  @ApiProperty({ example: 'ada' }) username: string;
  @ApiProperty({ example: 'ada@example.com' }) email: string;
  @ApiProperty({ example: 'Ada Lovelace' }) name: string;
}
