import { Controller, Get, Param, Res } from '@nestjs/common';
import { ApiParam, ApiProduces, ApiProperty, ApiQuery, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { SignedLink, type SignedLinkRequest } from '../common/http/file-request';
import type { DeviceAccess } from '../common/auth/actor';
import { CurrentAccess, Public, Route } from '../common/auth/decorators';
import { sendStoredFile } from '../common/http/send-stored-file';
import { ApiOperationDoc, ApiStoredFileResponses } from '../common/openapi/api-docs';
import { ConsoleOutputService } from './console-output.service';
import { DOWNLOAD_PATH_PREFIX } from './download-links';
import { FirmwareDownloads } from './firmware-downloads';

export class ConsoleOutputView {
  @ApiProperty({
    example: 'iex(1)> 1 + 1\r\n2\r\n',
    description: 'The last 64 KiB (characters) the device printed on its console (`up` events); "" when none',
  })
  output: string;

  @ApiProperty({ nullable: true, type: String, example: '2026-11-22T03:04:05.123Z' })
  updated_at: string | null;
}

@ApiTags('Devices (short URL)')
@ApiParam({ name: 'identifier', description: 'Device identifier (unique across the server)' })
@Controller('api/devices/:identifier/console')
export class DeviceConsoleController {
  constructor(private readonly output: ConsoleOutputService) {}

  @Get()
  @Route('devices.short.console')
  @ApiOperationDoc({
    summary: "Read the tail of the device's console output",
    description:
      'Extension of 2.0.0. What the device printed on its console channel (`up`), bounded to the last 64 KiB, ' +
      'kept across reconnects and readable from any server instance.',
    data: ConsoleOutputView,
  })
  show(@CurrentAccess() access: DeviceAccess) {
    return this.output.show(access.deviceId);
  }
}

@ApiTags('Device firmware download')
@Controller(DOWNLOAD_PATH_PREFIX.slice(1))
export class FirmwareDownloadController {
  constructor(private readonly downloads: FirmwareDownloads) {}

  @Get('deltas/:delta_id/:file')
  @Public()
  @ApiParam({ name: 'delta_id', description: 'Server-side delta id, as in the link' })
  @ApiParam({ name: 'file', description: '`<target firmware uuid>.fw`, as in the link' })
  @ApiQuery({ name: 'expires', required: true, description: 'Expiry, Unix seconds' })
  @ApiQuery({ name: 'signature', required: true, description: 'base64url HMAC-SHA256 of path and expiry' })
  @ApiProduces('application/octet-stream')
  @ApiOperationDoc({
    summary: 'Download an fwup delta (the link of an `update` message that sends a delta)',
    description:
      'Extension of 2.0.0, for devices: as the firmware download, for the delta from the firmware the device ' +
      'runs to its update. Only a ready delta is served (404 otherwise); a bad or expired signature gets 403.',
    isPublic: true,
    errors: [403, 404],
  })
  @ApiStoredFileResponses()
  async downloadDelta(
    @Param('delta_id') deltaId: string,
    @Param('file') file: string,
    @SignedLink() link: SignedLinkRequest,
    @Res() res: Response,
  ): Promise<void> {
    const download = await this.downloads.openDelta(deltaId, file, link);
    await sendStoredFile(res, download);
  }

  @Get(':firmware_id/:file')
  @Public()
  @ApiParam({ name: 'firmware_id', description: 'Server-side firmware id, as in the link' })
  @ApiParam({
    name: 'file',
    description: "`<firmware uuid>.fw`, `.avm` or `.bin` (by the firmware's tool), as in the link",
  })
  @ApiQuery({ name: 'expires', required: true, description: 'Expiry, Unix seconds' })
  @ApiQuery({ name: 'signature', required: true, description: 'base64url HMAC-SHA256 of path and expiry' })
  @ApiProduces('application/octet-stream')
  @ApiOperationDoc({
    summary: 'Download a firmware file (the link a device gets in its `update` message)',
    description:
      'Extension of 2.0.0, for devices. The signed, expiring link is the only credential (no token). ' +
      'Sends `Content-Length` and `Accept-Ranges: bytes`; a single `Range: bytes=a-b` gets 206 with ' +
      '`Content-Range` (ends past the file are clamped); an unsatisfiable range gets 416. ' +
      'A bad or expired signature gets 403, an unknown firmware 404. With object storage ' +
      '(`FLEETHUB_STORAGE=s3`) a valid link answers 302 to a presigned URL of the object, which serves the ' +
      'bytes and Range requests itself.',
    isPublic: true,
    errors: [403, 404],
  })
  @ApiStoredFileResponses()
  async download(
    @Param('firmware_id') firmwareId: string,
    @Param('file') file: string,
    @SignedLink() link: SignedLinkRequest,
    @Res() res: Response,
  ): Promise<void> {
    const download = await this.downloads.open(firmwareId, file, link);
    await sendStoredFile(res, download);
  }
}
