import { Injectable, type PipeTransform } from '@nestjs/common';
import { DomainError } from '../../common/errors/domain-error';
import { type PageRequest, parsePageRequest, type RawQuery } from '../../common/http/pagination';

const PAGE_KEYS = ['pagination[page]', 'pagination[page_size]', 'page', 'page_size'];

/** `GET .../webhooks/{webhook_id}/deliveries`: the page; any other parameter is a 422 naming it. */
@Injectable()
export class WebhookDeliveriesQueryPipe implements PipeTransform<unknown, PageRequest> {
  transform(value: unknown): PageRequest {
    const query = typeof value === 'object' && value !== null ? (value as RawQuery) : {};
    for (const key of Object.keys(query)) {
      if (!PAGE_KEYS.includes(key)) throw DomainError.invalidField(key, 'is not a known parameter');
    }
    return parsePageRequest(query);
  }
}
