import { ApiProperty } from '@nestjs/swagger';

export class SingleSignOnStatusView {
  @ApiProperty({ description: 'Whether single sign-on is configured (FLEETHUB_OIDC_ISSUER)' })
  enabled: boolean;
  @ApiProperty({
    type: String,
    nullable: true,
    description: 'The provider’s name, for a sign-in button',
    example: 'Okta',
  })
  name: string | null;
  @ApiProperty({ type: String, nullable: true, example: '/auth/oidc/start' }) start_url: string | null;
}
