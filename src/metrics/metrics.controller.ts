import { Controller, Get, Header } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { contentType } from 'prom-client';
import { Public } from '../common/auth/decorators';
import { MetricsService } from './metrics.service';

/** Prometheus scrape endpoint; operational, so it is left out of the API document (see README, Metrics). */
@ApiExcludeController()
@Controller()
export class MetricsController {
  constructor(private readonly metrics: MetricsService) {}

  @Get('metrics')
  @Public()
  @Header('Content-Type', contentType)
  @Header('Cache-Control', 'no-store')
  scrape(): Promise<string> {
    return this.metrics.scrape();
  }
}
