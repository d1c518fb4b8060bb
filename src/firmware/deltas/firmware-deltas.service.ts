import { Injectable } from '@nestjs/common';
import type { OrgAccess } from '../../common/auth/actor';
import { DomainError } from '../../common/errors/domain-error';
import { UUID_PATTERN } from '../../common/values';
import { ProductsService } from '../../products/products.service';
import { FirmwaresRepository } from '../firmwares.repository';
import type { FirmwareDeltaView } from './dto/firmware-delta.dto';
import { FirmwareDeltaRecords } from './firmware-delta-records.service';
import { firmwareDeltaView } from './firmware-delta-view';

/** The firmware deltas API: the deltas of one firmware. */
@Injectable()
export class FirmwareDeltasService {
  constructor(
    private readonly products: ProductsService,
    private readonly firmwares: FirmwaresRepository,
    private readonly deltas: FirmwareDeltaRecords,
  ) {}

  /** The deltas from and to the product's firmware `uuid`, newest first (404 for an unknown firmware). */
  async list(access: OrgAccess, productName: string, uuid: string): Promise<{ data: FirmwareDeltaView[] }> {
    const product = await this.products.findInOrg(access, productName);
    const id = UUID_PATTERN.test(uuid)
      ? await this.firmwares.findIdByUuid(product.id, uuid.toLowerCase())
      : undefined;
    if (id === undefined) throw DomainError.notFound();
    return { data: (await this.deltas.listForFirmware(id)).map(firmwareDeltaView) };
  }
}
