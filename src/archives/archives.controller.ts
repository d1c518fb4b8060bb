import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Req, Res } from '@nestjs/common';
import { ApiBody, ApiConsumes, ApiParam, ApiProduces, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { FileRange, type FileRangeRequest } from '../common/http/file-request';
import type { OrgAccess } from '../common/auth/actor';
import { CurrentAccess, Route } from '../common/auth/decorators';
import { SetsLocation } from '../common/http/created';
import { sendStoredFile } from '../common/http/send-stored-file';
import { ApiOperationDoc, ApiStoredFileResponses, FieldErrorBody } from '../common/openapi/api-docs';
import { FirmwareUploadReceiver } from '../firmware/upload-receiver';
import { ArchivesService } from './archives.service';
import {
  ArchiveUploadDto,
  ArchiveView,
  AttachArchiveDto,
  DeploymentGroupArchiveView,
} from './dto/archive.dto';

@ApiTags('Archives')
@ApiParam({ name: 'org_name', description: 'Organization name' })
@ApiParam({ name: 'product_name', description: 'Product name' })
@Controller('api/orgs/:org_name/products/:product_name/archives')
export class ArchivesController {
  constructor(
    private readonly archives: ArchivesService,
    private readonly uploads: FirmwareUploadReceiver,
  ) {}

  @Post()
  @Route('archives.upload')
  @ApiConsumes('multipart/form-data')
  @ApiBody({ type: ArchiveUploadDto })
  @ApiResponse({
    status: 422,
    description:
      'The file is refused (`archive`): no `archive` field, not an fwup file, a malformed file, unsigned, no ' +
      'signing keys, a signature no organization key verifies, or meta.conf without product, platform or ' +
      'architecture; a version that is not SemVer (`version`); a uuid already uploaded to this product (`uuid`)',
    type: FieldErrorBody,
    example: {
      errors: {
        archive: [
          "signature does not match any of the organization's signing keys (the file is corrupt, or the key " +
            'that signed it has not been added)',
        ],
      },
    },
  })
  @ApiOperationDoc({
    summary: 'Upload an archive',
    description:
      'Extension of 2.0.0 (NervesHub has archives in its web UI only). An archive is an fwup `.fw` file that is ' +
      'not firmware (a model, a configuration bundle) sent to the devices of the deployment groups it is attached ' +
      "to. The file goes in the multipart field `archive`; it must be signed with one of the organization's keys " +
      '(`meta.conf.ed25519`, checked as for firmware) and its meta.conf must give product, platform, ' +
      "architecture and a SemVer version; its uuid is fwup's `meta-uuid`. `meta-product` need not be this " +
      "product's name (as NervesHub). Streamed to the firmware store; the firmware upload's size limit applies " +
      '(413 beyond).',
    status: 201,
    data: ArchiveView,
    errors: [400, 413, 422],
    headers: { Location: { description: '/api/orgs/{org_name}/products/{product_name}/archives/{uuid}' } },
  })
  @SetsLocation()
  async upload(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') product: string,
    @Req() request: Request,
  ) {
    // An unknown product is the 404 before any byte of the upload is read.
    await this.archives.checkUploadTarget(access, product);
    return this.archives.ingest(access, product, await this.uploads.receive(request, 'archive'));
  }

  @Get()
  @Route('archives.list')
  @ApiOperationDoc({
    summary: "List a product's archives, newest version first",
    description: 'Extension of 2.0.0. Semantic-version precedence, descending; ties by newest upload.',
    data: [ArchiveView],
  })
  list(@CurrentAccess() access: OrgAccess, @Param('product_name') product: string) {
    return this.archives.list(access, product);
  }

  @Get(':uuid')
  @Route('archives.show')
  @ApiParam({ name: 'uuid', format: 'uuid' })
  @ApiOperationDoc({ summary: 'Show an archive', description: 'Extension of 2.0.0.', data: ArchiveView })
  show(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') product: string,
    @Param('uuid') uuid: string,
  ) {
    return this.archives.show(access, product, uuid);
  }

  @Get(':uuid/download')
  @Route('archives.download')
  @ApiParam({ name: 'uuid', format: 'uuid' })
  @ApiProduces('application/octet-stream')
  @ApiOperationDoc({
    summary: "Download an archive's file",
    description:
      'Extension of 2.0.0, as the firmware download: `Content-Disposition: attachment; filename="<uuid>.fw"`, ' +
      '`Content-Length`, `Accept-Ranges: bytes`, single ranges (206), 416 for an unsatisfiable range; with ' +
      'object storage a 302 to a presigned URL of the object.',
    text: { mediaType: 'application/octet-stream', description: 'The whole archive file' },
  })
  @ApiStoredFileResponses()
  async download(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') product: string,
    @Param('uuid') uuid: string,
    @FileRange() range: FileRangeRequest,
    @Res() res: Response,
  ): Promise<void> {
    const answer = await this.archives.download(access, product, uuid, range);
    await sendStoredFile(res, answer);
  }

  @Delete(':uuid')
  @Route('archives.delete')
  @ApiParam({ name: 'uuid', format: 'uuid' })
  @ApiOperationDoc({
    summary: 'Delete an archive',
    description:
      'Extension of 2.0.0. 409 while a deployment group has it attached (detach it first); its file is removed ' +
      'from the store.',
    status: 204,
    errors: [409],
  })
  @HttpCode(204)
  remove(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') product: string,
    @Param('uuid') uuid: string,
  ) {
    return this.archives.remove(access, product, uuid);
  }
}

@ApiTags('Archives')
@ApiParam({ name: 'org_name', description: 'Organization name' })
@ApiParam({ name: 'product_name', description: 'Product name' })
@ApiParam({ name: 'name', description: 'Deployment group name' })
@Controller('api/orgs/:org_name/products/:product_name/deployments/:name/archive')
export class ArchiveAttachmentsController {
  constructor(private readonly archives: ArchivesService) {}

  @Get()
  @Route('archives.attachment')
  @ApiOperationDoc({
    summary: "Show a deployment group's archive",
    description: 'Extension of 2.0.0. `archive` is null when the group has none.',
    data: DeploymentGroupArchiveView,
  })
  show(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') product: string,
    @Param('name') name: string,
  ) {
    return this.archives.attachment(access, product, name);
  }

  @Put()
  @Route('archives.attach')
  @ApiOperationDoc({
    summary: 'Attach an archive to a deployment group',
    description:
      "Extension of 2.0.0 (NervesHub's `archive` of a deployment release). Replaces the group's archive, if " +
      'any. Devices of the group with device API 2.0.0 or later, updates enabled and not in the penalty box ' +
      'are sent the `archive` message at once when connected (any server instance), and on every connection. ' +
      'An archive uuid unknown in this product is a 422 on `archive`.',
    data: DeploymentGroupArchiveView,
    errors: [400, 422],
  })
  attach(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') product: string,
    @Param('name') name: string,
    @Body() body: AttachArchiveDto,
  ) {
    return this.archives.attach(access, product, name, body);
  }

  @Delete()
  @Route('archives.detach')
  @ApiOperationDoc({
    summary: "Detach a deployment group's archive",
    description:
      'Extension of 2.0.0. Devices keep what they downloaded and are sent nothing more; 204 also when the ' +
      'group had no archive.',
    status: 204,
  })
  @HttpCode(204)
  detach(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') product: string,
    @Param('name') name: string,
  ) {
    return this.archives.detach(access, product, name);
  }
}
