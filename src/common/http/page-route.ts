import { applyDecorators, Header } from '@nestjs/common';
import type { Response } from 'express';
import { Public } from '../auth/decorators';
import type { HtmlPage } from './html-page';

/** A route answering a server-rendered page the browser reaches without a token: HTML, never cached. */
export function PageRoute(): MethodDecorator {
  return applyDecorators(
    Public(),
    Header('Content-Type', 'text/html; charset=utf-8'),
    Header('Cache-Control', 'no-store'),
  );
}

/** Sets the page's status on `res` and answers its HTML. */
export function answerPage(res: Response, page: HtmlPage): string {
  res.status(page.status);
  return page.html;
}
