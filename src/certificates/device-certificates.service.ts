import { Injectable } from '@nestjs/common';
import { AuditService } from '../audit/audit.service';
import type { OrgAccess } from '../common/auth/actor';
import { DomainError } from '../common/errors/domain-error';
import { ALREADY_TAKEN } from '../common/errors/messages';
import { isForeignKeyViolation, isUniqueViolation } from '../common/errors/postgres-errors';
import { Created, pathSegment } from '../common/http/created';
import { isoOrNull } from '../common/values';
import { type Queryable, Transactions } from '../database/transactions';
import { DeviceRecordsService } from '../devices/device-records.service';
import { ProductsService } from '../products/products.service';
import { CaCertificatesRepository } from './ca-certificates.repository';
import { CA_OF_ANOTHER_ORG, EXPIRED, KEY_OF_ANOTHER_DEVICE, SUBJECT_NOT_DEVICE } from './certificates.errors';
import type { CreateDeviceCertificateDto, DeviceCertificateView } from './dto/device-certificate.dto';
import {
  type DeviceCertificateRow,
  DeviceCertificatesRepository,
  type NewDeviceCertificate,
  newDeviceCertificate,
} from './device-certificates.repository';
import { hex, isSerial, type ParsedCertificate, readCertificateField } from './x509';

function view(row: DeviceCertificateRow): DeviceCertificateView {
  return {
    serial: row.serial,
    aki: hex(row.aki),
    ski: hex(row.ski),
    not_before: row.not_before.toISOString(),
    not_after: row.not_after.toISOString(),
    fingerprint: row.fingerprint,
    public_key_fingerprint: row.public_key_fingerprint,
    last_used: isoOrNull(row.last_used),
    inserted_at: row.inserted_at.toISOString(),
  };
}

/** The device the path names (org from the access, then product, then identifier), or the contract's 404. */
interface PathDevice {
  productName: string;
  identifier: string;
}

/**
 * Certificates registered for one device (NervesHub's `.../devices/{identifier}/certificates`): the device socket
 * accepts such a certificate as that device. The subject's common name must be the device's identifier, the way
 * the socket derives a device from a certificate.
 */
/** A bulk import's certificate: registered now, registered already for that device, or refused (why). */
export type ImportedCertificate = 'added' | 'present' | { refused: string };

@Injectable()
export class DeviceCertificatesService {
  constructor(
    private readonly certificates: DeviceCertificatesRepository,
    private readonly cas: CaCertificatesRepository,
    private readonly products: ProductsService,
    private readonly devices: DeviceRecordsService,
    private readonly transactions: Transactions,
    private readonly audit: AuditService,
  ) {}

  async list(access: OrgAccess, path: PathDevice): Promise<{ data: DeviceCertificateView[] }> {
    const device = await this.device(access, path);
    return { data: (await this.certificates.listForDevice(device.id)).map(view) };
  }

  async show(access: OrgAccess, path: PathDevice, serial: string): Promise<{ data: DeviceCertificateView }> {
    const device = await this.device(access, path);
    const row = isSerial(serial) ? await this.certificates.findBySerial(device.id, serial) : null;
    if (!row) throw DomainError.notFound();
    return { data: view(row) };
  }

  /**
   * Registers a certificate for the device. Refusals are 422s: on `cert` (unreadable, another subject, expired,
   * a public key another device's certificate holds, signed by a CA another organization registered) and on
   * `serial` (the device holds a certificate with that serial, or this very certificate, already).
   */
  async create(
    access: OrgAccess,
    path: PathDevice,
    dto: CreateDeviceCertificateDto,
    now = new Date(),
  ): Promise<Created<{ data: DeviceCertificateView }>> {
    const device = await this.device(access, path);
    const cert = readCertificateField(dto.cert);
    const refuse = (message: string): never => {
      throw DomainError.invalidField('cert', message);
    };
    if (typeof cert === 'string') return refuse(cert);
    if (cert.commonName !== device.identifier) return refuse(SUBJECT_NOT_DEVICE);
    if (cert.notAfter.getTime() < now.getTime()) return refuse(EXPIRED);
    let row: DeviceCertificateRow;
    try {
      row = await this.transactions.run(async (tx) => {
        await this.certificates.lockPublicKey(cert.publicKeyFingerprint, tx);
        if (await this.certificates.keyHeldByAnotherDevice(cert.publicKeyFingerprint, device.id, tx)) {
          refuse(KEY_OF_ANOTHER_DEVICE);
        }
        if (cert.aki !== null) {
          const owners = await this.cas.orgsOfKey(cert.aki, tx);
          if (owners.length > 0 && !owners.includes(access.orgId)) refuse(CA_OF_ANOTHER_ORG);
        }
        const inserted = await this.certificates.insert(newDeviceCertificate(device.id, cert), tx);
        await this.audit.record(tx, {
          orgId: access.orgId,
          actor: access.actor,
          action: 'device_certificate.create',
          targetType: 'device',
          targetId: device.identifier,
          details: { serial: cert.serial, fingerprint: cert.fingerprint },
        });
        return inserted;
      });
    } catch (err) {
      // (device, serial) or the fingerprint: the common name is the device's, so the same certificate can only
      // have been registered for this very device.
      if (isUniqueViolation(err)) throw DomainError.invalidField('serial', ALREADY_TAKEN);
      // The device was deleted meanwhile.
      if (isForeignKeyViolation(err)) throw DomainError.notFound();
      throw err;
    }
    return new Created(
      `/api/orgs/${pathSegment(access.orgName)}/products/${pathSegment(path.productName)}/devices/${pathSegment(
        device.identifier,
      )}/certificates/${row.serial}`,
      { data: view(row) },
    );
  }

