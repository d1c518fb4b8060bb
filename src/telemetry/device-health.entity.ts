import { Column, Entity, Index, JoinColumn, OneToOne, PrimaryColumn } from 'typeorm';
import { Device } from '../devices/device.entity';
import { HEALTH_STATUSES, type HealthStatus } from './health-values';

export { FLEET_METRICS, type FleetMetric, HEALTH_STATUSES, type HealthStatus } from './health-values';

/**
 * What a device last reported through `health` and `geo`: one row per device, replaced by each report (the history
 * of metrics is in the partitioned `device_health_metrics`). Partial indexes serve the fleet filters: devices with
 * an active alarm, devices above a metric threshold.
 */
@Entity('device_health')
@Index('device_health_alarmed_idx', ['deviceId'], { where: 'alarm_count > 0' })
@Index('device_health_status_idx', ['status', 'deviceId'])
@Index('device_health_cpu_temp_idx', ['cpuTemp'], { where: 'cpu_temp IS NOT NULL' })
@Index('device_health_cpu_usage_percent_idx', ['cpuUsagePercent'], { where: 'cpu_usage_percent IS NOT NULL' })
@Index('device_health_mem_used_percent_idx', ['memUsedPercent'], { where: 'mem_used_percent IS NOT NULL' })
@Index('device_health_disk_used_percentage_idx', ['diskUsedPercentage'], {
  where: 'disk_used_percentage IS NOT NULL',
})
@Index('device_health_load_1min_idx', ['load1min'], { where: 'load_1min IS NOT NULL' })
export class DeviceHealth {
  @PrimaryColumn({ name: 'device_id', type: 'bigint' })
  deviceId: string;

  @OneToOne(() => Device, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'device_id' })
  device?: Device;

  @Column({
    type: 'enum',
    enum: HEALTH_STATUSES,
    enumName: 'device_health_status',
    default: 'unknown',
  })
  status: HealthStatus;

  /** Metrics past a warning or unhealthy threshold: `{"warning": {name: {value, threshold}}, "unhealthy": {...}}`. */
  @Column({ name: 'status_reasons', type: 'jsonb', nullable: true })
  statusReasons: Record<string, unknown> | null;

  @Column({ name: 'alarm_count', type: 'integer', default: 0 })
  alarmCount: number;

  /** The report's `value` as the device sent it (timestamp, metadata, alarms, metrics, checks, connectivity). */
  @Column({ type: 'jsonb', nullable: true })
  report: Record<string, unknown> | null;

  @Column({ name: 'reported_at', type: 'timestamptz', nullable: true })
  reportedAt: Date | null;

  @Column({ name: 'cpu_temp', type: 'double precision', nullable: true })
  cpuTemp: number | null;

  @Column({ name: 'cpu_usage_percent', type: 'double precision', nullable: true })
  cpuUsagePercent: number | null;

  @Column({ name: 'mem_used_percent', type: 'double precision', nullable: true })
  memUsedPercent: number | null;

  @Column({ name: 'disk_used_percentage', type: 'double precision', nullable: true })
  diskUsedPercentage: number | null;

  @Column({ name: 'load_1min', type: 'double precision', nullable: true })
  load1min: number | null;

  /** The last `geo:location:update` payload (a location, or an error code and description). */
  @Column({ type: 'jsonb', nullable: true })
  location: Record<string, unknown> | null;

  @Column({ name: 'location_updated_at', type: 'timestamptz', nullable: true })
  locationUpdatedAt: Date | null;
}
