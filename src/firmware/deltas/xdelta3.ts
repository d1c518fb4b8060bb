import { execFile } from 'node:child_process';

/** A run of xdelta3 that failed: its exit code (a string such as ENOENT when it could not start). */
export class Xdelta3Error extends Error {
  constructor(
    message: string,
    readonly code: number | string | null,
  ) {
    super(message);
  }
}

/** VCDIFF's magic bytes (RFC 3284): how fwup tells a delta resource from a full one. */
export const VCDIFF_MAGIC = Buffer.from([0xd6, 0xc3, 0xc4]);

const DEFAULT_TIMEOUT_MS = 30 * 60_000;

/** The program that encodes and decodes VCDIFF (Debian's `xdelta3` package), run as NervesHub runs it. */
export class Xdelta3 {
  constructor(readonly program = 'xdelta3') {}

  /** Whether the program runs here (`xdelta3 -V` succeeds). */
  async available(): Promise<boolean> {
    try {
      await this.run(['-V'], 10_000);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Encodes `target` as a VCDIFF delta against `source` into `out` with `-A -S -f -e -s` (no application header,
   * no secondary compression: what fwup's decoder reads), as NervesHub builds fwup deltas; `sourceWindow` is
   * `-B` in bytes (the target's `block-cache-size-mb`).
   */
  encode(
    source: string,
    target: string,
    out: string,
    options: { sourceWindow?: number | null; timeoutMs?: number; signal?: AbortSignal } = {},
  ): Promise<void> {
    const window = options.sourceWindow ? ['-B', String(options.sourceWindow)] : [];
    return this.run(
      [...window, '-A', '-S', '-f', '-e', '-s', source, target, out],
      options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      options.signal,
    );
  }

  /** Decodes the VCDIFF `delta` against `source` into `out` (`xdelta3 -d -f -s`), as fwup applies it. */
  decode(source: string, delta: string, out: string, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<void> {
    return this.run(['-d', '-f', '-s', source, delta, out], timeoutMs);
  }

  private run(args: string[], timeoutMs: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      const options = { timeout: timeoutMs, maxBuffer: 64 * 1024, signal };
      execFile(this.program, args, options, (err, stdout, stderr) => {
        if (!err) return resolve();
        const code = (err as NodeJS.ErrnoException).code ?? null;
        const said = `${stderr}${stdout}`.trim().slice(0, 500);
        reject(new Xdelta3Error(`xdelta3 failed${said ? `: ${said}` : ` (${String(code)})`}`, code));
      });
    });
  }
}
