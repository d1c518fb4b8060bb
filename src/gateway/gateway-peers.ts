import { Injectable } from '@nestjs/common';

/** How long after the last sign of another instance this one may believe it runs alone. */
const SILENCE_MS = 30_000;

/**
 * Whether other gateway instances run beside this one: from the leases in `gateway_instances` (read at every
 * renewal) and from the instance bus (any message another instance published). An instance alone has nobody to
 * tell that a device reconnected here or that an update waits for a device not connected here, and skips those
 * NOTIFYs (one per reconnect in a rollout). A new instance announces itself on the bus when it starts, so the
 * others know of it at once, not at their next renewal. Until the first renewal, others are assumed.
 */
@Injectable()
export class GatewayPeers {
  private othersByLease = true;
  private lastHeard = 0;

  /** The lease renewal counted `others` live instances besides this one. */
  counted(others: number): void {
    this.othersByLease = others > 0;
  }

  /** A message from another instance arrived. */
  heard(): void {
    this.lastHeard = Date.now();
  }

  get alone(): boolean {
    return !this.othersByLease && Date.now() - this.lastHeard > SILENCE_MS;
  }
}
