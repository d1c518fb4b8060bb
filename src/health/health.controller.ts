import { Controller, Get, ServiceUnavailableException } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { HealthCheck, HealthCheckService, TypeOrmHealthIndicator } from '@nestjs/terminus';
import { Public } from '../common/auth/decorators';
import { ApiOperationDoc } from '../common/openapi/api-docs';
import { ShutdownState } from './shutdown-state';

@ApiTags('Platform Status')
@Controller()
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly database: TypeOrmHealthIndicator,
    private readonly shutdown: ShutdownState,
  ) {}

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
    summary: 'Readiness: the database answers (503 when it does not, or while the process is shutting down)',
    isPublic: true,
  })
  ready() {
    if (this.shutdown.draining) {
      throw new ServiceUnavailableException({ status: 'error', error: { shutdown: { status: 'draining' } } });
    }
    return this.health.check([() => this.database.pingCheck('database', { timeout: 2000 })]);
  }
}
