import { Controller, Get, Param } from '@nestjs/common';
import { ApiParam, ApiTags } from '@nestjs/swagger';
import type { OrgAccess } from '../common/auth/actor';
import { CurrentAccess, Route } from '../common/auth/decorators';
import { ApiOperationDoc } from '../common/openapi/api-docs';
import { DeploymentDeltaStatusView } from '../firmware/deltas/dto/firmware-delta.dto';
import { DeploymentDeltasService } from './deployment-deltas.service';

@ApiTags('Deployment Groups')
@ApiParam({ name: 'org_name', description: 'Organization name' })
@ApiParam({ name: 'product_name', description: 'Product name' })
@Controller('api/orgs/:org_name/products/:product_name/deployments/:name/deltas')
export class DeploymentDeltasController {
  constructor(private readonly deltas: DeploymentDeltasService) {}

  @Get()
  @Route('deployments.deltas')
  @ApiParam({ name: 'name', description: 'Deployment group name' })
  @ApiOperationDoc({
    summary: "A deployment group's fwup delta status",
    description:
      "Extension of 2.0.0, apart from the group's record (which keeps NervesHub's fields). Whether the group " +
      "allows deltas, and the deltas to its current release's firmware, newest first: one per firmware its " +
      'devices ran when they were sent the release, with its state and sizes. A device gets the delta only ' +
      'when it is `ready`, the group allows deltas and the `fwup_version` the device reports is at least the ' +
      "delta's `fwup_version`; otherwise the full file.",
    data: DeploymentDeltaStatusView,
  })
  status(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') productName: string,
    @Param('name') name: string,
  ) {
    return this.deltas.status(access, productName, name);
  }
}
