import { Injectable } from '@nestjs/common';
import type { Queryable, Tx } from '../database/transactions';
import { DeploymentEvents } from './deployment-events';
import {
  type MembershipGroup,
  type MembershipState,
  DeploymentGroupsRepository,
} from './deployment-groups.repository';
import { matchesVersion, parseVersionRequirement } from './version-requirement';

/** A device as membership sees it. */
export interface MembershipDevice {
  tags: string[];
  firmware_platform: string | null;
  firmware_architecture: string | null;
  firmware_version: string | null;
}

/** Whether the device meets the group's platform, architecture, tag and version conditions. */
export function deviceMatchesGroup(device: MembershipDevice, group: MembershipGroup): boolean {
  if (device.firmware_platform === null || device.firmware_platform !== group.platform) return false;
  if (device.firmware_architecture !== group.architecture) return false;
  const tags = group.conditions_tags;
  const tagsMatch =
    group.conditions_tag_operator === 'or'
      ? tags.length === 0 || tags.some((tag) => device.tags.includes(tag))
      : tags.every((tag) => device.tags.includes(tag));
  if (!tagsMatch) return false;
  const requirement = parseVersionRequirement(group.conditions_version);
  return requirement !== null && matchesVersion(requirement, device.firmware_version);
}

/**
 * The group a device belongs in, as NervesHub decides it (and as the set-wise statements of the repository do):
 * it stays in its group while it meets the group's conditions, or whatever its conditions when the group locks
 * its membership, active or not; otherwise it joins the best matching active, unlocked group: the highest
 * current-release firmware version, then the most matching tags, then the oldest (lowest id).
 */
export function chooseGroup(
  device: MembershipDevice & { deployment_group_id: string | null },
  groups: MembershipGroup[],
): string | null {
  const current = groups.find((group) => group.id === device.deployment_group_id);
  if (current && (current.lock_device_membership || deviceMatchesGroup(device, current))) return current.id;
  const matchingTags = (group: MembershipGroup) =>
    group.conditions_tags.filter((tag) => device.tags.includes(tag)).length;
  const candidates = groups
    .filter((group) => group.is_active && !group.lock_device_membership && deviceMatchesGroup(device, group))
    .sort(
      (a, b) =>
        (a.version_sort_key < b.version_sort_key ? 1 : a.version_sort_key > b.version_sort_key ? -1 : 0) ||
        matchingTags(b) - matchingTags(a) ||
        Number(BigInt(a.id) - BigInt(b.id)),
    );
  return candidates[0]?.id ?? null;
}

/**
 * Keeps the devices' deployment group memberships what the groups' conditions say. A whole product is recomputed in two
 * set-wise statements (never a loop over devices); one device (a join, a tag change) in one read and, only when
 * its group changes, one write.
 */
@Injectable()
export class DeploymentMembershipService {
  constructor(
    private readonly groups: DeploymentGroupsRepository,
    private readonly events: DeploymentEvents,
  ) {}

  /**
   * Every device of the product: devices leave the unlocked groups they no longer match, then devices without a
   * group join their best match. Runs in `tx`, under the product's membership lock.
   */
  async recomputeProduct(productId: string, tx: Queryable): Promise<{ left: number; joined: number }> {
    const groups = await this.groups.lockMembershipGroups(productId, tx);
    const left = await this.groups.releaseMismatched(productId, groups, null, tx);
    const joined = await this.groups.assignBestMatches(productId, groups, null, tx);
    return { left, joined };
  }

  /**
   * After one group of the product was created, changed, turned on or off, or deleted (then its memberships are
   * gone already); `rulesChanged`: its conditions or its membership lock changed. The same result as
   * `recomputeProduct`, for less: every other group is as it was, so only this group's members can stop matching,
   * and a device without a group (which matched no open group before) can only find one in this group, when it is
   * open, or among all groups when devices left or the group was deleted. Runs in `tx` (the group change's
   * transaction), under the product's membership lock.
   */
  async recomputeAfterGroupChange(
    productId: string,
    groupId: string,
    rulesChanged: boolean,
    tx: Queryable,
  ): Promise<{ left: number; joined: number }> {
    const groups = await this.groups.lockMembershipGroups(productId, tx);
    const group = groups.find((candidate) => candidate.id === groupId);
    const left =
      group && rulesChanged ? await this.groups.releaseMismatched(productId, [group], null, tx) : 0;
    const open = group !== undefined && group.is_active && !group.lock_device_membership;
    const joined =
      group === undefined || left > 0
        ? await this.groups.assignBestMatches(productId, groups, null, tx)
        : open
          ? await this.groups.assignBestMatches(productId, [group], null, tx)
          : 0;
    return { left, joined };
  }

  /**
   * After a bulk tag change of `deviceIds` (in `tx`, the change's): those devices leave the groups they no longer
   * match and those without a group join their best match, set-wise, under the product's membership lock; the
   * orchestrator looks at the product's groups again once `tx` commits. Answers how many left and joined.
   */
  async recomputeDevices(
    productId: string,
    deviceIds: readonly string[],
    tx: Tx,
  ): Promise<{ left: number; joined: number }> {
    if (deviceIds.length === 0) return { left: 0, joined: 0 };
    const groups = await this.groups.lockMembershipGroups(productId, tx);
    if (groups.length === 0) return { left: 0, joined: 0 };
    const left = await this.groups.releaseMismatched(productId, groups, deviceIds, tx);
    const joined = await this.groups.assignBestMatches(productId, groups, deviceIds, tx);
    if (left + joined > 0) {
      for (const group of groups) await this.events.groupChanged(group.id, tx);
    }
    return { left, joined };
  }

  /** Devices moving to another product leave their groups (in `tx`, the move's). */
  leaveForMoveMany(deviceIds: readonly string[], tx: Queryable): Promise<void> {
    return this.groups.removeDevices(deviceIds, tx);
  }

  /** A device moving to another product leaves its group (in `tx`, the move's); the group it left, if any. */
  leaveForMove(deviceId: string, tx: Queryable): Promise<string | null> {
    return this.groups.removeDevice(deviceId, tx);
  }

  /**
   * After one device's join (its firmware may have changed) or tag change: one read, and one write only when
   * its group changes. Answers the device's group id.
   */
  async recomputeDevice(deviceId: string): Promise<string | null> {
    const state: MembershipState | null = await this.groups.findMembershipState(deviceId);
    if (!state) return null;
    if (state.groups.length === 0 && state.deployment_group_id === null) return null;
    const target = chooseGroup(state, state.groups);
    if (target === state.deployment_group_id) return target;
    // Compare-and-set: a concurrent recomputation that moved the device first wins.
    const moved = await this.groups.moveDevice(deviceId, state.product_id, state.deployment_group_id, target);
    // A new member may be due its group's release now, not at the orchestrator's next sweep.
    if (moved && target !== null) await this.events.groupChanged(target);
    return target;
  }

  /**
   * The groups of these devices (device id → group id; devices without a group are absent), in one statement by
   * the membership primary key: the device gateway sends their group's archive.
   */
  groupsOf(deviceIds: readonly string[]): Promise<Map<string, string>> {
    return this.groups.groupsOfDevices(deviceIds);
  }
}
