// Without TypeORM: the device list's SQL (and the benchmark's floor server) reads these.
export const HEALTH_STATUSES = ['unknown', 'healthy', 'warning', 'unhealthy'] as const;
export type HealthStatus = (typeof HEALTH_STATUSES)[number];

/**
 * The metrics copied into columns of their own, so that fleet filters ("above a threshold") are index range scans:
 * NervesHubLink's default metric set, the ones NervesHub computes a health status from and the CPU temperature.
 */
export const FLEET_METRICS = [
  'cpu_temp',
  'cpu_usage_percent',
  'mem_used_percent',
  'disk_used_percentage',
  'load_1min',
] as const;
export type FleetMetric = (typeof FLEET_METRICS)[number];
