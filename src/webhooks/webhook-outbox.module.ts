import { Module } from '@nestjs/common';
import { WebhookOutbox } from './webhook-outbox';
import { WebhookOutboxRepository } from './webhook-outbox.repository';

/**
 * The outbox writer alone (no API, no delivery): the server and the command line both import it, so that a
 * change made by either writes its webhook events.
 */
@Module({
  providers: [WebhookOutboxRepository, WebhookOutbox],
  exports: [WebhookOutboxRepository, WebhookOutbox],
})
export class WebhookOutboxModule {}
