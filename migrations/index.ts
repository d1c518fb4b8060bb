import { Init1795322356360 } from './1795322356360-Init';
import { DeviceCounters1795323774833 } from './1795323774833-DeviceCounters';
import { GatewayAuditRateLimits1795324593147 } from './1795324593147-GatewayAuditRateLimits';
import { IrohEndpointCounts1795331669444 } from './1795331669444-IrohEndpointCounts';
import { DeviceListCoveringIndexes1795331900000 } from './1795331900000-DeviceListCoveringIndexes';
import { ShardedDeviceCounters1795336784756 } from './1795336784756-ShardedDeviceCounters';
import { DeploymentGroups1795636317875 } from './1795636317875-DeploymentGroups';
import { DeploymentRolloutIndexes1795637700000 } from './1795637700000-DeploymentRolloutIndexes';
import { DeploymentGroupMembers1795643393176 } from './1795643393176-DeploymentGroupMembers';
import { StorageDeletions1795644094391 } from './1795644094391-StorageDeletions';
import { Certificates1795671374598 } from './1795671374598-Certificates';
import { DeviceTelemetry1795765569195 } from './1795765569195-DeviceTelemetry';
import { DeviceTelemetryPartitions1795765600000 } from './1795765600000-DeviceTelemetryPartitions';
import { DeviceCertificateAuthority1795765616794 } from './1795765616794-DeviceCertificateAuthority';
import { NervesHubParity1795767991740 } from './1795767991740-NervesHubParity';
import { BrowserSessions1795913691329 } from './1795913691329-BrowserSessions';
import { EventStreams1795923198058 } from './1795923198058-EventStreams';
import { BulkDeviceCounts1795924907655 } from './1795924907655-BulkDeviceCounts';
import { FleetOverview1795926094061 } from './1795926094061-FleetOverview';
import { HealthAlarmCounts1795933747122 } from './1795933747122-HealthAlarmCounts';
import { TwoFactor1795933857844 } from './1795933857844-TwoFactor';
import { BulkWindowIndex1795934010948 } from './1795934010948-BulkWindowIndex';
import { OrgPolicies1795934868820 } from './1795934868820-OrgPolicies';
import { TokenLastUsedAddress1795935365541 } from './1795935365541-TokenLastUsedAddress';
import { SingleSignOn1795936223648 } from './1795936223648-SingleSignOn';
import { Webhooks1795937034619 } from './1795937034619-Webhooks';
import { FirmwareDeltas1795937097905 } from './1795937097905-FirmwareDeltas';
import { Archives1795938194590 } from './1795938194590-Archives';
import { WebhookFleetEvents1795945685886 } from './1795945685886-WebhookFleetEvents';
import { WebhookLiveEvents1795945722623 } from './1795945722623-WebhookLiveEvents';
import { WebhookThroughput1795961190459 } from './1795961190459-WebhookThroughput';

// Every migration, in order. Add new ones at the end; never edit one that has landed.
export const MIGRATIONS: Function[] = [
  Init1795322356360,
  DeviceCounters1795323774833,
  GatewayAuditRateLimits1795324593147,
  IrohEndpointCounts1795331669444,
  DeviceListCoveringIndexes1795331900000,
  ShardedDeviceCounters1795336784756,
  DeploymentGroups1795636317875,
  DeploymentRolloutIndexes1795637700000,
  DeploymentGroupMembers1795643393176,
  StorageDeletions1795644094391,
  Certificates1795671374598,
  DeviceTelemetry1795765569195,
  DeviceTelemetryPartitions1795765600000,
  DeviceCertificateAuthority1795765616794,
  NervesHubParity1795767991740,
  BrowserSessions1795913691329,
  EventStreams1795923198058,
  BulkDeviceCounts1795924907655,
  FleetOverview1795926094061,
  HealthAlarmCounts1795933747122,
  TwoFactor1795933857844,
  BulkWindowIndex1795934010948,
  OrgPolicies1795934868820,
  TokenLastUsedAddress1795935365541,
  SingleSignOn1795936223648,
  Webhooks1795937034619,
  FirmwareDeltas1795937097905,
  Archives1795938194590,
  WebhookFleetEvents1795945685886,
  WebhookLiveEvents1795945722623,
  WebhookThroughput1795961190459,
];
