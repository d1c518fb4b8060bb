import {
  type CallHandler,
  type ExecutionContext,
  Injectable,
  type NestInterceptor,
  UseInterceptors,
} from '@nestjs/common';
import { map, type Observable } from 'rxjs';
import type { AuthenticatedRequest } from '../auth/decorators';

type Rendered = Record<string, unknown>;

function tagsAsList(item: unknown): unknown {
  if (typeof item !== 'object' || item === null || typeof (item as Rendered).tags !== 'string') return item;
  const tags = (item as Rendered).tags as string;
  return { ...(item as Rendered), tags: tags === '' ? [] : tags.split(',') };
}

/** `{data: ...}` with the `tags` string of its record (or of each listed record) as NervesHub's list. */
export function renderNervesHubTags(body: unknown): unknown {
  if (typeof body !== 'object' || body === null || !('data' in body)) return body;
  const data = (body as Rendered).data;
  return { ...(body as Rendered), data: Array.isArray(data) ? data.map(tagsAsList) : tagsAsList(data) };
}

/**
 * For tokens whose `rendering` is `nerveshub` (docs/decisions.md, "NervesHub's renderings"): the device and
 * script records these routes answer carry `tags` as a list, as NervesHub's clients read them. Other tokens get
 * the spec's comma-separated string, untouched.
 */
@Injectable()
export class NervesHubRenderingInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const actor = context.switchToHttp().getRequest<AuthenticatedRequest>().actor;
    if (actor?.rendering !== 'nerveshub') return next.handle();
    return next.handle().pipe(map(renderNervesHubTags));
  }
}

/** On a controller whose records have `tags`: NervesHub's list rendering for `nerveshub` tokens. */
export const RendersNervesHubTags = () => UseInterceptors(NervesHubRenderingInterceptor);
