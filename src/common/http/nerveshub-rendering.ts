import { SetMetadata } from '@nestjs/common';

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

export const RENDERS_NERVESHUB_TAGS = 'fleethub:renders-nerveshub-tags';

/**
 * On a controller whose records have `tags`: for tokens whose `rendering` is `nerveshub` (docs/decisions.md,
 * "NervesHub's renderings"), the device and script records its routes answer carry `tags` as a list, as
 * NervesHub's clients read them; other tokens get the spec's comma-separated string, untouched. The guard, which
 * reads each route's metadata once and knows the token, marks the request (`rendersNervesHubTags`), and the JSON
 * reply renders the body (src/common/http/json-reply.ts): no interceptor, which would put every request of these
 * routes through Nest's AsyncResource binding and an rxjs pipeline.
 */
export const RendersNervesHubTags = () => SetMetadata(RENDERS_NERVESHUB_TAGS, true);
