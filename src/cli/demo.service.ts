import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { DataSource } from 'typeorm';
import { TokensService } from '../auth/tokens.service';
import type { OrgAccess } from '../common/auth/actor';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { FirmwareService } from '../firmware/firmware.service';
import { FirmwareStorage } from '../firmware/storage/firmware-storage';
import { FirmwareUploadReceiver } from '../firmware/upload-receiver';
import { MembersService } from '../members/members.service';
import { OrgsService } from '../orgs/orgs.service';
import { ProductsService } from '../products/products.service';
import { SigningKeysService } from '../signing-keys/signing-keys.service';
import { UsersService } from '../users/users.service';
import { buildDemoFirmware, type DemoFirmwareMeta, generateDemoSigningKey } from './demo-firmware';

export const DEMO_ORG = 'demo';
export const DEMO_EMAIL = 'demo@example.com';
export const DEMO_PASSWORD = 'demo password';
export const DEMO_MEMBERS = [
  { email: 'demo-manager@example.com', username: 'demo-manager', name: 'Demo Manager', role: 'manage' },
  { email: 'demo-viewer@example.com', username: 'demo-viewer', name: 'Demo Viewer', role: 'view' },
] as const;

/** Products, each with its firmware versions (oldest first) and the hardware it runs on. */
export const DEMO_PRODUCTS = [
  { name: 'gateway', platform: 'rpi4', architecture: 'aarch64', versions: ['1.0.0', '1.1.0', '1.2.0'] },
  { name: 'sensor', platform: 'rpi0', architecture: 'arm', versions: ['2.0.0', '2.1.0'] },
] as const;

const TAGS = ['production', 'beta', 'lab', 'eu', 'us', 'rooftop', 'basement'];
const BATCH = 500;

export interface DemoOptions {
  devices: number;
  /** Called after each batch of devices with (done, total). */
  progress?: (done: number, total: number) => void;
}

export interface DemoResult {
  token: string;
  org: string;
  email: string;
  password: string;
  products: { name: string; firmwares: { version: string; uuid: string }[] }[];
  devices: number;
  connected: number;
  pendingUpdates: number;
  irohEndpoints: number;
  swaggerUrl: string;
}

export class DemoExistsError extends Error {}

/**
 * `fleethub demo`: a ready organization to explore. Users, the organization, products, the signing key and the
 * firmware go through the real services (the firmware as a signed .fw file, ingested as an upload is); the fleet
 * itself is inserted in batches of SQL. On any failure everything created so far is removed again.
 */
