import type { FirmwareDeltaView } from './dto/firmware-delta.dto';
import type { FirmwareDeltaRow } from './firmware-deltas.repository';

const count = (value: string | null): number | null => (value === null ? null : Number(value));

export function firmwareDeltaView(row: FirmwareDeltaRow): FirmwareDeltaView {
  const size = count(row.size);
  const targetSize = count(row.target_size);
  return {
    source_uuid: row.source_uuid,
    source_version: row.source_version,
    target_uuid: row.target_uuid,
    target_version: row.target_version,
    state: row.state,
    attempts: row.attempts,
    error: row.error,
    size,
    source_size: count(row.source_size),
    target_size: targetSize,
    saved_bytes: size !== null && targetSize !== null ? targetSize - size : null,
    fwup_version: row.fwup_version,
    build_ms: row.build_ms,
    inserted_at: row.inserted_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}
