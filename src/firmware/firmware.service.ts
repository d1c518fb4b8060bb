import { Injectable } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { AuditService } from '../audit/audit.service';
import type { OrgAccess } from '../common/auth/actor';
import { DomainError } from '../common/errors/domain-error';
import { ALREADY_TAKEN } from '../common/errors/messages';
import { isForeignKeyViolation } from '../common/errors/postgres-errors';
import { Created, pathSegment } from '../common/http/created';
import { UUID_PATTERN } from '../common/values';
import { type Tx, Transactions } from '../database/transactions';
import { ProductsService } from '../products/products.service';
import type { ProductRecord } from '../products/product-record';
import { SigningKeysService } from '../signing-keys/signing-keys.service';
import type { FirmwareDetailView, FirmwareView } from './dto/firmware.dto';
import type { Firmware } from './firmware.entity';
import { FIRMWARE_IN_RELEASE, FIRMWARE_IN_USE, toolNotAllowed } from './firmware.errors';
import { FILE_EXTENSIONS, inspectFirmware } from './firmware-inspection';
import { FirmwareDeltaRecords } from './deltas/firmware-delta-records.service';
import { FirmwaresRepository } from './firmwares.repository';
import { detectFileFormat, type FirmwareTool, UNRECOGNISED_FORMAT } from './formats/detect-format';
import { FirmwareFileRemover } from './storage/firmware-file-remover';
import { FirmwareStorage } from './storage/firmware-storage';
import { consumingUpload, UploadedFileStore } from './storage/uploaded-file-store';
import {
  answerStoredFile,
  type StoredFileAnswer,
  type StoredFileRequest,
} from './storage/stored-file-answer';
import type { ReceivedFile } from './received-file';

function firmwareView(firmware: Firmware, productName: string): FirmwareView {
  return {
    uuid: firmware.uuid,
    product: productName,
    platform: firmware.platform,
    architecture: firmware.architecture,
    version: firmware.version,
    author: firmware.author,
  };
}

const invalidFirmware = (message: string) => DomainError.invalidField('firmware', message);

@Injectable()
export class FirmwareService {
  constructor(
    private readonly firmwares: FirmwaresRepository,
    private readonly transactions: Transactions,
    private readonly products: ProductsService,
    private readonly keys: SigningKeysService,
    private readonly storage: FirmwareStorage,
    private readonly files: FirmwareFileRemover,
    private readonly audit: AuditService,
    private readonly deltas: FirmwareDeltaRecords,
    private readonly uploads: UploadedFileStore,
  ) {}

  async list(access: OrgAccess, productName: string): Promise<{ data: FirmwareView[] }> {
    const product = await this.products.findInOrg(access, productName);
    const rows = await this.firmwares.listForProduct(product.id);
    return { data: rows.map((f) => firmwareView(f, product.name)) };
  }

  async show(access: OrgAccess, productName: string, uuid: string): Promise<{ data: FirmwareDetailView }> {
    const product = await this.products.findInOrg(access, productName);
    const firmware = await this.find(product, uuid);
    return {
      data: {
        ...firmwareView(firmware, product.name),
        size: Number(firmware.size),
        inserted_at: firmware.insertedAt.toISOString(),
      },
    };
  }

  /**
   * The firmware's file as a download (whole, one byte range, 416, or a redirect to the object store); the
   * controller writes it. Named `<uuid><extension of its tool>`.
   */
  async download(
    access: OrgAccess,
    productName: string,
    uuid: string,
    request: Omit<StoredFileRequest, 'fileHeaders'>,
  ): Promise<StoredFileAnswer> {
    const product = await this.products.findInOrg(access, productName);
    const firmware = await this.find(product, uuid);
    const extension = FILE_EXTENSIONS[firmware.tool as FirmwareTool] ?? '';
    return answerStoredFile(this.storage, firmware.storageKey, {
      ...request,
      fileHeaders: { 'Content-Disposition': `attachment; filename="${firmware.uuid}${extension}"` },
    });
  }

  async remove(access: OrgAccess, productName: string, uuid: string): Promise<void> {
    const product = await this.products.findInOrg(access, productName);
    const firmware = await this.find(product, uuid);
    let keys = [firmware.storageKey];
    try {
      await this.transactions.run(async (tx) => {
        // Its deltas (from it and to it) go with it, and their files with its own.
        keys = [firmware.storageKey, ...(await this.deltas.deleteForFirmware(firmware.id, tx))];
        if (!(await this.firmwares.delete(firmware.id, tx))) throw DomainError.notFound();
        await this.files.schedule(keys, tx);
        await this.audit.record(tx, {
          orgId: access.orgId,
          actor: access.actor,
          action: 'firmware.delete',
          targetType: 'firmware',
          targetId: firmware.uuid,
          details: { product: product.name, version: firmware.version },
        });
      });
    } catch (err) {
      // A release of a deployment group holds it: NervesHub's 422 on `deployment_releases`.
      if (this.firmwares.isHeldByRelease(err)) {
        throw DomainError.invalidField('deployment_releases', FIRMWARE_IN_RELEASE);
      }
      if (isForeignKeyViolation(err)) throw DomainError.conflict(FIRMWARE_IN_USE);
      throw err;
    }
    await this.files.removeNow(keys);
  }

