import { Injectable } from '@nestjs/common';
import { AuditService } from '../audit/audit.service';
import type { OrgAccess } from '../common/auth/actor';
import { DomainError, type FieldErrors } from '../common/errors/domain-error';
import { ALREADY_TAKEN } from '../common/errors/messages';
import { isUniqueViolation } from '../common/errors/postgres-errors';
import { Created, pathSegment } from '../common/http/created';
import { checkTags } from '../common/validation/fields';
import { isoOrNull } from '../common/values';
import { Transactions, type Tx } from '../database/transactions';
import type { ProductRecord } from '../products/product-record';
import { ProductsService } from '../products/products.service';
import { TAG_OPERATORS, type TagOperator } from './deployment-group.entity';
import {
  type DeploymentGroupRow,
  type DeploymentGroupSettings,
  DeploymentGroupsRepository,
  type DeploymentReleaseRow,
} from './deployment-groups.repository';
import { DeploymentEvents } from './deployment-events';
import { DeploymentMembershipService } from './deployment-membership.service';
import { FIRMWARE_PLATFORM_MISMATCH, FIRMWARE_UNKNOWN, GROUP_NAME_INDEX } from './deployments.errors';
import type {
  CreateDeploymentGroupDto,
  DeploymentConditionsDto,
  DeploymentGroupView,
  DeploymentReleaseView,
  UpdateDeploymentGroupDto,
} from './dto/deployment-group.dto';
import { INVALID_REQUIREMENT, isValidVersionRequirement } from './version-requirement';
import { countsView } from './deployment-counts';

type Conditions = Pick<
  DeploymentGroupSettings,
  'conditions_version' | 'conditions_tags' | 'conditions_tag_operator'
>;

/** The group's conditions from a body's `conditions` (only the keys sent), or its field errors. */
export function parseConditions(conditions: DeploymentConditionsDto): {
  value: Conditions;
  errors: FieldErrors;
} {
  const value: Conditions = {};
  const errors: FieldErrors = {};
  const { version, tags, tag_operator: operator } = conditions as Record<string, unknown>;
  if (version !== undefined) {
    if (version === null || version === '') value.conditions_version = '';
    else if (typeof version !== 'string') errors['conditions.version'] = ['must be a string'];
    else if (version.length > 1024 || !isValidVersionRequirement(version))
      errors['conditions.version'] = [INVALID_REQUIREMENT];
    else value.conditions_version = version.trim();
  }
  if (tags !== undefined) {
    const problem = checkTags(tags);
    if (problem) errors['conditions.tags'] = [problem];
    else {
      const pieces = tags === null ? [] : typeof tags === 'string' ? tags.split(',') : (tags as string[]);
      value.conditions_tags = [...new Set(pieces.map((tag) => tag.trim()).filter((tag) => tag !== ''))];
    }
  }
  if (operator !== undefined && operator !== null) {
    if (!(TAG_OPERATORS as readonly unknown[]).includes(operator))
      errors['conditions.tag_operator'] = ['is invalid'];
    else value.conditions_tag_operator = operator as TagOperator;
  }
  return { value, errors };
}

const iso = (date: Date) => date.toISOString();

export function deploymentGroupView(row: DeploymentGroupRow): DeploymentGroupView {
  return {
    name: row.name,
    is_active: row.is_active,
    state: row.is_active ? 'on' : 'off',
    firmware_uuid: row.firmware_uuid ?? '',
    current_release: {
      number: row.release_number ?? 0,
      firmware: {
        version: row.firmware_version ?? '',
        architecture: row.firmware_architecture ?? '',
        platform: row.firmware_platform ?? '',
        uuid: row.firmware_uuid ?? '',
      },
      inserted_at: row.release_inserted_at ? iso(row.release_inserted_at) : '',
      updated_at: row.release_updated_at ? iso(row.release_updated_at) : '',
    },
    conditions: {
      version: row.conditions_version,
      tags: row.conditions_tags,
      tag_operator: row.conditions_tag_operator,
    },
    delta_updatable: row.delta_updatable,
    device_count: row.device_count,
    releases_count: row.releases_count,
    notes: row.notes,
    platform: row.platform,
    architecture: row.architecture,
    concurrent_updates: row.concurrent_updates,
    inflight_update_expiration_minutes: row.inflight_update_expiration_minutes,
    device_failure_threshold: row.device_failure_threshold,
    device_failure_rate_seconds: row.device_failure_rate_seconds,
    device_failure_rate_amount: row.device_failure_rate_amount,
    failure_threshold: row.failure_threshold,
    penalty_timeout_minutes: row.penalty_timeout_minutes,
    queue_management: row.queue_management,
    lock_device_membership: row.lock_device_membership,
    paused_reason: row.paused_reason,
    paused_at: isoOrNull(row.paused_at),
    counts: countsView(row),
    inserted_at: iso(row.inserted_at),
    updated_at: iso(row.updated_at),
  };
}

