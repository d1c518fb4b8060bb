import { ApiProperty } from '@nestjs/swagger';

export const IDENTITY_SERVICES = ['iroh', 'netbird', 'tailscale', 'wireguard'] as const;
export const IDENTITY_SOURCES = ['device_reported', 'operator'] as const;

/** NervesHub's network identity JSON. */
export class NetworkIdentityView {
  @ApiProperty({
    example: 'b1c9a3f0e4d2c6b8a0f1e3d5c7b9a1f3e5d7c9b1a3f5e7d9c1b3a5f7e9d1c3b5',
    description:
      'The key the device holds: an iroh endpoint id, a NetBird, Tailscale or WireGuard public key',
  })
  identifier: string;

  @ApiProperty({ enum: IDENTITY_SERVICES, example: 'iroh' }) service: string;

  @ApiProperty({
    example: 'default',
    description: 'Which endpoint of the service, for a device running several',
  })
  instance: string;

  @ApiProperty({
    enum: IDENTITY_SOURCES,
    example: 'device_reported',
    description:
      '`device_reported`: the device proved the key on its own connection; `operator`: entered by hand',
  })
  source: string;

  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    example: { relay_url: 'https://relay.example.com' },
  })
  details: Record<string, unknown>;

  @ApiProperty({ type: String, format: 'date-time', nullable: true }) last_reported_at: string | null;
  @ApiProperty({ format: 'date-time' }) inserted_at: string;
  @ApiProperty({ format: 'date-time' }) updated_at: string;
}
