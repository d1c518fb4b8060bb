#!/usr/bin/env node
'use strict';
const { existsSync } = require('node:fs');
const { join } = require('node:path');

const entry = join(__dirname, '..', 'dist', 'src', 'cli', 'main.js');
if (!existsSync(entry)) {
  process.stderr.write(
    'fleethub is not built yet: run "npm install" (or "npm run build") in the checkout first\n',
  );
  process.exit(1);
}
require(entry);
