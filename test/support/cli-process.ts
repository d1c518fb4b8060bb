import { execFile } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');

/**
 * Runs `fleethub <args>` in a process of its own, from the TypeScript sources (compiled on the fly with the
 * same swc settings as the tests), so that it is the code under test rather than whatever dist/ holds.
 */
const LAUNCHER = `
const { readFileSync } = require('node:fs');
const { transformSync } = require('@swc/core');
const swc = require('./jest.config.js').transform['^.+\\\\.ts$'][1];
require.extensions['.ts'] = (module, filename) => {
  const { code } = transformSync(readFileSync(filename, 'utf8'), { ...swc, filename, sourceMaps: false });
  module._compile(code, filename);
};
process.argv.splice(1, 0, 'fleethub');
require('./src/cli/main.ts');
`;

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

export function runCliProcess(args: string[], env: Record<string, string>): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['-e', LAUNCHER, ...args],
      { cwd: ROOT, env: { ...process.env, LOG_LEVEL: 'silent', ...env }, timeout: 60_000 },
      (err, stdout, stderr) => {
        const code = err ? (err as { code?: unknown }).code : 0;
        if (typeof code !== 'number') reject(err ?? new Error('the CLI did not exit'));
        else resolve({ code, stdout, stderr });
      },
    );
  });
}
