import { type OnApplicationBootstrap, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { FleetOverviewRepository } from './fleet-overview.repository';

const SAMPLE_INTERVAL_MS = 60_000;

/**
 * Records "connected over time": every minute, each instance offers to sample every product's connected and
 * total devices from the counter rows; one of them does it (FleetOverviewRepository.recordSamples: an advisory
 * lock for the moment, the minute in the key), so the history has one point a minute whichever instances run,
 * and keeps going when one stops. Samples past retention are deleted at the same time.
 */
@Injectable()
export class ConnectionSampler implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('FleetOverview');
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly overview: FleetOverviewRepository) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.sample(), SAMPLE_INTERVAL_MS);
    this.timer.unref();
    void this.sample();
  }

  onApplicationShutdown(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Samples now (unless another instance sampled this minute); never throws. Answers the samples written. */
  async sample(): Promise<number> {
    try {
      return await this.overview.recordSamples();
    } catch (err) {
      this.logger.warn({ err }, 'connection sampling failed');
      return 0;
    }
  }
}
