import { Injectable, Logger } from '@nestjs/common';

/** How a device ended its delivered update badly (`status_update`). */
export type FailedOutcome = 'failed' | 'ignored';

/** An orchestrated update the device completed (it joined running the update's firmware). */
export interface CompletedUpdate {
  deviceId: string;
  groupId: string;
  /** The device's join already cleared its update attempts (it joined running the update's firmware). */
  attemptsCleared: boolean;
}

/** Ends the device's delivered update as failed or ignored; answers whether there was one. */
export type FailureHandler = (deviceId: string, outcome: FailedOutcome) => Promise<boolean>;

/**
 * What the gateway tells the deployment orchestrator, in this process: a device joined its `device` channel, an
 * orchestrated update completed, a delivered update failed (the orchestrator ends it itself, so that the row's
 * deletion and the failure's consequences — attempts, penalty box, the release's failures — commit together and
 * no claim sees the device free but not yet penalised). The orchestrator's module imports the gateway's (never
 * the reverse), so it subscribes here; without a subscriber the signals go nowhere.
 */
@Injectable()
export class RolloutSignals {
  private readonly logger = new Logger(RolloutSignals.name);
  private readonly onlineHandlers: ((deviceId: string) => void)[] = [];
  private readonly completedHandlers: ((completed: CompletedUpdate) => Promise<void>)[] = [];
  private failureHandler: FailureHandler | null = null;

  onDeviceOnline(handler: (deviceId: string) => void): void {
    this.onlineHandlers.push(handler);
  }

  onUpdateCompleted(handler: (completed: CompletedUpdate) => Promise<void>): void {
    this.completedHandlers.push(handler);
  }

  /** The one handler that ends failed updates (the deployment orchestrator). */
  handleFailures(handler: FailureHandler): void {
    this.failureHandler = handler;
  }

  deviceOnline(deviceId: string): void {
    for (const handler of this.onlineHandlers) handler(deviceId);
  }

  updateCompleted(completed: CompletedUpdate): void {
    for (const handler of this.completedHandlers) {
      handler(completed).catch((err: unknown) =>
        this.logger.error({ err, deviceId: completed.deviceId }, 'recording a completed update failed'),
      );
    }
  }

  /** Ends the device's delivered update as failed or ignored through the handler; null without one. */
  updateFailed(deviceId: string, outcome: FailedOutcome): Promise<boolean> | null {
    return this.failureHandler ? this.failureHandler(deviceId, outcome) : null;
  }
}
