import { Injectable, type PipeTransform } from '@nestjs/common';
import type { RawQuery } from '../../common/http/page-request';
import { type IrohListQuery, parseIrohListQuery } from '../iroh-list.query';

export type { IrohListQuery } from '../iroh-list.query';

/** Turns the raw query into an IrohListQuery (or a 422) before the handler runs. */
@Injectable()
export class IrohListQueryPipe implements PipeTransform<unknown, IrohListQuery> {
  transform(value: unknown): IrohListQuery {
    return parseIrohListQuery(typeof value === 'object' && value !== null ? (value as RawQuery) : {});
  }
}
