import type { INestApplication } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import express from 'express';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * The paths the console's own router draws (web/src/app.tsx): each answers the console's index.html, so that a
 * link to a page can be shared and reloaded. Everything else stays the API's (its 404 included).
 */
export const CONSOLE_PAGE = /^\/(?:$|sign-in$|account$|orgs(?:\/|$))/;
/** Where the build's hashed files are served. */
export const ASSETS_PATH = '/assets';

/** The console's build (`npm run build`: dist/web), found from this file in a checkout or in dist; null if absent. */
export function findConsoleBuild(from = __dirname): string | null {
  for (let dir = from; dirname(dir) !== dir; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) {
      const build = join(dir, 'dist', 'web');
      return existsSync(join(build, 'index.html')) ? build : null;
    }
  }
  return null;
}

/**
 * Serves the operator console at `/` from its build: the hashed files under /assets/ with a year of immutable
 * caching (their names change with their content), and index.html, never cached, for every console page. GET and
 * HEAD only; nothing here touches `/api`. Answers false when there is no build to serve.
 */
export function serveConsole(app: INestApplication, build: string | null): boolean {
  if (build === null) return false;
  const index = readFileSync(join(build, 'index.html'));
  app.use(
    ASSETS_PATH,
    express.static(join(build, 'assets'), {
      immutable: true,
      maxAge: '365d',
      index: false,
      redirect: false,
      dotfiles: 'ignore',
    }),
  );
  app.use((req: Request, res: Response, next: NextFunction) => {
    if ((req.method !== 'GET' && req.method !== 'HEAD') || !CONSOLE_PAGE.test(req.path)) return next();
    res.setHeader('Content-Type', 'text/html; charset=utf-8');
    res.setHeader('Cache-Control', 'no-cache');
    res.setHeader('Content-Length', index.length);
    res.end(req.method === 'HEAD' ? undefined : index);
  });
  return true;
}
