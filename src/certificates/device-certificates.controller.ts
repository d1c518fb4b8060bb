import { Body, Controller, Delete, Get, HttpCode, Param, Post } from '@nestjs/common';
import { ApiParam, ApiTags } from '@nestjs/swagger';
import type { OrgAccess } from '../common/auth/actor';
import { CurrentAccess, Route } from '../common/auth/decorators';
import { SetsLocation } from '../common/http/created';
import { ApiOperationDoc } from '../common/openapi/api-docs';
import { DeviceCertificatesService } from './device-certificates.service';
import { CreateDeviceCertificateDto, DeviceCertificateView } from './dto/device-certificate.dto';

const SERIAL_PARAM = {
  name: 'serial',
  description: 'The certificate serial number, in decimal',
  example: '123456789101112',
};

@ApiTags('Device Certificates')
@ApiParam({ name: 'org_name', description: 'Organization name' })
@ApiParam({ name: 'product_name', description: 'Product name' })
@ApiParam({ name: 'identifier', description: 'Device identifier' })
@Controller('api/orgs/:org_name/products/:product_name/devices/:identifier/certificates')
export class DeviceCertificatesController {
  constructor(private readonly certificates: DeviceCertificatesService) {}

  @Get()
  @Route('deviceCertificates.list')
  @ApiOperationDoc({
    summary: "The device's certificates",
    description: 'In the order they were registered.',
    data: [DeviceCertificateView],
  })
  list(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') productName: string,
    @Param('identifier') identifier: string,
  ) {
    return this.certificates.list(access, { productName, identifier });
  }

  @Post()
  @Route('deviceCertificates.create')
  @ApiOperationDoc({
    summary: 'Register a certificate for the device',
    description:
      'The device can then authenticate with it. 422, naming the field, for: a missing `cert`, one that is not ' +
      "base64 of a PEM certificate, whose subject common name is not the device's identifier, that has " +
      "expired, whose public key another device's certificate holds, or that a CA registered by another " +
      'organization signed (`cert`); a serial the device holds already (`serial`).',
    status: 201,
    data: DeviceCertificateView,
    errors: [400, 413, 422],
    headers: {
      Location: {
        description:
          '/api/orgs/{org_name}/products/{product_name}/devices/{identifier}/certificates/{serial}',
      },
    },
  })
  @SetsLocation()
  create(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') productName: string,
    @Param('identifier') identifier: string,
    @Body() body: CreateDeviceCertificateDto,
  ) {
    return this.certificates.create(access, { productName, identifier }, body);
  }

  @Get(':serial')
  @Route('deviceCertificates.show')
  @ApiParam(SERIAL_PARAM)
  @ApiOperationDoc({ summary: 'One certificate of the device', data: DeviceCertificateView })
  show(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') productName: string,
    @Param('identifier') identifier: string,
    @Param('serial') serial: string,
  ) {
    return this.certificates.show(access, { productName, identifier }, serial);
  }

  @Delete(':serial')
  @Route('deviceCertificates.delete')
  @ApiParam(SERIAL_PARAM)
  @ApiOperationDoc({
    summary: "Remove a device's certificate",
    description: 'The device can no longer authenticate with it.',
    status: 204,
  })
  @HttpCode(204)
  remove(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') productName: string,
    @Param('identifier') identifier: string,
    @Param('serial') serial: string,
  ) {
    return this.certificates.remove(access, { productName, identifier }, serial);
  }
}
