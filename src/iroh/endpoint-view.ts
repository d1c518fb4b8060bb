import { isoOrNull } from '../common/values';
import type { IrohEndpointView } from './dto/iroh-endpoint.view';
import type { IrohSource } from './iroh-endpoint.entity';

/** The one service of the endpoints this API manages. */
export const IROH_SERVICE = 'iroh';

export const IROH_OWNER_TYPES = ['device', 'user', 'none'] as const;
export type IrohOwnerType = (typeof IROH_OWNER_TYPES)[number];

/** One endpoint with what holds it, as the record queries select it. */
export interface EndpointRow {
  identifier: string;
  service: string;
  instance: string;
  details: Record<string, unknown>;
  source: IrohSource;
  device_id: string | null;
  user_id: string | null;
  device_identifier: string | null;
  user_email: string | null;
  user_name: string | null;
  last_reported_at: Date | null;
  inserted_at: Date;
  updated_at: Date;
}

/** The columns of EndpointRow, for `FROM iroh_endpoints e LEFT JOIN devices d ... LEFT JOIN users u ...`. */
export const RECORD_COLUMNS = `e.identifier, e.service, e.instance, e.details, e.source, e.device_id, e.user_id,
  d.identifier AS device_identifier, u.email AS user_email, u.name AS user_name,
  e.last_reported_at, e.inserted_at, e.updated_at`;

export const OWNER_JOINS = `LEFT JOIN devices d ON d.id = e.device_id LEFT JOIN users u ON u.id = e.user_id`;

export function ownerType(row: Pick<EndpointRow, 'device_id' | 'user_id'>): IrohOwnerType {
  if (row.device_id !== null) return 'device';
  return row.user_id !== null ? 'user' : 'none';
}

export function endpointView(row: EndpointRow): IrohEndpointView {
  const type = ownerType(row);
  return {
    identifier: row.identifier,
    service: row.service,
    instance: row.instance,
    details: row.details,
    source: row.source,
    owner: {
      type,
      device_identifier: type === 'device' ? row.device_identifier : null,
      user_email: type === 'user' ? row.user_email : null,
      user_name: type === 'user' ? row.user_name : null,
    },
    last_reported_at: isoOrNull(row.last_reported_at),
    inserted_at: row.inserted_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}
