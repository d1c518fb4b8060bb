import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { CustomField, EnumField, StringCastBooleanField, StringField } from '../../common/validation/fields';
import {
  QUEUE_MANAGEMENT,
  type QueueManagement,
  TAG_OPERATORS,
  type TagOperator,
} from '../deployment-group.entity';

const INT_MAX = 2_147_483_647;

/** An integer setting with NervesHub's bound (`> min - 1`), within PostgreSQL's integer. */
export function checkInteger(min: number) {
  return (value: unknown): string | null => {
    if (value === undefined) return null;
    if (typeof value !== 'number' || !Number.isInteger(value)) return 'is invalid';
    if (value < min) return min === 1 ? 'must be greater than 0' : `must be greater than or equal to ${min}`;
    if (value > INT_MAX) return `must be less than or equal to ${INT_MAX}`;
    return null;
  };
}

function IntegerSetting(name: string, min: number, example: number, description: string): PropertyDecorator {
  return (target, key) => {
    CustomField(name, checkInteger(min))(target, key);
    ApiPropertyOptional({ type: Number, minimum: min, maximum: INT_MAX, example, description })(target, key);
  };
}

export const VERSION_REQUIREMENT_DOC =
  'An Elixir version requirement (`Version.parse_requirement`); "" or null matches every device, even one ' +
  'without a version. Grammar: comparisons joined by `and` and `or` (`and` binds tighter); a comparison is an ' +
  'operator (`==`, `!=`, `>`, `>=`, `<`, `<=`, `~>`) and a SemVer 2.0.0 version (`MAJOR.MINOR.PATCH`, optional ' +
  '`-pre-release` and `+build`; build metadata is ignored), or a bare version meaning `==`. `~>` also takes ' +
  '`MAJOR.MINOR`: `~> 1.2` is `>= 1.2.0 and < 2.0.0-0`, `~> 1.2.3` is `>= 1.2.3 and < 1.3.0-0`. Pre-release ' +
  "versions match like any other (Elixir's `allow_pre: true`). A device whose version is not SemVer never " +
  'matches a non-empty requirement. Examples: `~> 1.2`, `>= 1.0.0 and < 2.0.0`, `< 1.0.0 or >= 2.0.0-rc.1`.';

export class DeploymentConditionsDto {
  @ApiPropertyOptional({
    type: String,
    nullable: true,
    example: '~> 1.2',
    description: VERSION_REQUIREMENT_DOC,
  })
  version?: string | null;

  @ApiPropertyOptional({
    type: [String],
    nullable: true,
    example: ['beta'],
    description: 'Device tags; [] or null: every device. A comma-separated string is accepted too.',
  })
  tags?: string[] | string | null;

  @ApiPropertyOptional({
    enum: TAG_OPERATORS,
    example: 'and',
    description: '`and` (default): a device carries every tag; `or`: at least one',
  })
  tag_operator?: TagOperator;
}

function isObject(value: unknown): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The rollout settings both create and update take. */
class DeploymentSettingsDto {
  @StringCastBooleanField({
    example: false,
    description: 'Default false: a new group rolls nothing out until turned on',
  })
  is_active?: boolean;

  @StringField({ max: 1000, nullable: true, trim: false, doc: { example: 'Staged rollout for the lab' } })
  notes?: string | null;

  @StringCastBooleanField({ example: true, description: 'Default true' })
  delta_updatable?: boolean;

  @IntegerSetting('concurrent_updates', 1, 10, 'Updates in flight at once; default 10')
  concurrent_updates?: number;

  @IntegerSetting(
    'inflight_update_expiration_minutes',
    1,
    60,
    'An update in flight expires after; default 60',
  )
  inflight_update_expiration_minutes?: number;

  @IntegerSetting('device_failure_threshold', 1, 3, 'Failures of one device that block it; default 3')
  device_failure_threshold?: number;

  @IntegerSetting(
    'device_failure_rate_seconds',
    60,
    180,
    'Window of the device failure rate; default 180, at least 60',
  )
  device_failure_rate_seconds?: number;

  @IntegerSetting(
    'device_failure_rate_amount',
    1,
    5,
    'Failures within the window that block a device; default 5',
  )
  device_failure_rate_amount?: number;

  @IntegerSetting(
    'failure_threshold',
    1,
    50,
    'Failed updates of the current release that pause the group; default 50',
  )
  failure_threshold?: number;

  @IntegerSetting(
    'penalty_timeout_minutes',
    60,
    1440,
    'How long a failing device waits; default 1440, at least 60',
  )
  penalty_timeout_minutes?: number;

  @EnumField(QUEUE_MANAGEMENT, {
    doc: { example: 'FIFO', description: 'Order by connection time; default FIFO' },
  })
  queue_management?: QueueManagement;

  @StringCastBooleanField({
    example: false,
    description: 'Devices stay in the group whatever their conditions, and no device joins it automatically',
  })
  lock_device_membership?: boolean;
}

export class CreateDeploymentGroupDto extends DeploymentSettingsDto {
  /** `{"deployment": {...}}` is read as its inner object: both forms are accepted. */
  static readonly unwrapKey = 'deployment';

