import { Body, Controller, Delete, Get, Param, Post, HttpCode } from '@nestjs/common';
import { SetsLocation } from '../common/http/created';
import { ApiBody, ApiParam, ApiTags } from '@nestjs/swagger';
import type { Actor } from '../common/auth/actor';
import { CurrentActor, Route } from '../common/auth/decorators';
import { ApiOperationDoc } from '../common/openapi/api-docs';
import { CreateTokenDto, TokenCreatedView, TokenView } from './dto/token.dto';
import { TokensService } from './tokens.service';

@ApiTags('Auth')
@Controller('api/users/me/tokens')
export class TokensController {
  constructor(private readonly tokens: TokensService) {}

  @Get()
  @Route('tokens.list')
  @ApiOperationDoc({
    summary: "List the caller's personal access tokens",
    description:
      'Extension of 2.0.0. Newest first; expired tokens are listed (their `expires_at` is past), revoked ones ' +
      'are not. Never the tokens themselves.',
    data: [TokenView],
  })
  list(@CurrentActor() actor: Actor) {
    return this.tokens.listForUser(actor);
  }

  @Post()
  @Route('tokens.create')
  @ApiOperationDoc({
    summary: 'Create a personal access token for the caller',
    description:
      'Extension of 2.0.0. The token is in this response only; it cannot be shown again. A `read` token ' +
      'cannot create tokens (403).',
    status: 201,
    data: TokenCreatedView,
    errors: [400, 413, 422],
    headers: { Location: { description: '/api/users/me/tokens/{id}' } },
  })
  @ApiBody({
    type: CreateTokenDto,
    required: false,
    description: 'Every field is optional; no body at all is fine',
  })
  @SetsLocation()
  create(@CurrentActor() actor: Actor, @Body() body: CreateTokenDto) {
    return this.tokens.createForUser(actor, body);
  }

  @Delete(':id')
  @Route('tokens.revoke')
  @ApiParam({ name: 'id', description: 'Token id (a numeric string, from the list)' })
  @ApiOperationDoc({
    summary: "Revoke one of the caller's personal access tokens",
    description:
      'Extension of 2.0.0. From the answer on, every instance refuses the token (401). Revoking a revoked ' +
      "token answers 204 again; an unknown id or another user's token is a 404. A `read` token cannot " +
      'revoke tokens (403). The token making the call may revoke itself.',
    status: 204,
  })
  @HttpCode(204)
  revoke(@CurrentActor() actor: Actor, @Param('id') id: string) {
    return this.tokens.revokeForUser(actor, id);
  }
}
