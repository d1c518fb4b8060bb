import { Injectable, type PipeTransform } from '@nestjs/common';
import { DomainError } from '../../common/errors/domain-error';
import type { RawQuery } from '../../common/http/page-request';
import { isUnstorableText } from '../../common/values';

/**
 * `GET .../events` parameters: `device`, the identifier of a device whose console and logs the stream carries;
 * `overview`, whether it carries the fleet overview's counters (`product.overview`).
 */
export interface EventsQuery {
  device?: string;
  overview?: boolean;
}

/**
 * Parses the query: `device` is one string of 1–255 characters, `overview` `true` or `false`; anything else is a
 * 422 naming it.
 */
@Injectable()
export class EventsQueryPipe implements PipeTransform<unknown, EventsQuery> {
  transform(value: unknown): EventsQuery {
    const query = (typeof value === 'object' && value !== null ? value : {}) as RawQuery;
    for (const key of Object.keys(query)) {
      if (key !== 'device' && key !== 'overview') {
        throw DomainError.invalidField(key, 'is not a known parameter');
      }
    }
    const parsed: EventsQuery = {};
    const overview = query.overview;
    if (overview !== undefined) {
      if (overview !== 'true' && overview !== 'false') {
        throw DomainError.invalidField('overview', 'must be true or false');
      }
      parsed.overview = overview === 'true';
    }
    const device = query.device;
    if (device === undefined) return parsed;
    if (typeof device !== 'string') throw DomainError.invalidField('device', 'must be a single string');
    if (device === '' || device.length > 255 || isUnstorableText(device)) {
      throw DomainError.invalidField('device', 'must be a device identifier (1 to 255 characters)');
    }
    return { ...parsed, device };
  }
}
