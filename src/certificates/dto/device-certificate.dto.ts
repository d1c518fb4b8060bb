import { ApiProperty } from '@nestjs/swagger';
import { StringField } from '../../common/validation/fields';
import { MAX_CERT_FIELD } from './ca-certificate.dto';

export class CreateDeviceCertificateDto {
  @StringField({
    required: true,
    max: MAX_CERT_FIELD,
    doc: {
      description:
        "The device's certificate: base64 of its PEM, as NervesHub clients send it (the PEM itself is accepted " +
        "too). Its subject's common name must be the device's identifier; not expired.",
      example: 'LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJ...',
    },
  })
  cert: string;
}

export class DeviceCertificateView {
  @ApiProperty({ example: '123456789101112', description: 'The serial number, in decimal' }) serial: string;
  @ApiProperty({
    type: String,
    nullable: true,
    example: '5b3c2d1e0f5b3c2d1e0f5b3c2d1e0f5b3c2d1e0f',
    description: 'Authority key identifier (lower-case hex), or null when the certificate has none',
  })
  aki: string | null;
  @ApiProperty({
    type: String,
    nullable: true,
    example: '0f1e2d3c5b0f1e2d3c5b0f1e2d3c5b0f1e2d3c5b',
    description: 'Subject key identifier (lower-case hex), or null when the certificate has none',
  })
  ski: string | null;
  @ApiProperty({ example: '2026-01-01T00:00:00.000Z' }) not_before: string;
  @ApiProperty({ example: '2046-01-01T00:00:00.000Z' }) not_after: string;
  @ApiProperty({
    example: '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08',
    description: 'SHA-256 of the certificate (DER), lower-case hex',
  })
  fingerprint: string;
  @ApiProperty({
    example: '60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752',
    description: 'SHA-256 of its public key (DER SubjectPublicKeyInfo), lower-case hex',
  })
  public_key_fingerprint: string;
  @ApiProperty({
    type: String,
    nullable: true,
    example: null,
    description: 'When the device last authenticated with it; null until then',
  })
  last_used: string | null;
  @ApiProperty({ example: '2026-11-22T03:04:05.123Z' }) inserted_at: string;
}
