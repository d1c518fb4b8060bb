/**
 * `npm run lint:openapi`: builds the OpenAPI document exactly as the server serves it, without a database (the
 * application graph in Nest's preview mode: modules and controllers are scanned, no provider is instantiated), writes
 * it to a temporary file and runs `redocly lint` on it with redocly.yaml. `node dist/scripts/openapi.js FILE` only
 * writes the document to FILE.
 */
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { OpenAPIObject } from '@nestjs/swagger';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppModule } from '../src/app.module';
import { loadConfig } from '../src/config/config';
import { buildOpenApiDocument } from '../src/openapi';

/** The document as the server serves it, from the application graph alone (no database, no listening). */
export async function buildDocumentWithoutDatabase(): Promise<OpenAPIObject> {
  const scratch = mkdtempSync(join(tmpdir(), 'fleethub-openapi-'));
  try {
    const config = loadConfig({ FLEETHUB_DATA_DIR: scratch, LOG_LEVEL: 'silent' });
    // Never connected to: preview mode builds no providers, so TypeORM does not start.
    const unused = 'postgres://openapi@127.0.0.1:1/none';
    const app = await NestFactory.create<NestExpressApplication>(AppModule.register(config, unused), {
      preview: true,
      logger: false,
      bodyParser: false,
    });
    return buildOpenApiDocument(app);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

async function writeDocument(file: string): Promise<void> {
  writeFileSync(file, `${JSON.stringify(await buildDocumentWithoutDatabase(), null, 2)}\n`);
}

async function main(): Promise<void> {
  const target = process.argv[2];
  if (target) {
    await writeDocument(target);
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'fleethub-openapi-'));
  try {
    const file = join(dir, 'openapi.json');
    await writeDocument(file);
    const root = join(__dirname, '..', '..');
    const lint = spawnSync(
      join(root, 'node_modules', '.bin', 'redocly'),
      ['lint', '--config', join(root, 'redocly.yaml'), file],
      {
        stdio: 'inherit',
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
      },
    );
    process.exitCode = lint.status ?? 1;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  });
}