@Injectable()
export class DemoService {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly users: UsersService,
    private readonly orgs: OrgsService,
    private readonly members: MembersService,
    private readonly products: ProductsService,
    private readonly keys: SigningKeysService,
    private readonly firmware: FirmwareService,
    private readonly tokens: TokensService,
    private readonly storage: FirmwareStorage,
    private readonly uploads: FirmwareUploadReceiver,
  ) {}

  async seed(options: DemoOptions): Promise<DemoResult> {
    await this.assertAbsent();
    try {
      return await this.create(options);
    } catch (err) {
      await this.removeDemo();
      throw err;
    }
  }

  private async assertAbsent(): Promise<void> {
    const emails = [DEMO_EMAIL, ...DEMO_MEMBERS.map((m) => m.email)];
    const rows = await this.db.query<{ what: string }[]>(
      `SELECT 'organization "' || name || '"' AS what FROM orgs WHERE name = $1
       UNION ALL SELECT 'user ' || email FROM users WHERE email = ANY($2)`,
      [DEMO_ORG, emails],
    );
    if (rows.length > 0) {
      throw new DemoExistsError(
        `the demo data already exists (${rows.map((r) => r.what).join(', ')}); ` +
          'use a fresh FLEETHUB_DATA_DIR or database, or "fleethub tokens create --email demo@example.com" for a token',
      );
    }
  }

  private async create(options: DemoOptions): Promise<DemoResult> {
    const owner = await this.users.create({
      email: DEMO_EMAIL,
      username: 'demo',
      name: 'Demo User',
      password: DEMO_PASSWORD,
    });
    await this.orgs.create(owner.id, DEMO_ORG);
    for (const member of DEMO_MEMBERS) {
      await this.users.create({ email: member.email, username: member.username, name: member.name });
      await this.members.addByOrgName(DEMO_ORG, member.email, member.role);
    }
    const token = await this.tokens.create(owner.id, {
      note: 'fleethub demo',
      scope: 'all',
      expiresAt: null,
    });
    const orgId = (
      await this.db.query<{ id: string }[]>(`SELECT id FROM orgs WHERE name = $1`, [DEMO_ORG])
    )[0].id;
    const access: OrgAccess = {
      actor: {
        userId: owner.id,
        email: owner.email,
        username: owner.username,
        name: owner.name,
        tokenId: '0',
        scope: 'all',
      },
      orgId,
      orgName: DEMO_ORG,
      role: 'admin',
    };

    const key = generateDemoSigningKey();
    await this.keys.createByOrgName(DEMO_ORG, 'demo-key', key.publicKey);
    const products: DemoResult['products'] = [];
    for (const product of DEMO_PRODUCTS) {
      await this.products.create(access, { name: product.name });
      const firmwares: { version: string; uuid: string }[] = [];
      for (const version of product.versions) {
        const meta: DemoFirmwareMeta = {
          product: product.name,
          version,
          platform: product.platform,
          architecture: product.architecture,
          author: 'fleethub demo',
          description: `Demo firmware ${version} for the ${product.name}`,
        };
        const file = await this.uploads.receiveStream(
          Readable.from([buildDemoFirmware(meta, key.privateKey)]),
        );
        const created = await this.firmware.ingest(access, product.name, file);
        firmwares.push({ version, uuid: created.body.data.uuid });
      }
      products.push({ name: product.name, firmwares });
    }

    await this.insertDevices(orgId, options);
    const [counts] = await this.db.query<{ devices: string; connected: string }[]>(
      `SELECT count(*) AS devices, count(*) FILTER (WHERE connection_status = 'connected') AS connected
         FROM devices WHERE org_id = $1`,
      [orgId],
    );
    const pendingUpdates = await this.insertPendingUpdates(orgId, owner.id);
    const irohEndpoints = await this.insertIrohEndpoints(orgId, owner.id);
    return {
      token,
      org: DEMO_ORG,
      email: DEMO_EMAIL,
      password: DEMO_PASSWORD,
      products,
      devices: Number(counts.devices),
      connected: Number(counts.connected),
      pendingUpdates,
      irohEndpoints,
      swaggerUrl: `${this.config.publicUrl.replace(/\/+$/, '')}/api/docs`,
    };
  }

  /**
   * Devices spread over the products (three gateways to one sensor), with tags, a firmware version and its
   * metadata, and a connection history: about a third connected now, most seen within the last week, a few never.
   */
  private async insertDevices(orgId: string, options: DemoOptions): Promise<void> {
    const total = options.devices;
    options.progress?.(0, total);
    for (let from = 1; from <= total; from += BATCH) {
      const to = Math.min(total, from + BATCH - 1);
      await this.db.query(
        `WITH firmware AS (
           SELECT f.product_id, p.name AS product, f.uuid::text AS uuid, f.version, f.platform, f.architecture,
                  f.author, f.description,
                  row_number() OVER (PARTITION BY f.product_id ORDER BY f.version_sort_key) - 1 AS nth,
                  count(*) OVER (PARTITION BY f.product_id) AS versions
             FROM firmwares f JOIN products p ON p.id = f.product_id WHERE p.org_id = $1
         ), numbered AS (
           SELECT i, CASE WHEN i % 4 = 0 THEN 'sensor' ELSE 'gateway' END AS product_name,
                  (hashtext('demo' || i) & 2147483647) AS h
             FROM generate_series($2::int, $3::int) AS i
         )
         INSERT INTO devices (org_id, product_id, identifier, description, tags, connection_status,
                              last_communication, firmware_metadata, firmware_version, firmware_platform,
                              inserted_at)
         SELECT $1, p.id, 'demo-' || n.product_name || '-' || lpad(n.i::text, 5, '0'),
                'Demo ' || n.product_name || ' #' || n.i,
                ARRAY[($4::text[])[1 + n.h % 3], ($4::text[])[4 + (n.h / 3) % 2]]
                  || CASE WHEN n.h % 5 = 0 THEN ARRAY[($4::text[])[6 + (n.h / 7) % 2]] ELSE '{}'::text[] END,
                CASE WHEN n.h % 20 = 0 THEN 'not_seen'
                     WHEN n.h % 3 = 0 THEN 'connected' ELSE 'disconnected' END::device_connection_status,
                CASE WHEN n.h % 20 = 0 THEN NULL
                     WHEN n.h % 3 = 0 THEN now() - make_interval(secs => n.h % 60)
                     ELSE now() - make_interval(mins => n.h % 10080) END,
                CASE WHEN n.h % 20 = 0 THEN NULL ELSE jsonb_build_object(
                  'uuid', f.uuid, 'product', f.product, 'version', f.version, 'platform', f.platform,
                  'architecture', f.architecture, 'author', f.author, 'description', f.description) END,
                CASE WHEN n.h % 20 = 0 THEN NULL ELSE f.version END,
                CASE WHEN n.h % 20 = 0 THEN NULL ELSE f.platform END,
                now() - make_interval(days => 30 + n.h % 60)
           FROM numbered n
           JOIN products p ON p.org_id = $1 AND p.name = n.product_name
           JOIN firmware f ON f.product_id = p.id AND f.nth = (n.h / 11) % f.versions`,
        [orgId, from, to, TAGS],
      );
      options.progress?.(to, total);
    }
  }

  /** A rollout in progress: up to 10 gateways on the oldest version are asked to move to the newest. */
  private async insertPendingUpdates(orgId: string, requestedBy: string): Promise<number> {
    const rows = await this.db.query<{ device_id: string }[]>(
      `INSERT INTO pending_updates (device_id, firmware_id, requested_by_id)
       SELECT d.id, newest.id, $2
         FROM devices d JOIN products p ON p.id = d.product_id AND p.org_id = $1 AND p.name = 'gateway'
         JOIN LATERAL (SELECT id FROM firmwares WHERE product_id = p.id
                        ORDER BY version_sort_key DESC LIMIT 1) newest ON true
        WHERE d.firmware_version = $3
        ORDER BY d.identifier LIMIT 10
       RETURNING device_id`,
      [orgId, requestedBy, DEMO_PRODUCTS[0].versions[0]],
    );
    return rows.length;
  }

  /** Every tenth device has reported an iroh endpoint id; the demo user has one registered by an operator. */
  private async insertIrohEndpoints(orgId: string, userId: string): Promise<number> {
    await this.db.query(
      `INSERT INTO iroh_endpoints (org_id, identifier, source, device_id, last_reported_at)
       SELECT $1, encode(sha256(convert_to('demo-iroh-' || $2 || '-' || d.identifier, 'UTF8')), 'hex'),
              'device_reported', d.id, d.last_communication
         FROM devices d
        WHERE d.org_id = $1 AND d.last_communication IS NOT NULL AND d.id % 10 = 0`,
      [orgId, randomBytes(8).toString('hex')],
    );
    await this.db.query(
      `INSERT INTO iroh_endpoints (org_id, identifier, source, user_id, details)
       VALUES ($1, $2, 'operator', $3, '{"label": "laptop of the demo user"}')`,
      [orgId, randomBytes(32).toString('hex'), userId],
    );
    const [row] = await this.db.query<{ n: string }[]>(
      `SELECT count(*) AS n FROM iroh_endpoints WHERE org_id = $1`,
      [orgId],
    );
    return Number(row.n);
  }

  /** Undoes a failed seed: nothing half-done stays behind. */
  private async removeDemo(): Promise<void> {
    const emails = [DEMO_EMAIL, ...DEMO_MEMBERS.map((m) => m.email)];
    await this.db.transaction(async (tx) => {
      const [org] = await tx.query<{ id: string }[]>(`SELECT id FROM orgs WHERE name = $1`, [DEMO_ORG]);
      if (org) {
        const stored = await tx.query<{ storage_key: string }[]>(
          `SELECT f.storage_key FROM firmwares f JOIN products p ON p.id = f.product_id WHERE p.org_id = $1`,
          [org.id],
        );
        await tx.query(
          `DELETE FROM pending_updates WHERE device_id IN (SELECT id FROM devices WHERE org_id = $1)`,
          [org.id],
        );
        await tx.query(`DELETE FROM iroh_endpoints WHERE org_id = $1`, [org.id]);
        await tx.query(`DELETE FROM devices WHERE org_id = $1`, [org.id]);
        await tx.query(
          `DELETE FROM firmwares WHERE product_id IN (SELECT id FROM products WHERE org_id = $1)`,
          [org.id],
        );
        await tx.query(`DELETE FROM orgs WHERE id = $1`, [org.id]);
        for (const { storage_key } of stored) await this.storage.remove(storage_key).catch(() => undefined);
      }
      await tx.query(`DELETE FROM users WHERE email = ANY($1)`, [emails]);
    });
  }
}
