import { Body, Controller, Get, Header, Ip, Param, Post, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Response } from 'express';
import { Public } from '../common/auth/decorators';
import { CurrentFormCsrf, type FormCsrf } from '../common/http/form-csrf';
import { cliSessionPage } from './cli-session-page';
import { type CliSessionForm, CliSessionsService } from './cli-sessions.service';

/** The HTML page at a CLI session's `url` (a page, not API: left out of the OpenAPI document). */
@ApiExcludeController()
@Controller('auth/cli/:token')
export class CliSessionPageController {
  constructor(private readonly sessions: CliSessionsService) {}

  @Get()
  @Public()
  @Header('Content-Type', 'text/html; charset=utf-8')
  @Header('Cache-Control', 'no-store')
  async show(
    @Param('token') token: string,
    @CurrentFormCsrf() csrf: FormCsrf,
    @Res({ passthrough: true }) res: Response,
  ) {
    const page = cliSessionPage(await this.sessions.page(token), csrf.token);
    res.status(page.status);
    return page.html;
  }

  @Post()
  @Public()
  @Header('Content-Type', 'text/html; charset=utf-8')
  @Header('Cache-Control', 'no-store')
  async submit(
    @Param('token') token: string,
    @Body() form: CliSessionForm,
    @CurrentFormCsrf() csrf: FormCsrf,
    @Ip() ip: string,
    @Res({ passthrough: true }) res: Response,
  ) {
    const page = cliSessionPage(await this.sessions.submit(token, form, csrf.passed, ip), csrf.token);
    res.status(page.status);
    return page.html;
  }
}
