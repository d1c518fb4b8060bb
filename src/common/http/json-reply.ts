import type { INestApplication } from '@nestjs/common';
import type { ExpressAdapter } from '@nestjs/platform-express';
import type { Response } from 'express';
import type { AuthenticatedRequest } from '../auth/decorators';
import { renderNervesHubTags } from './nerveshub-rendering';

type Reply = (response: Response, body: unknown, statusCode?: number) => unknown;

function isPlainJson(body: unknown): body is object {
  if (typeof body !== 'object' || body === null) return false;
  const proto: unknown = Object.getPrototypeOf(body);
  return proto === Object.prototype || proto === Array.prototype;
}

/**
 * Handlers return plain `{ data: ... }` objects; Express's `res.json()` → `res.send()` reparses the Content-Type it
 * has just set, checks freshness and rebuilds headers on every response. For a plain object on a GET/POST/...
 * without conditional headers, this writes the same bytes and headers (`application/json; charset=utf-8`,
 * Content-Length) directly. Anything else (HEAD, a Content-Type already set, 204/304, streams, `If-None-Match` /
 * `If-Modified-Since`, class instances) goes through Nest's usual reply unchanged. Either way, a request the guard
 * marked for NervesHub's rendering gets its records' `tags` as lists (RendersNervesHubTags).
 */
export function replyJsonDirectly(app: INestApplication): void {
  const adapter = app.getHttpAdapter() as unknown as ExpressAdapter;
  const usual = adapter.reply.bind(adapter) as Reply;
  const reply: Reply = (response, answer, statusCode) => {
    const body = (response.req as AuthenticatedRequest).rendersNervesHubTags
      ? renderNervesHubTags(answer)
      : answer;
    const headers = response.req.headers;
    if (
      !isPlainJson(body) ||
      response.req.method === 'HEAD' ||
      response.hasHeader('content-type') ||
      headers['if-none-match'] !== undefined ||
      headers['if-modified-since'] !== undefined
    ) {
      return usual(response, body, statusCode);
    }
    if (statusCode) response.status(statusCode);
    if (response.statusCode === 204 || response.statusCode === 304) return usual(response, body);
    const json = JSON.stringify(body);
    response.setHeader('Content-Type', 'application/json; charset=utf-8');
    response.setHeader('Content-Length', Buffer.byteLength(json));
    response.end(json);
    return response;
  };
  adapter.reply = reply;
}
