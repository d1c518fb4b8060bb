import { Body, Controller, Get, Ip, Param, Post, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Response } from 'express';
import { CurrentFormCsrf, type FormCsrf } from '../common/http/form-csrf';
import { answerPage, PageRoute } from '../common/http/page-route';
import { cliSessionPage } from './cli-session-page';
import { type CliSessionForm, CliSessionsService } from './cli-sessions.service';

/** The HTML page at a CLI session's `url` (a page, not API: left out of the OpenAPI document). */
@ApiExcludeController()
@Controller('auth/cli/:token')
export class CliSessionPageController {
  constructor(private readonly sessions: CliSessionsService) {}

  @Get()
  @PageRoute()
  async show(
    @Param('token') token: string,
    @CurrentFormCsrf() csrf: FormCsrf,
    @Res({ passthrough: true }) res: Response,
  ) {
    return answerPage(res, cliSessionPage(await this.sessions.page(token), csrf.token));
  }

  @Post()
  @PageRoute()
  async submit(
    @Param('token') token: string,
    @Body() form: CliSessionForm,
    @CurrentFormCsrf() csrf: FormCsrf,
    @Ip() ip: string,
    @Res({ passthrough: true }) res: Response,
  ) {
    return answerPage(
      res,
      cliSessionPage(await this.sessions.submit(token, form, csrf.passed, ip), csrf.token),
    );
  }
}
