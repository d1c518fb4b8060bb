import { isoOrNull } from '../common/values';
import type { ConnectionStatus, FirmwareMetadata } from './device.entity';
import type { DeviceView, FirmwareMetadataView } from './dto/device.dto';

/** The columns every device query selects, in the shape `deviceView` reads. */
export const DEVICE_COLUMNS = `
  d.identifier, d.description, d.tags, d.firmware_version, d.connection_status, d.last_communication,
  d.updates_enabled, d.updates_blocked_until, d.firmware_metadata,
  (SELECT o.name FROM orgs o WHERE o.id = d.org_id) AS org_name,
  (SELECT p.name FROM products p WHERE p.id = d.product_id) AS product_name,
  dg.name AS deployment_group_name, dg.is_active AS deployment_group_is_active,
  dg.firmware_uuid AS deployment_group_firmware_uuid, dg.firmware_version AS deployment_group_firmware_version`;

/**
 * The device with its deployment group, if any. The names and the group are subqueries rather than joins: with
 * seven relations in one join PostgreSQL spent ~2.3 ms planning the device list for 0.2 ms of execution (the page
 * of a 1,000,000-device product, docs/decisions.md "Device queries: planning time"); `OFFSET 0` keeps the group's
 * four-table lookup planned on its own.
 */
export const DEVICE_FROM = `devices d
  LEFT JOIN LATERAL (
    SELECT g.name, g.is_active, f.uuid::text AS firmware_uuid, f.version AS firmware_version
      FROM deployment_group_members m
      JOIN deployment_groups g ON g.id = m.deployment_group_id
      LEFT JOIN deployment_releases r ON r.id = g.current_release_id
      LEFT JOIN firmwares f ON f.id = r.firmware_id
     WHERE m.device_id = d.id
    OFFSET 0) dg ON true`;

export interface DeviceRow {
  identifier: string;
  description: string | null;
  tags: string[];
  firmware_version: string | null;
  connection_status: ConnectionStatus;
  last_communication: Date | null;
  updates_enabled: boolean;
  updates_blocked_until: Date | null;
  firmware_metadata: FirmwareMetadata | null;
  org_name: string;
  product_name: string;
  deployment_group_name: string | null;
  deployment_group_is_active: boolean | null;
  deployment_group_firmware_uuid: string | null;
  deployment_group_firmware_version: string | null;
}

const METADATA_KEYS: (keyof FirmwareMetadataView)[] = [
  'id',
  'uuid',
  'product',
  'platform',
  'architecture',
  'version',
  'author',
  'description',
  'misc',
  'vcs_identifier',
  'fwup_version',
];

function metadataView(metadata: FirmwareMetadata | null): FirmwareMetadataView | null {
  if (!metadata) return null;
  const view = {} as FirmwareMetadataView;
  for (const key of METADATA_KEYS) {
    const value = metadata[key];
    view[key] = typeof value === 'string' ? value : null;
  }
  return view;
}

export function deviceView(row: DeviceRow): DeviceView {
  return {
    identifier: row.identifier,
    org_name: row.org_name,
    product_name: row.product_name,
    description: row.description,
    tags: row.tags.join(','),
    version: row.firmware_version,
    connection_status: row.connection_status,
    online: row.connection_status === 'connected',
    last_communication: isoOrNull(row.last_communication),
    updates_enabled: row.updates_enabled,
    updates_blocked_until: isoOrNull(row.updates_blocked_until),
    deployment_group:
      row.deployment_group_name === null
        ? null
        : {
            name: row.deployment_group_name,
            is_active: row.deployment_group_is_active ?? false,
            firmware_uuid: row.deployment_group_firmware_uuid ?? '',
            firmware_version: row.deployment_group_firmware_version ?? '',
          },
    firmware_metadata: metadataView(row.firmware_metadata),
  };
}
