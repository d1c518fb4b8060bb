import { Injectable } from '@nestjs/common';
import { AuditService } from '../audit/audit.service';
import type { OrgAccess } from '../common/auth/actor';
import { DomainError } from '../common/errors/domain-error';
import { ALREADY_TAKEN } from '../common/errors/messages';
import { isForeignKeyViolation, isUniqueViolation } from '../common/errors/postgres-errors';
import { Created, pathSegment } from '../common/http/created';
import { Transactions } from '../database/transactions';
import { ProductsService } from '../products/products.service';
import { type CaRow, CaCertificatesRepository } from './ca-certificates.repository';
import {
  CA_KEY_HELD_ELSEWHERE,
  EXPIRED,
  NO_SUBJECT_KEY_ID,
  NO_VERIFICATION_TOKEN,
  NOT_A_CA,
  NOT_A_PRODUCT,
  NOT_SIGNED_BY_CA,
  NOT_YET_VALID,
  TOKEN_EXPIRED,
  TOKEN_INVALID,
  TOKEN_OTHER_ORG,
} from './certificates.errors';
import {
  type CaCertificateView,
  type CreateCaCertificateDto,
  type JitpTemplate,
  parseJitp,
  type VerificationTokenView,
} from './dto/ca-certificate.dto';
import { VERIFICATION_URI_PREFIX, VerificationTokens } from './verification-tokens';
import { hex, isIssuedBy, isSerial, type ParsedCertificate, readCertificateField } from './x509';

/** The unique constraint of `(org, serial)`. */
const CA_SERIAL_KEY = 'ca_certificates_org_id_serial_key';
/** A verification certificate made a moment ago on a machine whose clock runs ahead is still accepted. */
const CLOCK_SKEW_MS = 5 * 60 * 1000;

function view(row: CaRow): CaCertificateView {
  return {
    serial: row.serial,
    not_before: row.not_before.toISOString(),
    not_after: row.not_after.toISOString(),
    description: row.description,
    jitp:
      row.jitp_product_name === null
        ? null
        : { product_name: row.jitp_product_name, tags: row.jitp_tags, description: row.jitp_description },
  };
}

/**
 * An organization's CA certificates (NervesHub's `/ca_certificates`). Registration needs proof of possession of
 * the CA's key: a verification certificate the CA signed, carrying a token this server issued to the organization.
 */
@Injectable()
export class CaCertificatesService {
  constructor(
    private readonly cas: CaCertificatesRepository,
    private readonly tokens: VerificationTokens,
    private readonly products: ProductsService,
    private readonly transactions: Transactions,
    private readonly audit: AuditService,
  ) {}

  verificationToken(access: OrgAccess): { data: VerificationTokenView } {
    return { data: { verification_token: this.tokens.issue(access.orgId) } };
  }

  async list(access: OrgAccess): Promise<{ data: CaCertificateView[] }> {
    return { data: (await this.cas.listForOrg(access.orgId)).map(view) };
  }

  async show(access: OrgAccess, serial: string): Promise<{ data: CaCertificateView }> {
    const row = isSerial(serial) ? await this.cas.findBySerial(access.orgId, serial) : null;
    if (!row) throw DomainError.notFound();
    return { data: view(row) };
  }

