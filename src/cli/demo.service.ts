import { Inject, Injectable } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { TokensService } from '../auth/tokens.service';
import type { OrgAccess } from '../common/auth/actor';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { type Tx, Transactions } from '../database/transactions';
import { DeploymentGroupsRepository } from '../deployments/deployment-groups.repository';
import { DeploymentsService } from '../deployments/deployments.service';
import { DeploymentMembershipService } from '../deployments/deployment-membership.service';
import { DevicesRepository } from '../devices/devices.repository';
import { FirmwareService } from '../firmware/firmware.service';
import { PendingUpdatesRepository } from '../firmware/pending-updates.repository';
import { FirmwareUploadReceiver } from '../firmware/upload-receiver';
import { DEFAULT_INSTANCE, IROH_SERVICE } from '../iroh/dto/iroh-fields';
import { IrohEndpointsRepository } from '../iroh/iroh-endpoints.repository';
import { MembersService } from '../members/members.service';
import { OrgsRepository } from '../orgs/orgs.repository';
import { OrgsService } from '../orgs/orgs.service';
import { ProductsService } from '../products/products.service';
import { SigningKeysService } from '../signing-keys/signing-keys.service';
import { UsersRepository } from '../users/users.repository';
import { UsersService } from '../users/users.service';
import { buildDemoFirmware, type DemoFirmwareMeta, generateDemoSigningKey } from './demo-firmware';

export const DEMO_ORG = 'demo';
export const DEMO_EMAIL = 'demo@example.com';
export const DEMO_PASSWORD = 'demo password';
export const DEMO_MEMBERS = [
  { email: 'demo-manager@example.com', username: 'demo-manager', name: 'Demo Manager', role: 'manage' },
  { email: 'demo-viewer@example.com', username: 'demo-viewer', name: 'Demo Viewer', role: 'view' },
] as const;
const DEMO_EMAILS = [DEMO_EMAIL, ...DEMO_MEMBERS.map((m) => m.email)];

/**
 * Products, each with its firmware versions (oldest first), the hardware it runs on and the extensions it enables
 * besides the default `network_identity` (the sensors report health, location and logs: README, "Reading a device's
 * logs and health").
 */
export const DEMO_PRODUCTS = [
  {
    name: 'gateway',
    platform: 'rpi4',
    architecture: 'aarch64',
    versions: ['1.0.0', '1.1.0', '1.2.0'],
    extensions: {},
  },
  {
    name: 'sensor',
    platform: 'rpi0',
    architecture: 'arm',
    versions: ['2.0.0', '2.1.0'],
    extensions: { health: true, geo: true, logging: true },
  },
] as const;

const TAGS = ['production', 'beta', 'lab', 'eu', 'us', 'rooftop', 'basement'];
const BATCH = 500;
/** The rollout in progress: a deployment group of the gateways, on their newest firmware. */
export const DEMO_GROUP = {
  name: 'gateway-stable',
  conditions: { version: '~> 1.0', tags: [] as string[], tag_operator: 'and' as const },
  concurrent_updates: 10,
  notes: 'fleethub demo: a rollout in progress',
};
/** Of the group's devices behind its release, every this many has already installed it. */
const UPDATED_EVERY = 2;
/** Devices whose update failed: in the penalty box. */
const BLOCKED = 2;

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
  deploymentGroup: {
    name: string;
    product: string;
    version: string;
    devices: number;
    updated: number;
    updating: number;
    blocked: number;
  };
  swaggerUrl: string;
}

export class DemoExistsError extends Error {}

/**
 * `fleethub demo`: a ready organization to explore. Users, the organization, products, the signing key and the
 * firmware go through the real services (the firmware as a signed .fw file, ingested as an upload is); the fleet
 * (devices, iroh endpoints) is made up in bulk by the owning repositories, in batches of devices, all in one
 * transaction. The deployment group is created by the deployments feature (its membership computed as for any
 * group), then its rollout is made to look under way: some devices updated, some in flight, two in the penalty box.
 * On any failure everything created so far is removed again.
 */
