import { Injectable } from '@nestjs/common';
import type { OrgAccess } from '../common/auth/actor';
import { DomainError } from '../common/errors/domain-error';
import { DeviceRecordsService } from '../devices/device-records.service';
import { ProductsService } from '../products/products.service';

/** The device a route's path names. */
export interface PathDevice {
  productName: string;
  identifier: string;
}

/** Resolves the path's device for the telemetry routes: 404 (the constant body) for any product or device not seen. */
@Injectable()
export class TelemetryDevices {
  constructor(
    private readonly products: ProductsService,
    private readonly devices: DeviceRecordsService,
  ) {}

  async resolve(access: OrgAccess, path: PathDevice): Promise<{ id: string; identifier: string }> {
    const product = await this.products.findInOrg(access, path.productName);
    const device = await this.devices.findInProduct(product.id, path.identifier);
    if (!device) throw DomainError.notFound();
    return { id: device.id, identifier: device.identifier };
  }
}
