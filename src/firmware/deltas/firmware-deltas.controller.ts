import { Controller, Get, Param } from '@nestjs/common';
import { ApiParam, ApiTags } from '@nestjs/swagger';
import type { OrgAccess } from '../../common/auth/actor';
import { CurrentAccess, Route } from '../../common/auth/decorators';
import { ApiOperationDoc } from '../../common/openapi/api-docs';
import { FirmwareDeltaView } from './dto/firmware-delta.dto';
import { FirmwareDeltasService } from './firmware-deltas.service';

@ApiTags('Firmwares')
@ApiParam({ name: 'org_name', description: 'Organization name' })
@ApiParam({ name: 'product_name', description: 'Product name' })
@Controller('api/orgs/:org_name/products/:product_name/firmwares/:uuid/deltas')
export class FirmwareDeltasController {
  constructor(private readonly deltas: FirmwareDeltasService) {}

  @Get()
  @Route('firmwares.deltas')
  @ApiParam({ name: 'uuid', format: 'uuid' })
  @ApiOperationDoc({
    summary: "List a firmware's fwup deltas",
    description:
      'Extension of 2.0.0 (NervesHub builds and shows the same deltas). The deltas from this firmware and to ' +
      'it, newest first, with their state and sizes. A delta is requested when a deployment group that allows ' +
      'deltas (`delta_updatable`) sends its release to a device running another firmware of the product, and ' +
      'built once per pair in the background with xdelta3; until it is `ready` devices get the full file.',
    data: [FirmwareDeltaView],
  })
  list(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') product: string,
    @Param('uuid') uuid: string,
  ) {
    return this.deltas.list(access, product, uuid);
  }
}
