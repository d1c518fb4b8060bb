import { Controller, Get } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { HealthCheck, HealthCheckService, TypeOrmHealthIndicator } from '@nestjs/terminus';
import { Public } from '../common/auth/decorators';
import { ApiOperationDoc } from '../common/openapi/api-docs';

@ApiTags('Platform Status')
@Controller()
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly database: TypeOrmHealthIndicator,
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
  @ApiOperationDoc({ summary: 'Readiness: the database answers (503 when it does not)', isPublic: true })
  ready() {
    return this.health.check([() => this.database.pingCheck('database', { timeout: 2000 })]);
  }
}
