import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

export class AuditActorView {
  @ApiProperty({ enum: ['user', 'system', 'device'], example: 'user' }) type: string;
  @ApiPropertyOptional({ type: String, nullable: true, example: 'alice@example.com' }) email?: string | null;
  @ApiPropertyOptional({ type: String, nullable: true, description: 'For non-user actors' }) identifier?:
    string | null;
}

export class AuditLogView {
  @ApiProperty({ example: '42' }) id: string;
  @ApiProperty({ type: AuditActorView }) actor:
    { type: 'user'; email: string | null } | { type: string; identifier: string | null };
  @ApiProperty({ example: 'product.create' }) action: string;
  @ApiProperty({ example: 'product' }) target_type: string;
  @ApiProperty({ example: 'gateway' }) target_id: string;
  @ApiProperty({ type: 'object', additionalProperties: true, example: {} }) details: Record<string, unknown>;
  @ApiProperty({ type: String, nullable: true }) request_id: string | null;
  @ApiProperty({ example: '2026-11-22T03:04:05.123Z' }) inserted_at: string;
}
