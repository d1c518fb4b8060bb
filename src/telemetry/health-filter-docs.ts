import { applyDecorators } from '@nestjs/common';
import { ApiQuery } from '@nestjs/swagger';
import { FLEET_METRICS, HEALTH_STATUSES } from './device-health.entity';

// Apart from health-filters.ts, which the device list's SQL (and the benchmark's floor server) imports without Nest.
/** The OpenAPI parameters of the health filters (on the device list). */
export function HealthFilterDocs(): MethodDecorator {
  return applyDecorators(
    ApiQuery({
      name: 'filters[alarm_status]',
      required: false,
      description: 'Devices whose latest health report has an active alarm (`with`), or none (`without`)',
      schema: { type: 'string', enum: ['with', 'without'] },
    }),
    ApiQuery({
      name: 'filters[health_status]',
      required: false,
      description: 'The status of the latest health report (`unknown`: none, or no known metric)',
      schema: { type: 'string', enum: [...HEALTH_STATUSES] },
    }),
    ApiQuery({
      name: 'filters[metrics_key]',
      required: false,
      description:
        'With `filters[metrics_value]`: devices whose latest report has this metric above (or below) it',
      schema: { type: 'string', enum: [...FLEET_METRICS] },
    }),
    ApiQuery({
      name: 'filters[metrics_operator]',
      required: false,
      description: '`gt` (above, the default) or `lt` (below)',
      schema: { type: 'string', enum: ['gt', 'lt'] },
    }),
    ApiQuery({ name: 'filters[metrics_value]', required: false, schema: { type: 'number' } }),
  );
}
