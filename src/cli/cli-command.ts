import { CommandRunner } from 'nest-commander';
import { DomainError } from '../common/errors/domain-error';

/** One-line message for any failure: field errors as "field: message", other errors by their text. */
export function describeError(err: unknown): string {
  if (err instanceof DomainError) {
    const fields = Object.entries(err.fields);
    if (fields.length > 0)
      return fields.map(([field, messages]) => `${field}: ${messages.join(', ')}`).join('; ');
    return err.detail;
  }
  return err instanceof Error ? err.message : String(err);
}

export class UsageError extends Error {}

/** Base for every command: errors become one line on stderr and a non-zero exit code. */
export abstract class CliCommand<Options> extends CommandRunner {
  protected abstract execute(options: Options, args: string[]): Promise<void>;

  async run(args: string[], options?: Record<string, unknown>): Promise<void> {
    try {
      await this.execute((options ?? {}) as Options, args);
    } catch (err) {
      process.stderr.write(`error: ${describeError(err).replace(/\s*\n\s*/g, ' ')}\n`);
      process.exitCode = err instanceof UsageError ? 2 : 1;
    }
  }

  protected required(value: string | undefined, flag: string): string {
    if (value === undefined || value.trim() === '') throw new UsageError(`${flag} is required`);
    return value;
  }

  protected print(line: string): void {
    process.stdout.write(`${line}\n`);
  }
}
