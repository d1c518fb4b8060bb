import { Injectable } from '@nestjs/common';
import type { OrgAccess } from '../common/auth/actor';
import { DomainError } from '../common/errors/domain-error';
import type { DeploymentDeltaStatusView } from '../firmware/deltas/dto/firmware-delta.dto';
import { FirmwareDeltaRecords } from '../firmware/deltas/firmware-delta-records.service';
import { firmwareDeltaView } from '../firmware/deltas/firmware-delta-view';
import { FirmwareRecordsService } from '../firmware/firmware-records.service';
import { ProductsService } from '../products/products.service';
import { DeploymentGroupsRepository } from './deployment-groups.repository';

/** The fwup delta status of a deployment group: the deltas to its current release's firmware. */
@Injectable()
export class DeploymentDeltasService {
  constructor(
    private readonly groups: DeploymentGroupsRepository,
    private readonly products: ProductsService,
    private readonly firmwares: FirmwareRecordsService,
    private readonly deltas: FirmwareDeltaRecords,
  ) {}

  async status(
    access: OrgAccess,
    productName: string,
    name: string,
  ): Promise<{ data: DeploymentDeltaStatusView }> {
    const product = await this.products.findInOrg(access, productName);
    const group = await this.groups.findByName(product.id, name);
    if (!group) throw DomainError.notFound();
    const firmwareUuid = group.firmware_uuid ?? '';
    const targetId = firmwareUuid ? await this.firmwares.findIdByUuid(product.id, firmwareUuid) : undefined;
    const rows = targetId === undefined ? [] : await this.deltas.listForTarget(targetId);
    return {
      data: {
        delta_updatable: group.delta_updatable,
        firmware_uuid: firmwareUuid,
        deltas: rows.map(firmwareDeltaView),
      },
    };
  }
}
