import { Controller, Get } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { HealthCheck } from '@nestjs/terminus';
import { Public } from '../common/auth/decorators';
import { ApiOperationDoc } from '../common/openapi/api-docs';
import { ReadinessService } from './readiness.service';

@ApiTags('Platform Status')
@Controller()
export class HealthController {
  constructor(private readonly readiness: ReadinessService) {}

  @Get('healthz')
  @Public()
  @ApiOperationDoc({ summary: 'Liveness: the process answers', isPublic: true })
  alive() {
    return { status: 'ok' };
  }

  @Get('readyz')
  @Public()
  @HealthCheck()
  @ApiOperationDoc({
    summary:
      'Readiness: the database and the firmware storage answer (503 when one does not, or while the process is shutting down)',
    isPublic: true,
  })
  ready() {
    return this.readiness.check();
  }
}
