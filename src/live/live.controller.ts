import { Controller, Get, Header, Param, Query } from '@nestjs/common';
import { ApiParam, ApiQuery, ApiTags } from '@nestjs/swagger';
import type { OrgAccess } from '../common/auth/actor';
import { CurrentAccess, Route } from '../common/auth/decorators';
import { eventStreamResponse, EventStreamRoute } from '../common/http/event-stream-response';
import { ApiOperationDoc } from '../common/openapi/api-docs';
import { type EventsQuery, EventsQueryPipe } from './dto/events.query';
import { LIVE_EVENT_PAYLOADS, LIVE_EVENT_STREAM_SCHEMA } from './dto/live-events.views';
import { EventStreamsService } from './event-streams.service';

@ApiTags('Live Events')
@ApiParam({ name: 'org_name', description: 'Organization name' })
@ApiParam({ name: 'product_name', description: 'Product name' })
@Controller('api/orgs/:org_name/products/:product_name/events')
export class LiveController {
  constructor(private readonly streams: EventStreamsService) {}

  @Get()
  @Route('live.events')
  @ApiQuery({
    name: 'device',
    required: false,
    description:
      "A device of the product: the stream also carries that device's console output and log lines",
    schema: { type: 'string', minLength: 1, maxLength: 255 },
  })
  @ApiQuery({
    name: 'overview',
    required: false,
    description:
      "`true`: the stream also carries the fleet overview's counters (`product.overview`), the current ones at " +
      'once and then whenever they change',
    schema: { type: 'boolean', default: false },
  })
  @EventStreamRoute()
  @Header('Cache-Control', 'no-cache, no-transform')
  @Header('X-Accel-Buffering', 'no')
  @ApiOperationDoc({
    summary: "The product's live events (Server-Sent Events)",
    description:
      'Extension of 2.0.0, for the console (`EventSource`) and any client that follows a fleet: a ' +
      '`text/event-stream` that stays open. Each message is `event: <name>` and `data: <one JSON object>`; the ' +
      'events are listed in the response schema. A `: keepalive` comment comes every 15 s when nothing else does. ' +
      'A view member may open it. Events reach the stream whichever server instance the device and the client ' +
      'are connected to.\n\n' +
      "Back-pressure: what waits for a slow client is bounded. A device's connection or update status and a " +
      "group's counts are replaced by their latest value; console and log lines beyond about 256 KB are dropped " +
      'oldest first, and a `stream.skipped` event says how many before the lines that follow; a client that ' +
      'cannot keep up at all (more than 1,000 statuses waiting, or nothing taken for 60 s) has its stream closed. ' +
      'After a close the client reconnects and reloads what it shows.\n\n' +
      'The stream ends when its token or session is revoked (at once), expires or idles out, when the caller ' +
      'leaves the organization (checked every 30 s; an open stream is not use of a session), and when the ' +
      'server instance stops. At most `FLEETHUB_EVENT_STREAMS_PER_USER` (default 10) streams per user are open ' +
      'at once, across instances: one more is a 429. An unknown parameter, a `device` that is not one string ' +
      'of 1 to 255 characters, or an `overview` other than `true` or `false`, is a 422; a device that is not ' +
      "one of the product's, the constant 404.",
    text: {
      mediaType: 'text/event-stream',
      description:
        'Server-Sent Events: `event:` one of the names below, `data:` its payload. ' +
        LIVE_EVENT_PAYLOADS.map(([name]) => `\`${name}\``).join(', '),
      schema: LIVE_EVENT_STREAM_SCHEMA,
      models: LIVE_EVENT_PAYLOADS.map(([, type]) => type),
    },
    errors: [422, 429],
  })
  async events(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') productName: string,
    @Query(EventsQueryPipe) query: EventsQuery,
  ) {
    return eventStreamResponse(await this.streams.open(access, productName, query));
  }
}
