import { Controller, Delete, Get, Param, Post, Req, Res, HttpCode } from '@nestjs/common';
import { SetsLocation } from '../common/http/created';
import { ApiBody, ApiConsumes, ApiParam, ApiProduces, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { FileRange, type FileRangeRequest } from '../common/http/file-request';
import type { OrgAccess } from '../common/auth/actor';
import { CurrentAccess, Route } from '../common/auth/decorators';
import { sendStoredFile } from '../common/http/send-stored-file';
import { ApiOperationDoc, FieldErrorBody, ApiStoredFileResponses } from '../common/openapi/api-docs';
import { FirmwareDetailView, FirmwareUploadDto, FirmwareView } from './dto/firmware.dto';
import { FirmwareService } from './firmware.service';
import { FirmwareUploadReceiver } from './upload-receiver';

@ApiTags('Firmwares')
@ApiParam({ name: 'org_name', description: 'Organization name' })
@ApiParam({ name: 'product_name', description: 'Product name' })
@Controller('api/orgs/:org_name/products/:product_name/firmwares')
export class FirmwareController {
  constructor(
    private readonly firmware: FirmwareService,
    private readonly uploads: FirmwareUploadReceiver,
  ) {}

  @Post()
  @Route('firmwares.upload')
  @ApiConsumes('multipart/form-data')
  @ApiBody({ type: FirmwareUploadDto })
  @ApiResponse({
    status: 422,
    description:
      'The file is refused: no `firmware` field, an unrecognised format, a tool the product does not allow, a ' +
      'malformed file, a missing or invalid signature, an unsigned image the product does not allow, another ' +
      'product, a version that is not SemVer (`version`), or a uuid or version already uploaded (`uuid`, `version`)',
    type: FieldErrorBody,
    example: {
      errors: {
        firmware: [
          'Unrecognised firmware format. Expected an fwup archive (.fw), an AtomVM packbeam (.avm) or an ESP-IDF ' +
            'application image (.bin).',
        ],
      },
    },
  })
  @ApiOperationDoc({
    summary: 'Upload a firmware',
    description:
      'Extension of 2.0.0. The file goes in the multipart field `firmware`; its format is detected from its ' +
      'content, never its name: an fwup `.fw` archive (zip), an AtomVM packbeam (`.avm`) or an ESP-IDF ' +
      "application image (`.bin`). The format's tool must be in the product's `allowed_update_tools`. " +
      "**fwup**: signed with one of the organization's keys (`meta.conf.ed25519`), product, platform, " +
      'architecture and version from `meta.conf`, uuid as fwup computes `meta-uuid`. **AtomVM**: product and ' +
      'version (`vsn`, normalised to SemVer) from `<app>/priv/application.bin`, platform `atomvm`, architecture ' +
      '`beam`, uuid from the SHA-256 of the file; a `nerves_hub/signature` entry must verify with an organization ' +
      'key, an unsigned packbeam needs `allow_unsigned_atomvm_firmware`. **ESP-IDF**: product, version ' +
      '(PROJECT_VER, normalised to SemVer) and chip from the app descriptor, uuid from its ELF SHA-256; never ' +
      "verifiable with the organization's ed25519 keys, so accepted only with `allow_unsigned_esp_idf_firmware` " +
      '(a Secure Boot v2 signature block, when present, must be intact). The declared product must be this ' +
      'product and the version SemVer. Streamed to storage; at most 256 MiB unless configured otherwise ' +
      '(413 beyond). Every refusal of the file is a 422: `{"errors":{"firmware":["<why>"]}}` (or `version`, ' +
      '`uuid`).',
    status: 201,
    data: FirmwareView,
    errors: [400, 413, 422],
    headers: { Location: { description: '/api/orgs/{org_name}/products/{product_name}/firmwares/{uuid}' } },
  })
  @SetsLocation()
  async upload(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') product: string,
    @Req() request: Request,
  ) {
    // An unknown product is the 404 before any byte of the upload is read.
    await this.firmware.checkUploadTarget(access, product);
    return this.firmware.ingest(access, product, await this.uploads.receive(request));
  }

  @Get()
  @Route('firmwares.list')
  @ApiOperationDoc({
    summary: "List a product's firmware, newest version first",
    description:
      'Semantic-version precedence, descending (a pre-release below its release); ties by newest upload.',
    data: [FirmwareView],
  })
  list(@CurrentAccess() access: OrgAccess, @Param('product_name') product: string) {
    return this.firmware.list(access, product);
  }

  @Get(':uuid')
  @Route('firmwares.show')
  @ApiParam({ name: 'uuid', format: 'uuid' })
  @ApiOperationDoc({
    summary: 'Show a firmware',
    description: 'Extension of 2.0.0.',
    data: FirmwareDetailView,
  })
  show(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') product: string,
    @Param('uuid') uuid: string,
  ) {
    return this.firmware.show(access, product, uuid);
  }

  @Get(':uuid/download')
  @Route('firmwares.download')
  @ApiParam({ name: 'uuid', format: 'uuid' })
  @ApiProduces('application/octet-stream')
  @ApiOperationDoc({
    summary: "Download a firmware's file",
    description:
      'As NervesHub 2.0.0, which always redirects to its store; fleethub streams the file itself unless object ' +
      'storage is configured. `Content-Disposition: attachment; filename="<uuid>.fw"` (`.avm`, `.bin` by the ' +
      "firmware's tool), `Content-Length` and `Accept-Ranges: bytes`; a single `Range: bytes=a-b` gets 206 with " +
      '`Content-Range` (ends past the file are clamped; several ranges get the whole file); an unsatisfiable ' +
      'range gets 416. With object storage (`FLEETHUB_STORAGE=s3`) the answer is 302 to a presigned URL of the ' +
      'object, which serves the bytes and Range requests itself.',
    text: { mediaType: 'application/octet-stream', description: 'The whole firmware file' },
  })
  @ApiStoredFileResponses()
  async download(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') product: string,
    @Param('uuid') uuid: string,
    @FileRange() range: FileRangeRequest,
    @Res() res: Response,
  ): Promise<void> {
    const answer = await this.firmware.download(access, product, uuid, range);
    await sendStoredFile(res, answer);
  }

  @Delete(':uuid')
  @Route('firmwares.delete')
  @ApiParam({ name: 'uuid', format: 'uuid' })
  @ApiOperationDoc({
    summary: 'Delete a firmware',
    description:
      'Extension of 2.0.0. 409 while a pending device update targets it; 422 (`deployment_releases`, as ' +
      'NervesHub) while a release of a deployment group uses it.',
    status: 204,
    errors: [409, 422],
  })
  @HttpCode(204)
  remove(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') product: string,
    @Param('uuid') uuid: string,
  ) {
    return this.firmware.remove(access, product, uuid);
  }
}
