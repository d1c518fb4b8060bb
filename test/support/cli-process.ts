import { execFile } from 'node:child_process';
import { join } from 'node:path';

export const ROOT = join(__dirname, '..', '..');

/**
 * Node code that runs `entry` (a .ts file of the checkout, e.g. `./src/cli/main.ts`) in a process of its own, from
 * the TypeScript sources compiled on the fly with the same swc settings as the tests, so that it is the code under
 * test rather than whatever dist/ holds. Run it with `node -e` in the checkout; it sees the arguments after `--`.
 */
export function sourceLauncher(entry: string): string {
  return `
const { readFileSync } = require('node:fs');
const { transformSync } = require('@swc/core');
const swc = require('./jest.config.js').projects[0].transform['^.+\\\\.ts$'][1];
require.extensions['.ts'] = (module, filename) => {
  const { code } = transformSync(readFileSync(filename, 'utf8'), { ...swc, filename, sourceMaps: false });
  module._compile(code, filename);
};
process.argv.splice(1, 0, 'fleethub');
require(${JSON.stringify(entry)});
`;
}

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `fleethub <args>` (src/cli/main.ts) in a process of its own, from the sources (see sourceLauncher). */
export function runCliProcess(args: string[], env: Record<string, string>): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      // `--`: what follows is the CLI's (`--help` would otherwise be node's own).
      ['-e', sourceLauncher('./src/cli/main.ts'), '--', ...args],
      { cwd: ROOT, env: { ...process.env, LOG_LEVEL: 'silent', ...env }, timeout: 60_000 },
      (err, stdout, stderr) => {
        const code = err ? (err as { code?: unknown }).code : 0;
        if (typeof code !== 'number') reject(err ?? new Error('the CLI did not exit'));
        else resolve({ code, stdout, stderr });
      },
    );
  });
}
