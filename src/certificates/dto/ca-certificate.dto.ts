import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import type { FieldErrors } from '../../common/errors/domain-error';
import { checkString, checkTags, CustomField, StringField } from '../../common/validation/fields';
import { isPlainObject } from '../../common/validation/validation.pipe';
import { normaliseTags } from '../../common/values';

/** A certificate in a body: base64 of its PEM (PEM itself is accepted too). Far more than any certificate needs. */
export const MAX_CERT_FIELD = 65_536;
const JITP_NOT_AN_OBJECT = 'must be an object {product_name, tags, description} or null';

export class JitpDto {
  @ApiProperty({
    type: String,
    maxLength: 255,
    example: 'thermostat',
    description: 'A product of the organization',
  })
  product_name: string;

  @ApiPropertyOptional({
    type: [String],
    example: ['jitp', 'batch-7'],
    description: 'Tags of the devices it creates (an array, or a comma-separated string); default none',
  })
  tags?: string[] | string | null;

  @ApiPropertyOptional({
    type: String,
    nullable: true,
    maxLength: 255,
    example: 'Provisioned on first connection',
    description: 'Description of the devices it creates',
  })
  description?: string | null;
}

export class CreateCaCertificateDto {
  @StringField({
    required: true,
    max: MAX_CERT_FIELD,
    doc: {
      description:
        'The CA certificate: base64 of its PEM, as NervesHub clients send it (the PEM itself is accepted too). ' +
        'Must be a CA (basicConstraints cA true) with a subject key identifier, not expired.',
      example: 'LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJ...',
    },
  })
  cert: string;

  @StringField({
    required: true,
    max: MAX_CERT_FIELD,
    doc: {
      description:
        'Proof of possession of the CA key: a certificate signed by the CA, currently valid, whose subject ' +
        'alternative name holds the URI `urn:nerveshub:verify:<token>` with a token from ' +
        '`GET .../ca_certificates/verification_token` of this organization (valid one hour). Base64 of its PEM.',
      example: 'LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJ...',
    },
  })
  verification_cert: string;

  @StringField({ nullable: true, max: 255, doc: { example: 'Factory line 2 signer' } })
  description?: string | null;

  @CustomField('jitp', (value) =>
    value === undefined || value === null || isPlainObject(value) ? null : JITP_NOT_AN_OBJECT,
  )
  @ApiPropertyOptional({
    type: JitpDto,
    nullable: true,
    description:
      'Just-in-time provisioning: a device whose certificate this CA signed is created in this product on its ' +
      'first connection. Null or absent: none.',
  })
  jitp?: JitpDto | null;
}

/** The JITP template of a create body, checked; errors are named `jitp.<field>`. */
export interface JitpTemplate {
  productName: string;
  tags: string[];
  description: string | null;
}

export function parseJitp(value: unknown): { value: JitpTemplate | null; errors: FieldErrors } {
  if (value === undefined || value === null || !isPlainObject(value)) return { value: null, errors: {} };
  const errors: FieldErrors = {};
  const productProblem = checkString(value.product_name, { required: true, max: 255 });
  if (productProblem) errors['jitp.product_name'] = [productProblem];
  const tagsProblem = checkTags(value.tags);
  if (tagsProblem) errors['jitp.tags'] = [tagsProblem];
  const descriptionProblem = checkString(value.description, { nullable: true, max: 255 });
  if (descriptionProblem) errors['jitp.description'] = [descriptionProblem];
  if (Object.keys(errors).length > 0) return { value: null, errors };
  const description = typeof value.description === 'string' ? value.description.trim() : null;
  return {
    value: {
      productName: (value.product_name as string).trim(),
      tags: normaliseTags(value.tags as string | string[] | null | undefined),
      description: description === '' ? null : description,
    },
    errors: {},
  };
}

export class JitpView {
  @ApiProperty({ example: 'thermostat' }) product_name: string;
  @ApiProperty({ type: [String], example: ['jitp'] }) tags: string[];
  @ApiProperty({ type: String, nullable: true, example: 'Provisioned on first connection' })
  description: string | null;
}

export class CaCertificateView {
  @ApiProperty({ example: '5111552077003819958', description: 'The serial number, in decimal' })
  serial: string;
  @ApiProperty({ example: '2026-01-01T00:00:00.000Z' }) not_before: string;
  @ApiProperty({ example: '2036-01-01T00:00:00.000Z' }) not_after: string;
  @ApiProperty({ type: String, nullable: true, example: 'Factory line 2 signer' }) description: string | null;
  @ApiProperty({ type: JitpView, nullable: true }) jitp: JitpView | null;
}

export class VerificationTokenView {
  @ApiProperty({
    example: '1.42.1795640000.Yk9vZ2xlIGlzIG5vdCBhIHRva2VuIGJ1dCBhbiBleGFtcGxl',
    description:
      'Put it in the verification certificate as the URI subject alternative name ' +
      '`urn:nerveshub:verify:<token>`. Valid for one hour, for this organization only.',
  })
  verification_token: string;
}
