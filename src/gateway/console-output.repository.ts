import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';

/** The `device_console_output` table: the bounded tail of each device's console output. */
@Injectable()
export class ConsoleOutputRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async findByDevice(deviceId: string): Promise<{ output: string; updated_at: Date } | undefined> {
    const [row] = await this.db.query<{ output: string; updated_at: Date }[]>(
      `SELECT output, updated_at FROM device_console_output WHERE device_id = $1`,
      [deviceId],
    );
    return row;
  }

  /**
   * Appends `data[i]` to the output of device `ids[i]`, keeping the last `limit` characters, in one statement;
   * devices that no longer exist are skipped.
   */
  async append(ids: readonly string[], data: readonly string[], limit: number): Promise<void> {
    await this.db.query(
      `INSERT INTO device_console_output AS o (device_id, output, updated_at)
         SELECT v.id, right(v.data, $3), now() FROM unnest($1::bigint[], $2::text[]) AS v(id, data)
             WHERE EXISTS (SELECT 1 FROM devices d WHERE d.id = v.id)
         ON CONFLICT (device_id) DO UPDATE
           SET output = right(o.output || EXCLUDED.output, $3), updated_at = now()`,
      [ids, data, limit],
    );
  }
}
