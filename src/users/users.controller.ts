import { Controller, Get } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { Actor } from '../common/auth/actor';
import { CurrentActor, Route } from '../common/auth/decorators';
import { ApiOperationDoc } from '../common/openapi/api-docs';
import { UserView } from './dto/user.view';
import { UsersService } from './users.service';

@ApiTags('Auth')
@Controller('api/users')
export class UsersController {
  constructor(private readonly users: UsersService) {}

  @Get('me')
  @Route('users.me')
  @ApiOperationDoc({ summary: 'Verify a token: the user it belongs to', data: UserView })
  me(@CurrentActor() actor: Actor) {
    return this.users.me(actor);
  }
}
