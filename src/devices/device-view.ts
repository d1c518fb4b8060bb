import { isoOrNull } from '../common/values';
import type { ConnectionStatus, FirmwareMetadata } from './device.entity';
import type { DeviceView, FirmwareMetadataView } from './dto/device.dto';

/** The columns every device query selects, in the shape `deviceView` reads. */
export const DEVICE_COLUMNS = `
  d.identifier, d.description, d.tags, d.firmware_version, d.connection_status, d.last_communication,
  d.updates_enabled, d.updates_blocked_until, d.firmware_metadata,
  o.name AS org_name, p.name AS product_name,
  dg.name AS deployment_group_name, dg.is_active AS deployment_group_is_active,
  dgf.uuid::text AS deployment_group_firmware_uuid, dgf.version AS deployment_group_firmware_version`;

/** The device with its product, organization and deployment group (outer joins: a device may have none). */
export const DEVICE_FROM = `devices d JOIN products p ON p.id = d.product_id JOIN orgs o ON o.id = d.org_id
  LEFT JOIN deployment_group_members dgm ON dgm.device_id = d.id
  LEFT JOIN deployment_groups dg ON dg.id = dgm.deployment_group_id
  LEFT JOIN deployment_releases dgr ON dgr.id = dg.current_release_id
  LEFT JOIN firmwares dgf ON dgf.id = dgr.firmware_id`;

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
