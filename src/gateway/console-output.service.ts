import { Injectable, Logger } from '@nestjs/common';
import { isoOrNull } from '../common/values';
import { ConsoleOutputRepository } from './console-output.repository';

/** The console output kept per device: the last 64 Ki characters. */
export const CONSOLE_OUTPUT_LIMIT = 64 * 1024;
/** `up` events are gathered this long before one write. */
const APPEND_DELAY_MS = 200;

/** The bounded tail of what each device printed on its console, in `device_console_output`. */
@Injectable()
export class ConsoleOutputService {
  private readonly logger = new Logger(ConsoleOutputService.name);
  private readonly pending = new Map<string, string>();
  private timer: NodeJS.Timeout | null = null;
  private writing: Promise<void> = Promise.resolve();

  constructor(private readonly outputs: ConsoleOutputRepository) {}

  async show(deviceId: string): Promise<{ data: { output: string; updated_at: string | null } }> {
    await this.flush();
    const row = await this.outputs.findByDevice(deviceId);
    return { data: { output: row?.output ?? '', updated_at: isoOrNull(row?.updated_at ?? null) } };
  }

  /** Queues output; written shortly after, in one statement per device. */
  append(deviceId: string, data: string): void {
    if (data === '') return;
    const joined = (this.pending.get(deviceId) ?? '') + data;
    this.pending.set(
      deviceId,
      joined.length > CONSOLE_OUTPUT_LIMIT ? joined.slice(-CONSOLE_OUTPUT_LIMIT) : joined,
    );
    this.timer ??= setTimeout(() => {
      this.timer = null;
      this.flush().catch((err: unknown) => this.logger.warn({ err }, 'console output write failed'));
    }, APPEND_DELAY_MS);
  }

  /** Writes everything queued (also waits for a write in progress). */
  async flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    const batch = [...this.pending.entries()];
    this.pending.clear();
    const previous = this.writing;
    this.writing = (async () => {
      await previous.catch(() => undefined);
      if (batch.length === 0) return;
      await this.outputs.append(
        batch.map(([id]) => id),
        batch.map(([, data]) => data),
        CONSOLE_OUTPUT_LIMIT,
      );
    })();
    await this.writing;
  }
}
