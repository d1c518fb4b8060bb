import { Module } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { InstanceBusModule } from '../database/instance-bus/instance-bus.module';
import { DeviceAuthModule } from '../device-auth/device-auth.module';
import { OrgsModule } from '../orgs/orgs.module';
import { ProductsModule } from '../products/products.module';
import { AddressPolicy } from './address-policy';
import { WebhookConnectionEvents } from './webhook-connection-events';
import { WebhookConnectionsRepository } from './webhook-connections.repository';
import { WebhookDispatcher } from './webhook-dispatcher';
import { WebhookOutboxModule } from './webhook-outbox.module';
import { systemResolver, WEBHOOK_RESOLVER } from './webhook-sender';
import { WebhooksController } from './webhooks.controller';
import { WebhooksRepository } from './webhooks.repository';
import { WEBHOOK_ADDRESS_POLICY, WebhooksService } from './webhooks.service';

/**
 * Webhooks: the API, the dispatcher that delivers the outbox's events (see WebhookOutbox), and the debounced
 * connection events (WebhookConnectionEvents).
 */
@Module({
  imports: [WebhookOutboxModule, DeviceAuthModule, OrgsModule, ProductsModule, InstanceBusModule],
  controllers: [WebhooksController],
  providers: [
    {
      provide: WEBHOOK_ADDRESS_POLICY,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => new AddressPolicy(config.webhooks.allowedRanges),
    },
    { provide: WEBHOOK_RESOLVER, useValue: systemResolver },
    WebhooksRepository,
    WebhooksService,
    WebhookDispatcher,
    WebhookConnectionsRepository,
    WebhookConnectionEvents,
  ],
  exports: [WebhookDispatcher],
})
export class WebhooksModule {}
