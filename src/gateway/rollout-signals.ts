import { Injectable, Logger } from '@nestjs/common';

/** How an orchestrated update ended on the device's side. */
export type UpdateOutcome = 'completed' | 'failed' | 'ignored';

export interface EndedUpdate {
  deviceId: string;
  groupId: string;
  /** The release the update was to (null for a completion: the release no longer matters then). */
  releaseId: string | null;
  outcome: UpdateOutcome;
}

/**
 * What the gateway tells the deployment orchestrator, in this process: a device joined its `device` channel, an
 * orchestrated update ended. The orchestrator's module imports the gateway's (never the reverse), so it
 * subscribes here; without a subscriber the signals go nowhere.
 */
@Injectable()
export class RolloutSignals {
  private readonly logger = new Logger(RolloutSignals.name);
  private readonly onlineHandlers: ((deviceId: string) => void)[] = [];
  private readonly endedHandlers: ((ended: EndedUpdate) => Promise<void>)[] = [];

  onDeviceOnline(handler: (deviceId: string) => void): void {
    this.onlineHandlers.push(handler);
  }

  onUpdateEnded(handler: (ended: EndedUpdate) => Promise<void>): void {
    this.endedHandlers.push(handler);
  }

  deviceOnline(deviceId: string): void {
    for (const handler of this.onlineHandlers) handler(deviceId);
  }

  updateEnded(ended: EndedUpdate): void {
    for (const handler of this.endedHandlers) {
      handler(ended).catch((err: unknown) =>
        this.logger.error({ err, deviceId: ended.deviceId }, 'recording the end of an update failed'),
      );
    }
  }
}
