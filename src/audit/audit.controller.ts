import { Readable } from 'node:stream';
import { Controller, Get, Query, StreamableFile } from '@nestjs/common';
import { ApiParam, ApiQuery, ApiTags } from '@nestjs/swagger';
import type { OrgAccess } from '../common/auth/actor';
import { CurrentAccess, Route } from '../common/auth/decorators';
import { PaginationView } from '../common/http/pagination';
import { ApiOperationDoc } from '../common/openapi/api-docs';
import { AuditService } from './audit.service';
import { AuditLogView } from './dto/audit-log.dto';
import {
  type AuditFilters,
  AuditExportQueryPipe,
  type AuditListQuery,
  AuditListQueryPipe,
} from './dto/audit-query';

const FILTERS = [
  ApiQuery({
    name: 'actor',
    required: false,
    description: "The acting user's email (exact, case-insensitive)",
  }),
  ApiQuery({ name: 'target_type', required: false, description: 'e.g. `product`, `device`, `firmware`' }),
  ApiQuery({ name: 'target_id', required: false, description: 'The target as named in the API' }),
  ApiQuery({ name: 'from', required: false, description: 'ISO 8601 timestamp, inclusive' }),
  ApiQuery({ name: 'to', required: false, description: 'ISO 8601 timestamp, inclusive' }),
];

function applyAll(decorators: MethodDecorator[]): MethodDecorator {
  return (target, key, descriptor) => {
    for (const decorator of decorators) decorator(target, key, descriptor);
  };
}

@ApiTags('Organizations')
@ApiParam({ name: 'org_name', description: 'Organization name' })
@Controller('api/orgs/:org_name')
export class AuditController {
  constructor(private readonly audit: AuditService) {}

  @Get('audit_logs.csv')
  @Route('audit.export')
  @applyAll(FILTERS)
  @ApiOperationDoc({
    summary: "Export the organization's audit log as CSV",
    description:
      'Extension of 2.0.0. Same filters as the JSON list, newest first, streamed. RFC 4180 quoting; a cell ' +
      "starting with `=`, `+`, `-` or `@` is prefixed with `'` so that spreadsheets do not run it.",
    text: { mediaType: 'text/csv', description: 'CSV' },
    errors: [422],
  })
  async exportCsv(
    @CurrentAccess() access: OrgAccess,
    @Query(AuditExportQueryPipe) filters: AuditFilters,
  ): Promise<StreamableFile> {
    const csv = await this.audit.exportCsv(access, filters);
    return new StreamableFile(Readable.from(csv.lines), {
      type: 'text/csv; charset=utf-8',
      disposition: `attachment; filename="${csv.filename}"`,
    });
  }

  @Get('audit_logs')
  @Route('audit.list')
  @applyAll(FILTERS)
  @ApiQuery({ name: 'pagination[page]', required: false, schema: { type: 'integer', minimum: 1 } })
  @ApiQuery({
    name: 'pagination[page_size]',
    required: false,
    schema: { type: 'integer', minimum: 1, maximum: 500 },
  })
  @ApiOperationDoc({
    summary: "The organization's audit log",
    description:
      'Extension of 2.0.0. Every change (who, what, target, when, request id), newest first, paginated as ' +
      'devices. An unknown parameter or a bad value is a 422 naming it.',
    data: [AuditLogView],
    extra: { pagination: PaginationView },
    errors: [422],
  })
  list(@CurrentAccess() access: OrgAccess, @Query(AuditListQueryPipe) query: AuditListQuery) {
    return this.audit.list(access.orgId, query);
  }
}