@Injectable()
export class DemoService {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly transactions: Transactions,
    private readonly users: UsersService,
    private readonly orgs: OrgsService,
    private readonly members: MembersService,
    private readonly products: ProductsService,
    private readonly deployments: DeploymentsService,
    private readonly membership: DeploymentMembershipService,
    private readonly keys: SigningKeysService,
    private readonly firmware: FirmwareService,
    private readonly tokens: TokensService,
    private readonly uploads: FirmwareUploadReceiver,
    // What only a demo does: rows in bulk, and deleting the users and organization of a demo it could not finish.
    private readonly devices: DevicesRepository,
    private readonly pendingUpdates: PendingUpdatesRepository,
    private readonly deploymentGroups: DeploymentGroupsRepository,
    private readonly irohEndpoints: IrohEndpointsRepository,
    private readonly orgRecords: OrgsRepository,
    private readonly userRecords: UsersRepository,
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
    const found: string[] = [];
    if (await this.orgs.findByName(DEMO_ORG)) found.push(`organization "${DEMO_ORG}"`);
    for (const email of DEMO_EMAILS) {
      const user = await this.users.findByEmail(email);
      if (user) found.push(`user ${user.email}`);
    }
    if (found.length > 0) {
      throw new DemoExistsError(
        `the demo data already exists (${found.join(', ')}); ` +
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
    const access = await this.ownerAccess();
    if (!access) throw new Error('the demo organization vanished while it was being created');

    const key = generateDemoSigningKey();
    await this.keys.createByOrgName(DEMO_ORG, 'demo-key', key.publicKey);
    const products: DemoResult['products'] = [];
    for (const product of DEMO_PRODUCTS) {
      await this.products.create(access, { name: product.name });
      await this.products.updateExtensions(access, product.name, product.extensions);
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

    // The deployment group first, as through the API (release 1, audit; no device yet); then the fleet, its
    // membership and the rollout's progress commit whole or not at all: a failed seed has no devices to remove.
    const [gateway] = products;
    const newest = gateway.firmwares.at(-1)!;
    await this.deployments.create(access, gateway.name, {
      ...DEMO_GROUP,
      conditions: { ...DEMO_GROUP.conditions },
      firmware: newest.uuid,
      is_active: true,
    });
    const gatewayId = (await this.products.findInOrg(access, gateway.name)).id;
    const fleet = await this.transactions.run(async (tx) => {
      await this.insertDevices(access.orgId, options, tx);
      const counts = await this.devices.countConnectedInOrg(access.orgId, tx);
      const rollout = await this.insertRollout(gatewayId, tx);
      const irohEndpoints = await this.insertIrohEndpoints(access.orgId, owner.id, tx);
      return { ...counts, rollout, irohEndpoints };
    });
    return {
      token,
      org: DEMO_ORG,
      email: DEMO_EMAIL,
      password: DEMO_PASSWORD,
      products,
      devices: fleet.devices,
      connected: fleet.connected,
      pendingUpdates: fleet.rollout.updating,
      irohEndpoints: fleet.irohEndpoints,
      deploymentGroup: {
        ...fleet.rollout,
        name: DEMO_GROUP.name,
        product: gateway.name,
        version: newest.version,
      },
      swaggerUrl: `${this.config.publicUrl.replace(/\/+$/, '')}/api/docs`,
    };
  }

  /** The demo user as the admin of the demo organization, once both exist. */
  private async ownerAccess(): Promise<OrgAccess | null> {
    const org = await this.orgs.findByName(DEMO_ORG);
    const owner = await this.users.findByEmail(DEMO_EMAIL);
    if (!org || !owner) return null;
    return {
      actor: {
        userId: owner.id,
        email: owner.email,
        username: owner.username,
        name: owner.name,
        tokenId: '0',
        scope: 'all',
      },
      orgId: org.id,
      orgName: DEMO_ORG,
      role: 'admin',
    };
  }

  /**
   * Devices spread over the products (three gateways to one sensor), with tags, a firmware version and its
   * metadata, and a connection history: about a third connected now, most seen within the last week, a few never.
   */
  private async insertDevices(orgId: string, options: DemoOptions, tx: Tx): Promise<void> {
    const total = options.devices;
    options.progress?.(0, total);
    for (let from = 1; from <= total; from += BATCH) {
      const to = Math.min(total, from + BATCH - 1);
      await this.devices.insertDemoFleet(orgId, from, to, TAGS, tx);
      options.progress?.(to, total);
    }
  }

  /**
   * A rollout in progress in the demo group: its members computed by the membership service (set-wise, as after
   * any group change), then what the orchestrator and the devices would have done by now: half of the members
   * behind the release have installed it, two failed theirs (penalty box, two failures of the release), and
   * `concurrent_updates` connected ones are installing it (pending updates naming the group and release). The
   * demo's devices have no connection time, so a running server's orchestrator claims none of them.
   */
  private async insertRollout(productId: string, tx: Tx) {
    await this.membership.recomputeProduct(productId, tx);
    const groupId = await this.deploymentGroups.findIdByName(productId, DEMO_GROUP.name, tx);
    if (!groupId) throw new Error('the demo deployment group vanished while it was being created');
    await this.devices.updateDemoDeploymentDevices(groupId, UPDATED_EVERY, tx);
    const blocked = await this.devices.blockDemoDeploymentDevices(groupId, BLOCKED, tx);
    await this.deploymentGroups.addDemoReleaseFailures(groupId, blocked, tx);
    await this.pendingUpdates.insertDemoDeploymentRollout(groupId, tx);
    const row = (await this.deploymentGroups.findByName(productId, DEMO_GROUP.name, tx))!;
    return {
      devices: row.device_count,
      updated: row.updated_count,
      updating: row.updating_count,
      blocked: row.blocked_count,
    };
  }

  /** Every tenth device has reported an iroh endpoint id; the demo user has one registered by an operator. */
  private async insertIrohEndpoints(orgId: string, userId: string, tx: Tx): Promise<number> {
    await this.irohEndpoints.insertDemoDeviceReported(orgId, randomBytes(8).toString('hex'), tx);
    await this.irohEndpoints.insertOperator(
      {
        orgId,
        identifier: randomBytes(32).toString('hex'),
        service: IROH_SERVICE,
        instance: DEFAULT_INSTANCE,
        details: { label: 'laptop of the demo user' },
        userId,
      },
      tx,
    );
    return this.irohEndpoints.countInOrg(orgId, tx);
  }

  /**
   * Undoes a failed seed: nothing half-done stays behind. The fleet is one transaction, so no device is left; the
   * products go as the products feature deletes them (after their deployment groups) (firmware rows, then their files), then the organization
   * (its keys, members and audit log with it) and the demo users (their tokens with them).
   */
  private async removeDemo(): Promise<void> {
    const access = await this.ownerAccess();
    if (access) {
      for (const product of (await this.products.list(access)).data) {
        // Its groups first: their releases hold on to the firmware the product's deletion removes.
        for (const group of (await this.deployments.list(access, product.name)).data) {
          await this.deployments.remove(access, product.name, group.name);
        }
        await this.products.remove(access, product.name);
      }
    }
    await this.transactions.run(async (tx) => {
      await this.orgRecords.deleteByName(DEMO_ORG, tx);
      await this.userRecords.deleteByEmails(DEMO_EMAILS, tx);
    });
  }
}