  /**
   * Registers a CA certificate. Every refusal is a 422 naming the field: the body's fields first, then the
   * certificate (`cert`), the proof (`verification_cert`), the JITP product, and last what only the database can
   * tell (the serial taken in this organization, the key held by another).
   */
  async create(
    access: OrgAccess,
    dto: CreateCaCertificateDto,
    now = new Date(),
  ): Promise<Created<{ data: CaCertificateView }>> {
    const jitp = parseJitp(dto.jitp);
    if (Object.keys(jitp.errors).length > 0) throw DomainError.invalid(jitp.errors);
    const ca = this.checkedCa(dto.cert, now);
    this.checkProof(access.orgId, ca, dto.verification_cert, now);
    const jitpProductId = jitp.value ? await this.jitpProductId(access.orgId, jitp.value) : null;
    const description = dto.description?.trim() || null;
    try {
      await this.transactions.run(async (tx) => {
        await this.cas.lockKey(ca.ski, tx);
        if (await this.cas.keyHeldElsewhere(ca.ski, access.orgId, tx)) {
          throw DomainError.invalidField('cert', CA_KEY_HELD_ELSEWHERE);
        }
        await this.cas.insert(
          {
            orgId: access.orgId,
            serial: ca.serial,
            aki: ca.aki,
            ski: ca.ski,
            notBefore: ca.notBefore,
            notAfter: ca.notAfter,
            description,
            der: ca.der,
            jitp: jitp.value && jitpProductId ? { ...jitp.value, productId: jitpProductId } : null,
          },
          tx,
        );
        await this.cas.notifyChanged(tx);
        await this.audit.record(tx, {
          orgId: access.orgId,
          actor: access.actor,
          action: 'ca_certificate.create',
          targetType: 'ca_certificate',
          targetId: ca.serial,
          details: {
            description,
            ski: hex(ca.ski),
            not_after: ca.notAfter.toISOString(),
            jitp_product: jitp.value?.productName ?? null,
          },
        });
      });
    } catch (err) {
      if (isUniqueViolation(err, CA_SERIAL_KEY)) throw DomainError.invalidField('serial', ALREADY_TAKEN);
      // The JITP product was deleted between the lookup and the insert.
      if (isForeignKeyViolation(err) && jitpProductId !== null) {
        throw DomainError.invalidField('jitp.product_name', NOT_A_PRODUCT);
      }
      throw err;
    }
    const row: CaRow = {
      serial: ca.serial,
      not_before: ca.notBefore,
      not_after: ca.notAfter,
      description,
      jitp_product_name: jitp.value?.productName ?? null,
      jitp_tags: jitp.value?.tags ?? [],
      jitp_description: jitp.value?.description ?? null,
    };
    return new Created(`/api/orgs/${pathSegment(access.orgName)}/ca_certificates/${ca.serial}`, {
      data: view(row),
    });
  }

  async remove(access: OrgAccess, serial: string): Promise<void> {
    if (!isSerial(serial)) throw DomainError.notFound();
    await this.transactions.run(async (tx) => {
      if (!(await this.cas.deleteBySerial(access.orgId, serial, tx))) throw DomainError.notFound();
      // Device certificates the socket registered on its authority go with it (foreign key, ON DELETE CASCADE).
      await this.cas.notifyChanged(tx);
      await this.audit.record(tx, {
        orgId: access.orgId,
        actor: access.actor,
        action: 'ca_certificate.delete',
        targetType: 'ca_certificate',
        targetId: serial,
      });
    });
  }

  /** The CA certificate of the body, or a 422 on `cert`: readable, a CA, with a key identifier, not expired. */
  private checkedCa(field: string, now: Date): ParsedCertificate & { ski: Buffer } {
    const ca = readCertificateField(field);
    const refuse = (message: string): never => {
      throw DomainError.invalidField('cert', message);
    };
    if (typeof ca === 'string') return refuse(ca);
    if (!ca.isCa) return refuse(NOT_A_CA);
    if (ca.ski === null) return refuse(NO_SUBJECT_KEY_ID);
    if (ca.notAfter.getTime() < now.getTime()) return refuse(EXPIRED);
    return { ...ca, ski: ca.ski };
  }

  /**
   * Proof of possession, or a 422 on `verification_cert`: the certificate is readable, currently valid, carries a
   * token this server issued to this organization within the hour, and the CA issued and signed it.
   */
  private checkProof(orgId: string, ca: ParsedCertificate, field: string, now: Date): void {
    const fail = (message: string): never => {
      throw DomainError.invalidField('verification_cert', message);
    };
    const proof = readCertificateField(field);
    if (typeof proof === 'string') return fail(proof);
    const uri = proof.sanUris.find((candidate) => candidate.startsWith(VERIFICATION_URI_PREFIX));
    if (uri === undefined) return fail(NO_VERIFICATION_TOKEN);
    switch (this.tokens.check(uri.slice(VERIFICATION_URI_PREFIX.length), orgId, now)) {
      case 'invalid':
        return fail(TOKEN_INVALID);
      case 'expired':
        return fail(TOKEN_EXPIRED);
      case 'other_org':
        return fail(TOKEN_OTHER_ORG);
      case 'valid':
        break;
    }
    if (!isIssuedBy(proof, ca)) return fail(NOT_SIGNED_BY_CA);
    if (proof.notAfter.getTime() < now.getTime()) return fail(EXPIRED);
    if (proof.notBefore.getTime() > now.getTime() + CLOCK_SKEW_MS) return fail(NOT_YET_VALID);
  }

  private async jitpProductId(orgId: string, jitp: JitpTemplate): Promise<string> {
    const product = await this.products.findByName(orgId, jitp.productName);
    if (!product) throw DomainError.invalidField('jitp.product_name', NOT_A_PRODUCT);
    return product.id;
  }
}
