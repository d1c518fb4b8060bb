import { Body, Controller, Delete, Get, HttpCode, Param, Post } from '@nestjs/common';
import { ApiParam, ApiTags } from '@nestjs/swagger';
import type { OrgAccess } from '../common/auth/actor';
import { CurrentAccess, Route } from '../common/auth/decorators';
import { SetsLocation } from '../common/http/created';
import { ApiOperationDoc } from '../common/openapi/api-docs';
import { CaCertificatesService } from './ca-certificates.service';
import { CaCertificateView, CreateCaCertificateDto, VerificationTokenView } from './dto/ca-certificate.dto';

const SERIAL_PARAM = {
  name: 'serial',
  description: 'The CA certificate serial number, in decimal',
  example: '5111552077003819958',
};

@ApiTags('CA Certificates')
@ApiParam({ name: 'org_name', description: 'Organization name' })
@Controller('api/orgs/:org_name/ca_certificates')
export class CaCertificatesController {
  constructor(private readonly cas: CaCertificatesService) {}

  @Get()
  @Route('caCertificates.list')
  @ApiOperationDoc({
    summary: "The organization's CA certificates",
    description: 'In the order they were registered.',
    data: [CaCertificateView],
  })
  list(@CurrentAccess() access: OrgAccess) {
    return this.cas.list(access);
  }

  @Get('verification_token')
  @Route('caCertificates.verificationToken')
  @ApiOperationDoc({
    summary: 'A token for proving possession of a CA key',
    description:
      'Short-lived (one hour) and bound to this organization. Sign a verification certificate with the CA key ' +
      'whose subject alternative name is the URI `urn:nerveshub:verify:<token>`, and send it with the CA ' +
      'certificate to `POST .../ca_certificates`. Nothing is stored; any number of tokens may be valid at once.',
    data: VerificationTokenView,
  })
  verificationToken(@CurrentAccess() access: OrgAccess) {
    return this.cas.verificationToken(access);
  }

  @Post()
  @Route('caCertificates.create')
  @ApiOperationDoc({
    summary: 'Register a CA certificate',
    description:
      'Devices whose certificates it signed can then authenticate; with `jitp`, such a device is created in ' +
      'the product on its first connection. Needs proof of possession of the CA key (`verification_cert`). ' +
      '422, naming the field, for: a missing field, a value that is not base64 of a PEM certificate, a ' +
      'certificate that is not a CA, has no subject key identifier or has expired (`cert`); a verification ' +
      'certificate without a valid token of this organization, not signed by the CA, or not currently valid ' +
      '(`verification_cert`); a serial this organization registered already (`serial`); a CA key another ' +
      'organization registered (`cert`); a JITP product that is not one of the organization (`jitp.product_name`).',
    status: 201,
    data: CaCertificateView,
    errors: [400, 413, 422],
    headers: { Location: { description: '/api/orgs/{org_name}/ca_certificates/{serial}' } },
  })
  @SetsLocation()
  create(@CurrentAccess() access: OrgAccess, @Body() body: CreateCaCertificateDto) {
    return this.cas.create(access, body);
  }

  @Get(':serial')
  @Route('caCertificates.show')
  @ApiParam(SERIAL_PARAM)
  @ApiOperationDoc({ summary: 'One CA certificate', data: CaCertificateView })
  show(@CurrentAccess() access: OrgAccess, @Param('serial') serial: string) {
    return this.cas.show(access, serial);
  }

  @Delete(':serial')
  @Route('caCertificates.delete')
  @ApiParam(SERIAL_PARAM)
  @ApiOperationDoc({
    summary: 'Remove a CA certificate',
    description:
      'Devices can no longer authenticate through it (certificates registered per device still work).',
    status: 204,
  })
  @HttpCode(204)
  remove(@CurrentAccess() access: OrgAccess, @Param('serial') serial: string) {
    return this.cas.remove(access, serial);
  }
}
