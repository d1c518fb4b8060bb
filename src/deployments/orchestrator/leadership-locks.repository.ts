import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { Client } from 'pg';
import { DataSource } from 'typeorm';

/** The leadership connection's `application_name` (visible in pg_stat_activity). */
export const LEADERSHIP_APPLICATION_NAME = 'fleethub-deployments';

/**
 * Leadership of deployment groups: a session advisory lock per group, held on one dedicated connection of this
 * process. PostgreSQL releases every lock of a session when its connection ends, so when an instance dies (or
 * loses its connection) its groups are free at once and another instance's next attempt takes them.
 */
@Injectable()
export class LeadershipLocksRepository {
  private readonly logger = new Logger(LeadershipLocksRepository.name);
  private client: Client | null = null;
  private connecting: Promise<Client> | null = null;
  private pid: number | null = null;
  /** Groups whose lock this process holds on `client`. */
  readonly held = new Set<string>();

  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** The PostgreSQL backend pid of the leadership connection, null while there is none. */
  get backendPid(): number | null {
    return this.client ? this.pid : null;
  }

  /** Tries to lead each group not led here yet; answers the groups newly led. */
  async tryLead(groupIds: readonly string[]): Promise<string[]> {
    const wanted = groupIds.filter((id) => !this.held.has(id));
    if (wanted.length === 0) return [];
    const client = await this.connection();
    const { rows } = await client.query<{ id: string }>(
      `SELECT id::text FROM unnest($1::bigint[]) id
        WHERE pg_try_advisory_lock(hashtext('deployment-leader'), hashtext(id::text))`,
      [wanted],
    );
    if (client !== this.client) return [];
    for (const row of rows) this.held.add(row.id);
    return rows.map((row) => row.id);
  }

  /** Stops leading these groups (no longer active). */
  async resign(groupIds: readonly string[]): Promise<void> {
    const client = this.client;
    const leading = groupIds.filter((id) => this.held.has(id));
    if (!client || leading.length === 0) return;
    for (const id of leading) this.held.delete(id);
    await client.query(
      `SELECT pg_advisory_unlock(hashtext('deployment-leader'), hashtext(id::text)) FROM unnest($1::bigint[]) id`,
      [leading],
    );
  }

  /** Ends the connection: every group it led is free for the other instances. */
  async close(): Promise<void> {
    const client = this.client;
    this.lost(client);
    await client?.end().catch(() => undefined);
  }

  private async connection(): Promise<Client> {
    if (this.client) return this.client;
    this.connecting ??= this.connect().finally(() => (this.connecting = null));
    return this.connecting;
  }

  private async connect(): Promise<Client> {
    const options = this.db.options as { url?: string };
    const client = new Client({
      connectionString: options.url,
      application_name: LEADERSHIP_APPLICATION_NAME,
    });
    client.on('error', (err) => {
      this.logger.warn({ err }, 'deployment leadership connection lost');
      this.lost(client);
    });
    client.on('end', () => this.lost(client));
    await client.connect();
    const { rows } = await client.query<{ pid: number }>(`SELECT pg_backend_pid() AS pid`);
    this.pid = rows[0].pid;
    this.client = client;
    return client;
  }

  /** The connection ended: its locks are gone, and so is this process's leadership. */
  private lost(client: Client | null): void {
    if (client === null || client !== this.client) return;
    this.client = null;
    this.held.clear();
  }
}