  /**
   * The product an upload goes to, or the 404: the controller asks before it reads the upload, so that an
   * unknown product is answered before any byte of the file is received.
   */
  async checkUploadTarget(access: OrgAccess, productName: string): Promise<void> {
    await this.products.findInOrg(access, productName);
  }

  /**
   * Validates a received file and stores it (the file, a temporary file of the store, is consumed: adopted
   * into storage or removed). It was streamed to disk, never held in memory.
   */
  async ingest(
    access: OrgAccess,
    productName: string,
    file: ReceivedFile,
  ): Promise<Created<{ data: FirmwareView }>> {
    return consumingUpload(file, async () => {
      const product = await this.products.findInOrg(access, productName);
      const firmware = await this.validateAndStore(access, product, file);
      return new Created(
        `/api/orgs/${pathSegment(access.orgName)}/products/${pathSegment(product.name)}/firmwares/${firmware.uuid}`,
        { data: firmwareView(firmware, product.name) },
      );
    });
  }

  private async validateAndStore(
    access: OrgAccess,
    product: ProductRecord,
    file: ReceivedFile,
  ): Promise<Firmware> {
    const tool = await detectFileFormat(file.path);
    if (tool === null) throw invalidFirmware(UNRECOGNISED_FORMAT);
    if (!(product.allowedUpdateTools as string[]).includes(tool)) {
      throw invalidFirmware(toolNotAllowed(product.name, tool));
    }
    const candidate = await inspectFirmware(tool, file, product, () => this.keys.forOrg(access.orgId));
    // A key of its own for each upload: a file of a deleted firmware still waiting for its removal can never be
    // the file of a new upload of the same uuid.
    const storageKey = `${product.id}/${candidate.uuid}-${randomBytes(6).toString('hex')}${FILE_EXTENSIONS[tool]}`;
    // Refused early when already taken, before the file goes to the store; checked again under the lock below.
    await this.refuseTaken(product, candidate);
    return this.uploads.store(storageKey, file.path, () =>
      this.transactions.run(async (tx) => {
        // Serialises uploads to one product so that "version already taken" cannot race.
        await this.firmwares.lockProductUploads(product.id, tx);
        await this.refuseTaken(product, candidate, tx);
        const saved = await this.firmwares.insert(
          {
            productId: product.id,
            uuid: candidate.uuid,
            version: candidate.version,
            versionSortKey: candidate.versionSortKey,
            metaProduct: candidate.product,
            platform: candidate.platform,
            architecture: candidate.architecture,
            author: candidate.author,
            description: candidate.description,
            misc: candidate.misc,
            vcsIdentifier: candidate.vcsIdentifier,
            fwupVersion: candidate.fwupVersion,
            deltaFwupVersion: candidate.deltaFwupVersion,
            tool,
            size: String(file.size),
            sha256: file.sha256,
            chunkSha256: file.chunkSha256,
            storageKey,
            signedWith: candidate.signedWith,
            uploadedById: access.actor.userId,
          },
          tx,
        );
        await this.audit.record(tx, {
          orgId: access.orgId,
          actor: access.actor,
          action: 'firmware.upload',
          targetType: 'firmware',
          targetId: candidate.uuid,
          details: { product: product.name, version: candidate.version, size: file.size, tool },
        });
        return saved;
      }),
    );
  }

  /** 422 when the product has a firmware of this uuid, or of this version where versions must be unique. */
  private async refuseTaken(
    product: ProductRecord,
    candidate: { uuid: string; version: string },
    tx?: Tx,
  ): Promise<void> {
    if (await this.firmwares.existsByUuid(product.id, candidate.uuid, tx)) {
      throw DomainError.invalidField('uuid', ALREADY_TAKEN);
    }
    if (
      product.requireUniqueFirmwareVersion &&
      (await this.firmwares.existsByVersion(product.id, candidate.version, tx))
    ) {
      throw DomainError.invalidField('version', ALREADY_TAKEN);
    }
  }

  private async find(product: ProductRecord, uuid: string): Promise<Firmware> {
    const firmware = UUID_PATTERN.test(uuid)
      ? await this.firmwares.findByUuid(product.id, uuid.toLowerCase())
      : null;
    if (!firmware) throw DomainError.notFound();
    return firmware;
  }
}