  async remove(access: OrgAccess, path: PathDevice, serial: string): Promise<void> {
    const device = await this.device(access, path);
    if (!isSerial(serial)) throw DomainError.notFound();
    await this.transactions.run(async (tx) => {
      if (!(await this.certificates.deleteBySerial(device.id, serial, tx))) throw DomainError.notFound();
      await this.audit.record(tx, {
        orgId: access.orgId,
        actor: access.actor,
        action: 'device_certificate.delete',
        targetType: 'device',
        targetId: device.identifier,
        details: { serial },
      });
    });
  }

  /**
   * The id of the device a certificate (a request field: base64 of its PEM, or the PEM) was registered for, found
   * by the certificate's SHA-256 fingerprint (this exact certificate); null when the field is not one readable
   * certificate or no device holds it. Dates are not checked: this says whose certificate it is.
   */
  async deviceIdOf(field: string): Promise<string | null> {
    const cert = readCertificateField(field);
    if (typeof cert === 'string') return null;
    return this.certificates.findDeviceIdByFingerprint(cert.fingerprint);
  }

  private async device(access: OrgAccess, path: PathDevice): Promise<{ id: string; identifier: string }> {
    const product = await this.products.findInOrg(access, path.productName);
    const device = await this.devices.findInProduct(product.id, path.identifier);
    if (!device) throw DomainError.notFound();
    return device;
  }

  /**
   * A bulk import's certificates (`POST .../devices/import`), checked as `create` checks one, set-wise, in `tx`:
   * each answers `added`, `present` (this certificate is the device's already: the import is idempotent) or the
   * message of its refusal. Not audited one by one: the import is, as one change.
   */
  async importForDevices(
    orgId: string,
    items: { deviceId: string; identifier: string; cert: ParsedCertificate }[],
    tx: Queryable,
    now = new Date(),
  ): Promise<ImportedCertificate[]> {
    const outcomes: (ImportedCertificate | null)[] = items.map(({ identifier, cert }) =>
      cert.commonName !== identifier
        ? { refused: SUBJECT_NOT_DEVICE }
        : cert.notAfter.getTime() < now.getTime()
          ? { refused: EXPIRED }
          : null,
    );
    const akis = new Map<string, boolean>();
    for (const { cert } of items) {
      const key = hex(cert.aki);
      if (key === null || akis.has(key)) continue;
      const owners = await this.cas.orgsOfKey(cert.aki!, tx);
      akis.set(key, owners.length > 0 && !owners.includes(orgId));
    }
    const registered = new Map(
      (
        await this.certificates.registered(
          items.map((i) => i.cert.fingerprint),
          tx,
        )
      ).map((r) => [r.fingerprint, r.device_id]),
    );
    const holders = new Map<string, Set<string>>();
    for (const row of await this.certificates.holdersOfKeys(
      items.map((i) => i.cert.publicKeyFingerprint),
      tx,
    )) {
      holders.set(row.key, (holders.get(row.key) ?? new Set()).add(row.device_id));
    }
    const toInsert: NewDeviceCertificate[] = [];
    items.forEach(({ deviceId, cert }, index) => {
      if (outcomes[index] !== null) return;
      const aki = hex(cert.aki);
      if (aki !== null && akis.get(aki)) outcomes[index] = { refused: CA_OF_ANOTHER_ORG };
      else if (registered.has(cert.fingerprint)) {
        outcomes[index] =
          registered.get(cert.fingerprint) === deviceId ? 'present' : { refused: ALREADY_TAKEN };
      } else if ([...(holders.get(cert.publicKeyFingerprint) ?? [])].some((holder) => holder !== deviceId)) {
        outcomes[index] = { refused: KEY_OF_ANOTHER_DEVICE };
      } else {
        toInsert.push(newDeviceCertificate(deviceId, cert));
      }
    });
    const inserted = await this.certificates.insertMany(toInsert, tx);
    return outcomes.map(
      (outcome, index) =>
        outcome ??
        (inserted.has(items[index].cert.fingerprint) ? 'added' : { refused: `serial ${ALREADY_TAKEN}` }),
    );
  }
}