function releaseView(row: DeploymentReleaseRow): DeploymentReleaseView {
  return {
    number: row.number,
    firmware: {
      version: row.firmware_version,
      architecture: row.firmware_architecture,
      platform: row.firmware_platform,
      uuid: row.firmware_uuid,
    },
    inserted_at: iso(row.inserted_at),
    updated_at: iso(row.updated_at),
    failed_count: row.failed_count,
    created_by: row.created_by,
  };
}

/** The settings a body sets, in column names (conditions apart). */
function settingsOf(dto: CreateDeploymentGroupDto | UpdateDeploymentGroupDto): DeploymentGroupSettings {
  const settings: DeploymentGroupSettings = {
    name: dto.name,
    is_active: dto.is_active,
    notes: dto.notes === undefined ? undefined : dto.notes === null || dto.notes === '' ? null : dto.notes,
    delta_updatable: dto.delta_updatable,
    concurrent_updates: dto.concurrent_updates,
    inflight_update_expiration_minutes: dto.inflight_update_expiration_minutes,
    device_failure_threshold: dto.device_failure_threshold,
    device_failure_rate_seconds: dto.device_failure_rate_seconds,
    device_failure_rate_amount: dto.device_failure_rate_amount,
    failure_threshold: dto.failure_threshold,
    penalty_timeout_minutes: dto.penalty_timeout_minutes,
    queue_management: dto.queue_management,
    lock_device_membership: dto.lock_device_membership,
  };
  for (const key of Object.keys(settings) as (keyof DeploymentGroupSettings)[]) {
    if (settings[key] === undefined) delete settings[key];
  }
  return settings;
}

/** Settings that decide which devices a group holds. */
const MEMBERSHIP_RULES: readonly (keyof DeploymentGroupSettings)[] = [
  'lock_device_membership',
  'conditions_version',
  'conditions_tags',
  'conditions_tag_operator',
];
/** Changes that can move devices between groups: those, and turning the group on or off. */
const MEMBERSHIP_SETTINGS: readonly (keyof DeploymentGroupSettings)[] = ['is_active', ...MEMBERSHIP_RULES];

@Injectable()
export class DeploymentsService {
  constructor(
    private readonly groups: DeploymentGroupsRepository,
    private readonly membership: DeploymentMembershipService,
    private readonly products: ProductsService,
    private readonly transactions: Transactions,
    private readonly audit: AuditService,
    private readonly events: DeploymentEvents,
  ) {}

  async list(access: OrgAccess, productName: string): Promise<{ data: DeploymentGroupView[] }> {
    const product = await this.products.findInOrg(access, productName);
    return { data: (await this.groups.listForProduct(product.id)).map(deploymentGroupView) };
  }

  async show(access: OrgAccess, productName: string, name: string): Promise<{ data: DeploymentGroupView }> {
    const product = await this.products.findInOrg(access, productName);
    return { data: deploymentGroupView(await this.find(product, name)) };
  }

  async listReleases(
    access: OrgAccess,
    productName: string,
    name: string,
  ): Promise<{ data: DeploymentReleaseView[] }> {
    const product = await this.products.findInOrg(access, productName);
    const group = await this.find(product, name);
    return { data: (await this.groups.listReleases(group.id)).map(releaseView) };
  }

  async create(
    access: OrgAccess,
    productName: string,
    dto: CreateDeploymentGroupDto,
  ): Promise<Created<{ data: DeploymentGroupView }>> {
    const product = await this.products.findInOrg(access, productName);
    const conditions = parseConditions(dto.conditions);
    if (Object.keys(conditions.errors).length > 0) throw DomainError.invalid(conditions.errors);
    const settings = { ...settingsOf(dto), ...conditions.value };
    const row = await this.withNameCheck(() =>
      this.transactions.run(async (tx) => {
        const firmware = await this.groups.findFirmware(product.id, dto.firmware, tx);
        if (!firmware) throw DomainError.invalidField('firmware', FIRMWARE_UNKNOWN);
        const groupId = await this.groups.insert(access.orgId, product.id, firmware, settings, tx);
        await this.groups.addRelease(groupId, firmware.id, access.actor.userId, tx);
        await this.membership.recomputeAfterGroupChange(product.id, groupId, false, tx);
        await this.events.groupChanged(groupId, tx);
        await this.record(tx, access, 'deployment_group.create', dto.name, {
          product: product.name,
          firmware: firmware.uuid,
          ...settings,
        });
        return this.groups.findByName(product.id, dto.name, tx);
      }),
    );
    const path = `/api/orgs/${pathSegment(access.orgName)}/products/${pathSegment(product.name)}/deployments`;
    return new Created(`${path}/${pathSegment(dto.name)}`, { data: deploymentGroupView(row!) });
  }

