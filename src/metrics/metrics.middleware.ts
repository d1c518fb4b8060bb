import { Injectable, type NestMiddleware } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { MetricsService, UNMATCHED_ROUTE } from './metrics.service';

/**
 * Times every request and labels it by the route template Express matched (`/api/orgs/:org/products`), never by
 * the raw path, so that the number of label values stays bounded.
 */
@Injectable()
export class MetricsMiddleware implements NestMiddleware {
  constructor(private readonly metrics: MetricsService) {}

  use(req: Request, res: Response, next: NextFunction): void {
    const start = process.hrtime.bigint();
    res.once('finish', () => {
      const route = (req.route as { path?: unknown } | undefined)?.path;
      // Nest answers unknown paths from a catch-all route (`/{*path}`): no route of the API has a wildcard.
      const template =
        typeof route === 'string' && !route.includes('*') ? `${req.baseUrl}${route}` : UNMATCHED_ROUTE;
      const seconds = Number(process.hrtime.bigint() - start) / 1e9;
      this.metrics.observeRequest(template, req.method, res.statusCode, seconds);
    });
    next();
  }
}
