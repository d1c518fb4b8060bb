import { Body, Controller, Ip, Post, HttpCode } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { Public } from '../common/auth/decorators';
import { ApiOperationDoc } from '../common/openapi/api-docs';
import { AuthService } from './auth.service';
import { LoginDto, LoginResultView } from './dto/login.dto';

@ApiTags('Auth')
@Controller('api/users')
export class AuthController {
  constructor(private readonly auth: AuthService) {}

  @Post('auth')
  @Public()
  @ApiOperationDoc({
    summary: 'Exchange an email and password for a new personal access token',
    description:
      'Extension of 2.0.0. Wrong credentials answer 401 whether or not the email exists. Rate limited.',
    data: LoginResultView,
    isPublic: true,
    errors: [400, 401, 413, 422, 429],
  })
  @HttpCode(200)
  login(@Body() body: LoginDto, @Ip() ip: string) {
    return this.auth.login(body, ip);
  }

  @Post('login')
  @Public()
  @ApiOperationDoc({
    summary: 'Exchange an email and password for a new personal access token (deprecated alias)',
    description:
      "NervesHub's older name for `POST /api/users/auth`: the same body, answers and rate limit, but the token " +
      "renders NervesHub's shapes (`rendering: nerveshub`: `tags` of devices and scripts as lists), since only " +
      "NervesHub's clients call this route. Use `/api/users/auth`.",
    data: LoginResultView,
    isPublic: true,
    errors: [400, 401, 413, 422, 429],
    deprecated: true,
  })
  @HttpCode(200)
  loginDeprecated(@Body() body: LoginDto, @Ip() ip: string) {
    return this.auth.login(body, ip, 'nerveshub');
  }
}
