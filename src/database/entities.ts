import { DeviceImport } from '../devices/device-import.entity';
import { OrgInvitation } from '../invitations/invitation.entity';
import { CliSession } from '../cli-sessions/cli-session.entity';
import { Archive } from '../archives/archive.entity';
import { DeploymentGroupArchive } from '../archives/deployment-group-archive.entity';
import { AccessToken } from '../auth/access-token.entity';
import { UserTwoFactor } from '../auth/user-two-factor.entity';
import { OrgPolicy } from '../org-policies/org-policy.entity';
import { OidcSignIn } from '../single-sign-on/oidc-sign-in.entity';
import { UserIdentity } from '../single-sign-on/user-identity.entity';
import { AuditLog } from '../audit/audit-log.entity';
import { BrowserSession } from '../browser-sessions/browser-session.entity';
import { CaCertificate } from '../certificates/ca-certificate.entity';
import { DeviceCertificate } from '../certificates/device-certificate.entity';
import { RateLimitBucket } from '../common/http/rate-limit-bucket.entity';
import { DeploymentGroup } from '../deployments/deployment-group.entity';
import { DeploymentGroupMember } from '../deployments/deployment-group-member.entity';
import { DeploymentRelease } from '../deployments/deployment-release.entity';
import { DeviceSharedSecret, ProductSharedSecret } from '../device-auth/shared-secret.entity';
import { DeviceConsoleOutput } from '../gateway/device-console-output.entity';
import { GatewayInstance } from '../gateway/gateway-instance.entity';
import { EventStreamRecord } from '../live/event-stream.entity';
import { ProductDeviceCount, ProductTagCount } from '../devices/device-counts.entity';
import { Device } from '../devices/device.entity';
import { Firmware } from '../firmware/firmware.entity';
import { FirmwareDelta } from '../firmware/deltas/firmware-delta.entity';
import { PendingUpdate } from '../firmware/pending-update.entity';
import { StorageDeletion } from '../firmware/storage/storage-deletion.entity';
import { SigningKey } from '../signing-keys/signing-key.entity';
import { OrgIrohEndpointCount } from '../iroh/iroh-endpoint-count.entity';
import { IrohEndpoint } from '../iroh/iroh-endpoint.entity';
import { Membership } from '../orgs/membership.entity';
import { Org } from '../orgs/org.entity';
import {
  ProductAlarmCount,
  ProductConnectionCount,
  ProductConnectionSample,
  ProductFirmwareCount,
} from '../overview/fleet-counts.entity';
import { Product } from '../products/product.entity';
import { SupportScript } from '../scripts/support-script.entity';
import { DeviceHealth } from '../telemetry/device-health.entity';
import { NetworkIdentity } from '../telemetry/network-identity.entity';
import { User } from '../users/user.entity';
import {
  Webhook,
  WebhookDelivery,
  WebhookDeliveryAttempt,
  WebhookDeviceConnection,
  WebhookEvent,
  WebhookSettings,
} from '../webhooks/webhook.entity';

export const ENTITIES = [
  User,
  Org,
  Membership,
  AccessToken,
  UserTwoFactor,
  OrgPolicy,
  OidcSignIn,
  UserIdentity,
  Product,
  SupportScript,
  Device,
  Firmware,
  FirmwareDelta,
  SigningKey,
  PendingUpdate,
  DeploymentGroup,
  DeploymentGroupMember,
  DeploymentRelease,
  IrohEndpoint,
  OrgIrohEndpointCount,
  ProductDeviceCount,
  ProductTagCount,
  ProductSharedSecret,
  DeviceSharedSecret,
  GatewayInstance,
  DeviceConsoleOutput,
  AuditLog,
  RateLimitBucket,
  StorageDeletion,
  CaCertificate,
  DeviceCertificate,
  NetworkIdentity,
  DeviceHealth,
  CliSession,
  OrgInvitation,
  DeviceImport,
  BrowserSession,
  EventStreamRecord,
  ProductConnectionCount,
  ProductAlarmCount,
  ProductFirmwareCount,
  ProductConnectionSample,
  Webhook,
  WebhookEvent,
  WebhookDelivery,
  WebhookDeliveryAttempt,
  WebhookDeviceConnection,
  WebhookSettings,
  Archive,
  DeploymentGroupArchive,
];
