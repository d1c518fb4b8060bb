/** A script's `--name=value` and `--flag` options (a flag's value is `'true'`). */
export function longOptions(argv: readonly string[] = process.argv.slice(2)): ReadonlyMap<string, string> {
  return new Map(
    argv
      .filter((a) => a.startsWith('--'))
      .map((a) => {
        const [key, value] = a.slice(2).split('=');
        return [key, value ?? 'true'] as const;
      }),
  );
}

/** A numeric option of `options`, `fallback` when absent. */
export function numberOption(options: ReadonlyMap<string, string>, name: string, fallback: number): number {
  return Number(options.get(name) ?? fallback);
}
