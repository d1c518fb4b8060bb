import { join } from 'node:path';
import type { AppConfig } from '../config/config';
import { EmbeddedPostgres } from './embedded-postgres';

/**
 * Resolves where the database is: `DATABASE_URL` when set, else the embedded PostgreSQL kept under
 * `FLEETHUB_DATA_DIR/postgres` (started here, or adopted when another fleethub process runs it).
 */
export class DatabaseLocation {
  private embedded: EmbeddedPostgres | null = null;

  constructor(private readonly config: Pick<AppConfig, 'databaseUrl' | 'dataDir'>) {}

  async url(log?: (message: string) => void): Promise<string> {
    if (this.config.databaseUrl) return this.config.databaseUrl;
    this.embedded ??= new EmbeddedPostgres({
      dataDir: join(this.config.dataDir, 'postgres'),
      database: 'fleethub',
      log,
    });
    return this.embedded.start();
  }

  async release(): Promise<void> {
    await this.embedded?.stop();
  }
}
