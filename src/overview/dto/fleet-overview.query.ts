import { Injectable, type PipeTransform } from '@nestjs/common';
import { DomainError } from '../../common/errors/domain-error';
import type { RawQuery } from '../../common/http/page-request';

export const DEFAULT_HOURS = 24;
export const MAX_HOURS = 24 * 7;

export interface FleetOverviewQuery {
  /** How far back "connected over time" goes. */
  hours: number;
}

/** `?hours=` (1–168, default 24); any other parameter, or a bad value, is a 422 naming it. */
@Injectable()
export class FleetOverviewQueryPipe implements PipeTransform<unknown, FleetOverviewQuery> {
  transform(value: unknown): FleetOverviewQuery {
    const query: RawQuery = typeof value === 'object' && value !== null ? (value as RawQuery) : {};
    for (const key of Object.keys(query)) {
      if (key !== 'hours') throw DomainError.invalidField(key, 'is not a known parameter');
    }
    const raw = query.hours;
    if (raw === undefined || (typeof raw === 'string' && raw.trim() === '')) return { hours: DEFAULT_HOURS };
    const text = typeof raw === 'string' ? raw.trim() : '';
    if (!/^\d{1,4}$/.test(text) || Number(text) < 1 || Number(text) > MAX_HOURS) {
      throw DomainError.invalidField('hours', `must be an integer from 1 to ${MAX_HOURS}`);
    }
    return { hours: Number(text) };
  }
}
