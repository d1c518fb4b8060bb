import { Module } from '@nestjs/common';
import { DeviceAuthModule } from '../device-auth/device-auth.module';
import { DeviceRecordsModule } from '../devices/device-records.module';
import { ProductsModule } from '../products/products.module';
import { CaCertificatesController } from './ca-certificates.controller';
import { CaCertificatesRepository } from './ca-certificates.repository';
import { CaCertificatesService } from './ca-certificates.service';
import { CertificateExpiryScanner } from './certificate-expiry.scanner';
import { WebhookOutboxModule } from '../webhooks/webhook-outbox.module';
import { DeviceCertificatesController } from './device-certificates.controller';
import { DeviceCertificatesRepository } from './device-certificates.repository';
import { DeviceCertificatesService } from './device-certificates.service';
import { VerificationTokens } from './verification-tokens';

/** CA certificates of an organization and certificates of devices: what certificate authentication stands on. */
@Module({
  // DeviceAuthModule: the server key (verification tokens are signed with a sub-key of it).
  // WebhookOutboxModule: `certificate.expiring`, written by the expiry scan.
  imports: [ProductsModule, DeviceRecordsModule, DeviceAuthModule, WebhookOutboxModule],
  controllers: [CaCertificatesController, DeviceCertificatesController],
  providers: [
    CaCertificatesRepository,
    CaCertificatesService,
    CertificateExpiryScanner,
    DeviceCertificatesRepository,
    DeviceCertificatesService,
    VerificationTokens,
  ],
  exports: [CaCertificatesService, DeviceCertificatesService, CertificateExpiryScanner],
})
export class CertificatesModule {}
