import type { GroupCountsRow } from './deployment-groups.repository';
import type { DeploymentCountsView } from './dto/deployment-group.dto';

/** A group's `counts` as the API shows them (the group API and the console's live events alike). */
export function countsView(
  row: Pick<
    GroupCountsRow,
    'device_count' | 'updating_count' | 'updated_count' | 'blocked_count' | 'release_failed_count'
  >,
): DeploymentCountsView {
  return {
    devices: row.device_count,
    updating: row.updating_count,
    updated: row.updated_count,
    failed: row.release_failed_count ?? 0,
    blocked: row.blocked_count,
  };
}
