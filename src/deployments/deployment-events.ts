import { Injectable } from '@nestjs/common';
import { InstanceBus } from '../database/instance-bus/instance-bus';
import type { Tx } from '../database/transactions';

/** The instance bus channel on which a group's rollout is poked: `{"group": "<id>"}` (any instance publishes). */
export const DEPLOYMENTS_CHANNEL = 'deployments';

/** Tells the deployment orchestrator, on whichever instance leads the group, that the group changed. */
@Injectable()
export class DeploymentEvents {
  constructor(private readonly bus: InstanceBus) {}

  /**
   * The leader looks at the group again at once: delivered when `tx` commits (nothing if it rolls back), or now
   * without one.
   */
  async groupChanged(groupId: string, tx?: Tx): Promise<void> {
    await this.bus.publish(DEPLOYMENTS_CHANNEL, JSON.stringify({ group: groupId }), tx);
  }
}
