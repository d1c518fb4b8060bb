/** @type {import('jest').Config} */
const swc = [
  '@swc/jest',
  {
    jsc: {
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true },
      target: 'es2022',
      keepClassNames: true,
    },
    module: { type: 'commonjs', ignoreDynamic: true },
    sourceMaps: 'inline',
  },
];

/** What both projects share: TypeScript through swc, one PostgreSQL for the whole run (set up once). */
const shared = {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': swc },
  moduleFileExtensions: ['ts', 'js', 'json'],
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
};

module.exports = {
  maxWorkers: process.env.CI ? 2 : '50%',
  testTimeout: 30000, // the browser project's own: test/support/browser-timeout.ts
  projects: [
    {
      ...shared,
      displayName: 'server',
      roots: ['<rootDir>/src', '<rootDir>/test'],
      testMatch: ['**/*.spec.ts', '**/*.e2e-spec.ts'],
    },
    {
      // The console and the other pages in Debian's Chromium (test/support/chromium.ts): slower steps.
      ...shared,
      displayName: 'browser',
      globalSetup: '<rootDir>/test/support/browser-global-setup.ts',
      roots: ['<rootDir>/test/browser'],
      testMatch: ['**/*.browser-spec.ts'],
      setupFilesAfterEnv: ['<rootDir>/test/support/browser-timeout.ts'],
    },
  ],
};
