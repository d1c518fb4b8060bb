import { Module } from '@nestjs/common';
import { InstanceBusModule } from '../database/instance-bus/instance-bus.module';
import { DeviceRecordsModule } from '../devices/device-records.module';
import { CaTrustStore } from './ca-trust.store';
import { CertificateAuthRepository } from './certificate-auth.repository';
import { CertificateDeviceAuthenticator } from './certificate-authenticator';
import { DeviceCertificatesRepository } from './device-certificates.repository';

/**
 * Certificate authentication of devices (the mTLS device socket, and the proxy mode): the registered CAs in
 * memory and the authenticator. Apart from CertificatesModule (the API), which the CLI uses without any of this.
 */
@Module({
  imports: [DeviceRecordsModule, InstanceBusModule],
  providers: [
    CertificateAuthRepository,
    CaTrustStore,
    DeviceCertificatesRepository,
    CertificateDeviceAuthenticator,
  ],
  exports: [CertificateDeviceAuthenticator, CaTrustStore],
})
export class CertificateAuthModule {}