  @StringField({
    required: true,
    max: 255,
    doc: { example: 'production', description: 'Unique within the product' },
  })
  name: string;

  @StringField({
    required: true,
    doc: {
      example: '3a1f0e3c-8a4e-5d7c-9b2a-0c1d2e3f4a5b',
      description: "uuid of one of the product's firmware",
    },
  })
  firmware: string;

  @CustomField('conditions', (value) =>
    value === undefined || value === null
      ? "can't be blank"
      : isObject(value)
        ? null
        : 'must be an object {version, tags, tag_operator}',
  )
  @ApiProperty({ type: DeploymentConditionsDto })
  conditions: DeploymentConditionsDto;
}

export class CreateDeploymentGroupWrappedDto {
  @ApiProperty({ type: CreateDeploymentGroupDto }) deployment: CreateDeploymentGroupDto;
}

export class UpdateDeploymentGroupDto extends DeploymentSettingsDto {
  static readonly unwrapKey = 'deployment';

  @StringField({ nonBlank: true, max: 255, doc: { example: 'production', description: 'Renames the group' } })
  name?: string;

  @StringField({
    nonBlank: true,
    doc: {
      description:
        "uuid of one of the product's firmware: a new release (number + 1); its platform and architecture " +
        "must be the group's",
    },
  })
  firmware?: string;

  @CustomField('conditions', (value) =>
    value === undefined || isObject(value) ? null : 'must be an object {version, tags, tag_operator}',
  )
  @ApiPropertyOptional({ type: DeploymentConditionsDto })
  conditions?: DeploymentConditionsDto;

  @EnumField(['on', 'off'], { doc: { description: 'NervesHub alias of is_active: "on" or "off"' } })
  state?: 'on' | 'off';
}

export class FirmwareSummaryView {
  @ApiProperty({ example: '1.2.0' }) version: string;
  @ApiProperty({ example: 'arm' }) architecture: string;
  @ApiProperty({ example: 'rpi4' }) platform: string;
  @ApiProperty({ example: '3a1f0e3c-8a4e-5d7c-9b2a-0c1d2e3f4a5b' }) uuid: string;
}

export class DeploymentReleaseSummaryView {
  @ApiProperty({ example: 2 }) number: number;
  @ApiProperty({ type: FirmwareSummaryView }) firmware: FirmwareSummaryView;
  @ApiProperty() inserted_at: string;
  @ApiProperty() updated_at: string;
}

export class DeploymentReleaseView extends DeploymentReleaseSummaryView {
  @ApiProperty({ example: 0, description: 'Updates to this release that ended failed or ignored' })
  failed_count: number;
  @ApiProperty({ type: String, nullable: true, example: 'ops@example.com' }) created_by: string | null;
}

export class ConditionsView {
  @ApiProperty({ example: '~> 1.2' }) version: string;
  @ApiProperty({ type: [String], example: ['beta'] }) tags: string[];
  @ApiProperty({ enum: TAG_OPERATORS }) tag_operator: TagOperator;
}

export class DeploymentCountsView {
  @ApiProperty({ description: 'Devices in the group' }) devices: number;
  @ApiProperty({ description: 'Updates of the group in flight' }) updating: number;
  @ApiProperty({ description: "Devices of the group running the current release's firmware" })
  updated: number;
  @ApiProperty({ description: 'Updates of the current release that ended failed or ignored' }) failed: number;
  @ApiProperty({ description: 'Devices of the group in the penalty box (updates_blocked_until ahead)' })
  blocked: number;
}

export class DeploymentGroupView {
  @ApiProperty({ example: 'production' }) name: string;
  @ApiProperty() is_active: boolean;
  @ApiProperty({ enum: ['on', 'off'] }) state: 'on' | 'off';
  @ApiProperty() firmware_uuid: string;
  @ApiProperty({ type: DeploymentReleaseSummaryView }) current_release: DeploymentReleaseSummaryView;
  @ApiProperty({ type: ConditionsView }) conditions: ConditionsView;
  @ApiProperty() delta_updatable: boolean;
  @ApiProperty() device_count: number;
  @ApiProperty() releases_count: number;
  @ApiProperty({ type: String, nullable: true }) notes: string | null;
  @ApiProperty() platform: string;
  @ApiProperty() architecture: string;
  @ApiProperty() concurrent_updates: number;
  @ApiProperty() inflight_update_expiration_minutes: number;
  @ApiProperty() device_failure_threshold: number;
  @ApiProperty() device_failure_rate_seconds: number;
  @ApiProperty() device_failure_rate_amount: number;
  @ApiProperty() failure_threshold: number;
  @ApiProperty() penalty_timeout_minutes: number;
  @ApiProperty({ enum: QUEUE_MANAGEMENT }) queue_management: QueueManagement;
  @ApiProperty() lock_device_membership: boolean;
  @ApiProperty({
    type: String,
    nullable: true,
    description: 'Why the group paused itself (failure_threshold reached); cleared when a person turns it on',
  })
  paused_reason: string | null;
  @ApiProperty({ type: String, nullable: true }) paused_at: string | null;
  @ApiProperty({ type: DeploymentCountsView }) counts: DeploymentCountsView;
  @ApiProperty() inserted_at: string;
  @ApiProperty() updated_at: string;
}
