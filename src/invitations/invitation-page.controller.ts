import { Body, Controller, Get, Header, Ip, Param, Post, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Response } from 'express';
import { Public } from '../common/auth/decorators';
import { CurrentFormCsrf, type FormCsrf } from '../common/http/form-csrf';
import { invitationPage } from './invitation-page';
import { type InvitationForm, InvitationsService } from './invitations.service';

/** The HTML page of an invitation's link (a page, not API: left out of the OpenAPI document). */
@ApiExcludeController()
@Controller('invitations/:token')
export class InvitationPageController {
  constructor(private readonly invitations: InvitationsService) {}

  @Get()
  @Public()
  @Header('Content-Type', 'text/html; charset=utf-8')
  @Header('Cache-Control', 'no-store')
  async show(
    @Param('token') token: string,
    @CurrentFormCsrf() csrf: FormCsrf,
    @Res({ passthrough: true }) res: Response,
  ) {
    const page = invitationPage(await this.invitations.page(token), csrf.token);
    res.status(page.status);
    return page.html;
  }

  @Post()
  @Public()
  @Header('Content-Type', 'text/html; charset=utf-8')
  @Header('Cache-Control', 'no-store')
  async accept(
    @Param('token') token: string,
    @Body() form: InvitationForm,
    @CurrentFormCsrf() csrf: FormCsrf,
    @Ip() ip: string,
    @Res({ passthrough: true }) res: Response,
  ) {
    const page = invitationPage(await this.invitations.accept(token, form, csrf.passed, ip), csrf.token);
    res.status(page.status);
    return page.html;
  }
}
