import { Body, Controller, Get, Ip, Param, Post, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Response } from 'express';
import { CurrentFormCsrf, type FormCsrf } from '../common/http/form-csrf';
import { answerPage, PageRoute } from '../common/http/page-route';
import { invitationPage } from './invitation-page';
import { type InvitationForm, InvitationsService } from './invitations.service';

/** The HTML page of an invitation's link (a page, not API: left out of the OpenAPI document). */
@ApiExcludeController()
@Controller('invitations/:token')
export class InvitationPageController {
  constructor(private readonly invitations: InvitationsService) {}

  @Get()
  @PageRoute()
  async show(
    @Param('token') token: string,
    @CurrentFormCsrf() csrf: FormCsrf,
    @Res({ passthrough: true }) res: Response,
  ) {
    return answerPage(res, invitationPage(await this.invitations.page(token), csrf.token));
  }

  @Post()
  @PageRoute()
  async accept(
    @Param('token') token: string,
    @Body() form: InvitationForm,
    @CurrentFormCsrf() csrf: FormCsrf,
    @Ip() ip: string,
    @Res({ passthrough: true }) res: Response,
  ) {
    return answerPage(
      res,
      invitationPage(await this.invitations.accept(token, form, csrf.passed, ip), csrf.token),
    );
  }
}