  async update(
    access: OrgAccess,
    productName: string,
    name: string,
    dto: UpdateDeploymentGroupDto,
  ): Promise<{ data: DeploymentGroupView }> {
    const product = await this.products.findInOrg(access, productName);
    const conditions = dto.conditions ? parseConditions(dto.conditions) : { value: {}, errors: {} };
    if (Object.keys(conditions.errors).length > 0) throw DomainError.invalid(conditions.errors);
    const settings: DeploymentGroupSettings = { ...settingsOf(dto), ...conditions.value };
    if (dto.state !== undefined) settings.is_active = dto.state === 'on';
    // A person turning the group on resumes it: the reason it paused itself goes.
    if (settings.is_active === true) Object.assign(settings, { paused_reason: null, paused_at: null });
    const row = await this.withNameCheck(() =>
      this.transactions.run(async (tx) => {
        const group = await this.groups.lockByName(product.id, name, tx);
        if (!group) throw DomainError.notFound();
        await this.groups.update(group.id, settings, tx);
        let release: { number: number; firmware: string } | null = null;
        if (dto.firmware !== undefined) {
          const firmware = await this.groups.findFirmware(product.id, dto.firmware, tx);
          if (!firmware) throw DomainError.invalidField('firmware', FIRMWARE_UNKNOWN);
          if (firmware.platform !== group.platform || firmware.architecture !== group.architecture) {
            throw DomainError.invalidField(
              'firmware',
              FIRMWARE_PLATFORM_MISMATCH(group.platform, group.architecture),
            );
          }
          const number = await this.groups.addRelease(group.id, firmware.id, access.actor.userId, tx);
          release = { number, firmware: firmware.uuid };
        }
        await this.events.groupChanged(group.id, tx);
        const newName = settings.name ?? name;
        // A new release changes no one's membership: only which group a device without one would prefer, and
        // such a device matches no open group.
        if (MEMBERSHIP_SETTINGS.some((key) => settings[key] !== undefined)) {
          const rulesChanged = MEMBERSHIP_RULES.some((key) => settings[key] !== undefined);
          await this.membership.recomputeAfterGroupChange(product.id, group.id, rulesChanged, tx);
        }
        const { paused_reason: _reason, paused_at: _at, ...changes } = settings;
        if (Object.keys(changes).length > 0) {
          await this.record(tx, access, 'deployment_group.update', newName, {
            product: product.name,
            ...(newName !== name && { previous_name: name }),
            ...changes,
          });
        }
        if (release) {
          await this.record(tx, access, 'deployment_group.release', newName, {
            product: product.name,
            ...release,
          });
        }
        return this.groups.findByName(product.id, newName, tx);
      }),
    );
    return { data: deploymentGroupView(row!) };
  }

  async remove(access: OrgAccess, productName: string, name: string): Promise<void> {
    const product = await this.products.findInOrg(access, productName);
    await this.transactions.run(async (tx) => {
      const group = await this.groups.lockByName(product.id, name, tx);
      if (!group) throw DomainError.notFound();
      await this.groups.delete(group.id, tx);
      // Its devices are free now (a trigger deleted their memberships): they join their best other match.
      await this.membership.recomputeAfterGroupChange(product.id, group.id, true, tx);
      await this.events.groupChanged(group.id, tx);
      await this.record(tx, access, 'deployment_group.delete', name, { product: product.name });
    });
  }

  private async find(product: ProductRecord, name: string): Promise<DeploymentGroupRow> {
    const row = await this.groups.findByName(product.id, name);
    if (!row) throw DomainError.notFound();
    return row;
  }

  /** The id of the product's group of this name, or the 404 (the archives feature attaches archives to it). */
  async groupIdOf(product: ProductRecord, name: string): Promise<string> {
    const id = await this.groups.findIdByName(product.id, name);
    if (id === null) throw DomainError.notFound();
    return id;
  }

  private async withNameCheck<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      if (isUniqueViolation(err, GROUP_NAME_INDEX)) throw DomainError.invalidField('name', ALREADY_TAKEN);
      throw err;
    }
  }

  private record(
    tx: Tx,
    access: OrgAccess,
    action: string,
    name: string,
    details: Record<string, unknown>,
  ): Promise<void> {
    return this.audit.record(tx, {
      orgId: access.orgId,
      actor: access.actor,
      action,
      targetType: 'deployment_group',
      targetId: name,
      details,
    });
  }
}
