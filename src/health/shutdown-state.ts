import { Injectable } from '@nestjs/common';

/**
 * Set when the process has been asked to stop: /readyz then fails so that balancers stop routing here, and what
 * holds connections (keep-alive HTTP, device sockets) lets them go, each by the listener it registered.
 */
@Injectable()
export class ShutdownState {
  draining = false;
  private readonly drainListeners: ((periodMs: number) => void)[] = [];

  /** `listener` runs once, when the drain starts, with how long it lasts. */
  onDrain(listener: (periodMs: number) => void): void {
    this.drainListeners.push(listener);
  }

  /** Starts the drain (once): what holds connections has `periodMs` to let them go. */
  startDraining(periodMs: number): void {
    if (this.draining) return;
    this.draining = true;
    for (const listener of this.drainListeners) listener(periodMs);
  }
}
