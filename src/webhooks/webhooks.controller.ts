import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiParam, ApiTags } from '@nestjs/swagger';
import type { OrgAccess } from '../common/auth/actor';
import { CurrentAccess, Route } from '../common/auth/decorators';
import { SetsLocation } from '../common/http/created';
import { type PageRequest, PaginationView } from '../common/http/pagination';
import { ApiOperationDoc, ApiPaginationQuery } from '../common/openapi/api-docs';
import { WebhookDeliveriesQueryPipe } from './dto/deliveries.query';
import {
  CreatedWebhookView,
  CreateWebhookDto,
  RedeliverWebhookDto,
  RedeliveryView,
  UpdateWebhookDto,
  WebhookAttemptView,
  WebhookEventQueuedView,
  WebhookEventTypeView,
  WebhookSecretView,
  WebhookView,
} from './dto/webhook.dto';
import { WebhooksService } from './webhooks.service';

const WEBHOOK_PARAM = { name: 'webhook_id', description: "The webhook's id" };

@ApiTags('Webhooks')
@ApiParam({ name: 'org_name', description: 'Organization name' })
@Controller('api/orgs/:org_name/webhooks')
export class WebhooksController {
  constructor(private readonly webhooks: WebhooksService) {}

  @Get('event_types')
  @Route('webhooks.eventTypes')
  @ApiOperationDoc({
    summary: 'The webhook event catalogue',
    description:
      'Extension of 2.0.0. Every event type a webhook can subscribe to, with its version and the name of the ' +
      'schema of its body in `components.schemas` (`WebhookEvent_<type>_v<version>`).',
    data: [WebhookEventTypeView],
  })
  eventTypes() {
    return this.webhooks.eventTypes();
  }

  @Post()
  @Route('webhooks.create')
  @ApiOperationDoc({
    summary: 'Create a webhook',
    description:
      'Extension of 2.0.0. Events of the organization (optionally of one product) that it subscribes to are ' +
      'POSTed to `url`, signed as Standard Webhooks define (`webhook-id`, `webhook-timestamp`, ' +
      '`webhook-signature`). The signing `secret` is in this answer only. An organization has at most 20 ' +
      'webhooks (409).',
    status: 201,
    data: CreatedWebhookView,
    errors: [400, 409, 413, 422],
    headers: { Location: { description: 'The webhook: /api/orgs/{org_name}/webhooks/{webhook_id}' } },
  })
  @SetsLocation()
  create(@CurrentAccess() access: OrgAccess, @Body() body: CreateWebhookDto) {
    return this.webhooks.create(access, body);
  }

  @Get()
  @Route('webhooks.list')
  @ApiOperationDoc({
    summary: "The organization's webhooks",
    description: 'Extension of 2.0.0.',
    data: [WebhookView],
  })
  list(@CurrentAccess() access: OrgAccess) {
    return this.webhooks.list(access);
  }

  @Get(':webhook_id')
  @Route('webhooks.show')
  @ApiParam(WEBHOOK_PARAM)
  @ApiOperationDoc({
    summary: 'One webhook',
    description: 'Extension of 2.0.0. `disabled_reason` says why it is disabled (by whom, or the failures).',
    data: WebhookView,
  })
  show(@CurrentAccess() access: OrgAccess, @Param('webhook_id') id: string) {
    return this.webhooks.show(access, id);
  }

  @Patch(':webhook_id')
  @Route('webhooks.update')
  @ApiParam(WEBHOOK_PARAM)
  @ApiOperationDoc({
    summary: 'Change a webhook',
    description: 'Extension of 2.0.0. Only the fields sent change; `enabled: true` enables it again.',
    data: WebhookView,
    errors: [400, 413, 422],
  })
  update(
    @CurrentAccess() access: OrgAccess,
    @Param('webhook_id') id: string,
    @Body() body: UpdateWebhookDto,
  ) {
    return this.webhooks.update(access, id, body);
  }

  @Delete(':webhook_id')
  @Route('webhooks.delete')
  @ApiParam(WEBHOOK_PARAM)
  @ApiOperationDoc({
    summary: 'Delete a webhook',
    description: 'Extension of 2.0.0. Its pending deliveries and its delivery log go with it.',
    status: 204,
  })
  @HttpCode(204)
  remove(@CurrentAccess() access: OrgAccess, @Param('webhook_id') id: string) {
    return this.webhooks.remove(access, id);
  }

  @Post(':webhook_id/secret')
  @Route('webhooks.rotateSecret')
  @ApiParam(WEBHOOK_PARAM)
  @ApiOperationDoc({
    summary: "Rotate a webhook's signing secret",
    description:
      'Extension of 2.0.0. A new secret, shown only in this answer. The previous one keeps signing until ' +
      '`previous_secret_expires_at` (both signatures are sent, space-separated), so receivers can switch ' +
      'without losing an event.',
    data: WebhookSecretView,
  })
  @HttpCode(200)
  rotateSecret(@CurrentAccess() access: OrgAccess, @Param('webhook_id') id: string) {
    return this.webhooks.rotateSecret(access, id);
  }

  @Get(':webhook_id/deliveries')
  @Route('webhooks.deliveries')
  @ApiParam(WEBHOOK_PARAM)
  @ApiPaginationQuery()
  @ApiOperationDoc({
    summary: "A webhook's delivery log",
    description:
      'Extension of 2.0.0. Every attempt, newest first: the event, the attempt number, the HTTP status or the ' +
      'error, the latency and the first KiB of the answer. Kept as long as the events ' +
      '(FLEETHUB_WEBHOOK_RETENTION_DAYS).',
    data: [WebhookAttemptView],
    extra: { pagination: PaginationView },
    errors: [422],
  })
  deliveries(
    @CurrentAccess() access: OrgAccess,
    @Param('webhook_id') id: string,
    @Query(WebhookDeliveriesQueryPipe) page: PageRequest,
  ) {
    return this.webhooks.deliveries(access, id, page);
  }

  @Post(':webhook_id/redeliver')
  @Route('webhooks.redeliver')
  @ApiParam(WEBHOOK_PARAM)
  @ApiOperationDoc({
    summary: 'Send events to a webhook again',
    description:
      'Extension of 2.0.0. `event_id`: that event (404 when the organization has no such event, e.g. past ' +
      'retention); or `from` and `to`: every event of that range its subscription wants (at most 10,000). Each ' +
      'is queued with a fresh retry window, with the same `webhook-id`; one still pending is left as it is.',
    status: 202,
    data: RedeliveryView,
    errors: [400, 413, 422],
  })
  @HttpCode(202)
  redeliver(
    @CurrentAccess() access: OrgAccess,
    @Param('webhook_id') id: string,
    @Body() body: RedeliverWebhookDto,
  ) {
    return this.webhooks.redeliver(access, id, body);
  }

  @Post(':webhook_id/test')
  @Route('webhooks.test')
  @ApiParam(WEBHOOK_PARAM)
  @ApiOperationDoc({
    summary: 'Send a test event to a webhook',
    description:
      'Extension of 2.0.0. Queues a `webhook.test` event for this webhook alone (even while it is disabled); ' +
      'its attempts appear in the delivery log.',
    status: 202,
    data: WebhookEventQueuedView,
  })
  @HttpCode(202)
  test(@CurrentAccess() access: OrgAccess, @Param('webhook_id') id: string) {
    return this.webhooks.test(access, id);
  }
}
