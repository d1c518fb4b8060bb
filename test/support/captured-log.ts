import type { DestinationStream } from 'pino';
import { AppLogger } from '../../src/common/http/logger';
import type { LogLevel } from '../../src/config/config';

export type LogLine = Record<string, unknown> & { level: number; msg?: string };

/** A pino destination that keeps every line: the raw text (to search for leaks) and the parsed JSON. */
export class CapturedLog implements DestinationStream {
  readonly raw: string[] = [];

  write(line: string): void {
    this.raw.push(line);
  }

  get lines(): LogLine[] {
    return this.raw.map((line) => JSON.parse(line) as LogLine);
  }

  get text(): string {
    return this.raw.join('');
  }

  /** An AppLogger writing here, as the server's (pino, same options). */
  logger(level: LogLevel = 'info'): AppLogger {
    return new AppLogger(level, this);
  }
}
