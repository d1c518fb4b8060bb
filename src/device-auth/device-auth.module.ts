import { Module } from '@nestjs/common';
import { DeviceRecordsModule } from '../devices/device-records.module';
import { ProductsModule } from '../products/products.module';
import { DeviceAuthenticator } from './device-authenticator';
import { NH1DeviceAuthenticator } from './nh1-device-authenticator';
import { ServerKeyService } from './server-key.service';
import { DeviceSharedSecretsController, ProductSharedSecretsController } from './shared-secrets.controller';
import { SharedSecretsRepository } from './shared-secrets.repository';
import { SharedSecretsService } from './shared-secrets.service';

@Module({
  imports: [ProductsModule, DeviceRecordsModule],
  controllers: [ProductSharedSecretsController, DeviceSharedSecretsController],
  providers: [
    ServerKeyService,
    SharedSecretsRepository,
    SharedSecretsService,
    NH1DeviceAuthenticator,
    { provide: DeviceAuthenticator, useExisting: NH1DeviceAuthenticator },
  ],
  // NH1DeviceAuthenticator itself: the gateway composes it with certificate authentication (proxy mode).
  exports: [DeviceAuthenticator, NH1DeviceAuthenticator, ServerKeyService, SharedSecretsService],
})
export class DeviceAuthModule {}
