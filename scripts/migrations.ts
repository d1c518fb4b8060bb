/**
 * Migration tools, run from the build (`npm run migration:generate -- Name`, `npm run migration:check`).
 * Both apply every migration to a scratch database and ask TypeORM what the entities still need:
 * `generate` writes that into a new file in migrations/, `check` fails when anything is left (drift).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { loadConfig } from '../src/config/config';
import { DatabaseLocation } from '../src/database/database-url';
import { dataSourceOptions } from '../src/database/data-source-options';

const SCRATCH = 'fleethub_migration_scratch';

async function scratchDatabase(location: DatabaseLocation): Promise<string> {
  const url = new URL(await location.url());
  const adminUrl = new URL(url);
  adminUrl.pathname = '/postgres';
  const admin = new Client({ connectionString: adminUrl.toString() });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${SCRATCH} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${SCRATCH}`);
  await admin.end();
  url.pathname = `/${SCRATCH}`;
  return url.toString();
}

function escape(sql: string): string {
  return sql.replace(/\\/g, '\\\\').replace(/`/g, '\\`').replace(/\$\{/g, '\\${');
}

async function main(): Promise<number> {
  const [command, name] = process.argv.slice(2);
  if (command !== 'generate' && command !== 'check') {
    process.stderr.write('usage: migrations.js generate <Name> | check\n');
    return 2;
  }
  if (command === 'generate' && !/^[A-Z][A-Za-z0-9]*$/.test(name ?? '')) {
    process.stderr.write('migration name must be PascalCase, e.g. AddDeviceIndexes\n');
    return 2;
  }
  const location = new DatabaseLocation(loadConfig());
  try {
    const dataSource = new DataSource(dataSourceOptions(await scratchDatabase(location)));
    await dataSource.initialize();
    await dataSource.runMigrations({ transaction: 'each' });
    const sql = await dataSource.driver.createSchemaBuilder().log();
    await dataSource.destroy();

    if (command === 'check') {
      if (sql.upQueries.length === 0) {
        process.stdout.write('migrations match the entities\n');
        return 0;
      }
      process.stderr.write('entities and migrations drift; the missing statements are:\n');
      for (const q of sql.upQueries) process.stderr.write(`  ${q.query};\n`);
      return 1;
    }

    if (sql.upQueries.length === 0) {
      process.stdout.write('nothing to generate: migrations match the entities\n');
      return 0;
    }
    const timestamp = Date.now();
    const up = sql.upQueries.map((q) => `    await queryRunner.query(\`${escape(q.query)}\`);`);
    const down = sql.downQueries.reverse().map((q) => `    await queryRunner.query(\`${escape(q.query)}\`);`);
    const file = join(process.cwd(), 'migrations', `${timestamp}-${name}.ts`);
    writeFileSync(
      file,
      `import type { MigrationInterface, QueryRunner } from 'typeorm';

export class ${name}${timestamp} implements MigrationInterface {
  name = '${name}${timestamp}';

  public async up(queryRunner: QueryRunner): Promise<void> {
${up.join('\n')}
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
${down.join('\n')}
  }
}
`,
    );
    process.stdout.write(`wrote ${file}\nadd ${name}${timestamp} to migrations/index.ts\n`);
    return 0;
  } finally {
    await location.release();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
