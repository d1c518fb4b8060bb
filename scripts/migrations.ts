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

/** One scratch database per process, so that two checkouts can generate or check at once on one server. */
const SCRATCH = `fleethub_migration_scratch_${process.pid}`;

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

async function dropScratchDatabase(location: DatabaseLocation): Promise<void> {
  const adminUrl = new URL(await location.url());
  adminUrl.pathname = '/postgres';
  const admin = new Client({ connectionString: adminUrl.toString() });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${SCRATCH} WITH (FORCE)`);
  await admin.end();
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
      if (sql.upQueries.length > 0) {
        process.stderr.write('entities and migrations drift; the missing statements are:\n');
        for (const q of sql.upQueries) process.stderr.write(`  ${q.query};\n`);
        return 1;
      }
      process.stdout.write('migrations match the entities\n');
      return await checkReversible(location);
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
    await dropScratchDatabase(location);
    await location.release();
  }
}

/** Every migration's `down` undoes its `up`: revert all to an empty schema, apply all again, no drift. */
async function checkReversible(location: DatabaseLocation): Promise<number> {
  const dataSource = new DataSource(dataSourceOptions(await scratchDatabase(location)));
  await dataSource.initialize();
  try {
    const applied = await dataSource.runMigrations({ transaction: 'each' });
    for (let i = 0; i < applied.length; i++) await dataSource.undoLastMigration({ transaction: 'each' });
    const left: { kind: string; name: string }[] = await dataSource.query(
      `SELECT 'table' AS kind, tablename AS name FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'schema_migrations'
       UNION ALL SELECT 'type', typname FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
        WHERE n.nspname = 'public' AND t.typtype = 'e'
       UNION ALL SELECT 'function', proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname = 'public' AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')`,
    );
    if (left.length > 0) {
      process.stderr.write('reverting every migration left objects behind:\n');
      for (const o of left) process.stderr.write(`  ${o.kind} ${o.name}\n`);
      return 1;
    }
    await dataSource.runMigrations({ transaction: 'each' });
    const again = await dataSource.driver.createSchemaBuilder().log();
    if (again.upQueries.length > 0) {
      process.stderr.write('after down and up again the schema drifts from the entities\n');
      return 1;
    }
    process.stdout.write(`every migration reverts cleanly (${applied.length} down, then up again)\n`);
    return 0;
  } finally {
    await dataSource.destroy();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
