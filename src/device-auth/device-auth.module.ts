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
    { provide: DeviceAuthenticator, useClass: NH1DeviceAuthenticator },
  ],
  exports: [DeviceAuthenticator, ServerKeyService, SharedSecretsService],
})
export class DeviceAuthModule {}
