import type { AppLogger } from './common/http/logger';
import type { AppConfig } from './config/config';
import type { RunningServer } from './server';

/** After a second signal: how long closing the application and the database may take before the exit anyway. */
export const FORCED_EXIT_MS = 2000;

/**
 * What SIGTERM and SIGINT do. The first: the drain (`/readyz` fails, keep-alive connections and device sockets
 * are let go) for FLEETHUB_SHUTDOWN_DRAIN_MS, then the listener closes, requests in flight get up to
 * FLEETHUB_SHUTDOWN_TIMEOUT_MS to finish, the application and the database close, and the process exits: 0, or 1
 * when requests had to be cut. A second signal cuts everything in flight and exits at once (1).
 */
export class GracefulShutdown {
  private signalled = false;
  private exited = false;

  constructor(
    private readonly server: RunningServer,
    private readonly config: Pick<AppConfig, 'shutdownDrainMs' | 'shutdownTimeoutMs'>,
    private readonly logger: AppLogger,
    private readonly exitProcess: (code: number) => void = (code) => process.exit(code),
  ) {}

  handle(signal: NodeJS.Signals): void {
    if (this.signalled) {
      this.force(signal);
      return;
    }
    this.signalled = true;
    const { shutdownDrainMs: drainMs, shutdownTimeoutMs: timeoutMs } = this.config;
    this.logger.pino.info({ context: 'Shutdown', signal, drainMs, timeoutMs }, 'shutting down: draining');
    this.server.drain(drainMs);
    new Promise((resolve) => setTimeout(resolve, drainMs))
      .then(() => this.server.close(timeoutMs))
      .then(
        (cut) => {
          this.logger.pino.info({ context: 'Shutdown', cut }, 'stopped');
          this.exit(cut > 0 ? 1 : 0);
        },
        (err: unknown) => {
          this.logger.pino.error({ context: 'Shutdown', err, signal }, 'shutdown failed');
          this.exit(1);
        },
      );
  }

  private force(signal: NodeJS.Signals): void {
    const cut = this.server.cut();
    this.logger.pino.warn(
      { context: 'Shutdown', signal, cut },
      'second signal: exiting now, cutting the requests still in flight',
    );
    setTimeout(() => this.exit(1), FORCED_EXIT_MS).unref();
    this.server.close(0).then(
      () => this.exit(1),
      () => this.exit(1),
    );
  }

  private exit(code: number): void {
    if (this.exited) return;
    this.exited = true;
    this.exitProcess(code);
  }
}
