import { Injectable, type PipeTransform } from '@nestjs/common';
import type { RawQuery } from '../../common/http/page-request';
import { type DeviceListQuery, parseDeviceListQuery } from '../device-list.query';

export type { DeviceListQuery } from '../device-list.query';

/** Turns the raw query into a DeviceListQuery (or a 422) before the handler runs. */
@Injectable()
export class DeviceListQueryPipe implements PipeTransform<unknown, DeviceListQuery> {
  transform(value: unknown): DeviceListQuery {
    return parseDeviceListQuery(typeof value === 'object' && value !== null ? (value as RawQuery) : {});
  }
}
