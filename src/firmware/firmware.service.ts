import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { rm } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { DataSource } from 'typeorm';
import { AuditService } from '../audit/audit.service';
import type { OrgAccess } from '../common/auth/actor';
import { DomainError } from '../common/errors/domain-error';
import { isForeignKeyViolation, isUniqueViolation } from '../common/errors/postgres-errors';
import { Created, pathSegment } from '../common/http/created';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { ProductsService } from '../products/products.service';
import type { Product } from '../products/product.entity';
import { SigningKeysService } from '../signing-keys/signing-keys.service';
import type { FirmwareDetailView, FirmwareView } from './dto/firmware.dto';
import { Firmware } from './firmware.entity';
import {
  type FirmwareArchive,
  FirmwareFormatError,
  missingRequiredMetadata,
  readFirmwareArchive,
  semverSortKey,
  verifyMetaSignature,
} from './fwup';
import { FirmwareStorage } from './storage/firmware-storage';
import { type ReceivedFile, receiveFirmwareUpload } from './upload-receiver';

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

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

type LimitedField =
  'product' | 'platform' | 'architecture' | 'version' | 'author' | 'vcsIdentifier' | 'fwupVersion';

/** Column sizes of the firmwares table. */
const META_LIMITS: Record<LimitedField, number> = {
  product: 255,
  platform: 255,
  architecture: 255,
  version: 255,
  author: 255,
  vcsIdentifier: 255,
  fwupVersion: 64,
};

const META_NAMES: Record<LimitedField, string> = {
  product: 'meta-product',
  platform: 'meta-platform',
  architecture: 'meta-architecture',
  version: 'meta-version',
  author: 'meta-author',
  vcsIdentifier: 'meta-vcs-identifier',
  fwupVersion: 'meta-fwup-version',
};

@Injectable()
export class FirmwareService {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly products: ProductsService,
    private readonly keys: SigningKeysService,
    private readonly storage: FirmwareStorage,
    private readonly audit: AuditService,
  ) {}

  async list(access: OrgAccess, productName: string): Promise<{ data: FirmwareView[] }> {
    const product = await this.products.findInOrg(access, productName);
    const rows = await this.db.getRepository(Firmware).find({
      where: { productId: product.id },
      order: { versionSortKey: 'DESC', insertedAt: 'DESC' },
    });
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

  async remove(access: OrgAccess, productName: string, uuid: string): Promise<void> {
    const product = await this.products.findInOrg(access, productName);
    const firmware = await this.find(product, uuid);
    try {
      await this.db.transaction(async (tx) => {
        const result = await tx.getRepository(Firmware).delete({ id: firmware.id });
        if (!result.affected) throw DomainError.notFound();
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
      if (isForeignKeyViolation(err))
        throw DomainError.conflict('a pending device update still targets this firmware');
      throw err;
    }
    await this.storage.remove(firmware.storageKey);
  }

  /** Streams the upload to disk, validates the archive, then stores it: the file is never held in memory. */
  async upload(
    access: OrgAccess,
    productName: string,
    request: IncomingMessage,
  ): Promise<Created<{ data: FirmwareView }>> {
    const product = await this.products.findInOrg(access, productName);
    const temporary = await this.storage.temporaryPath();
    try {
      const file = await receiveFirmwareUpload(request, temporary, this.config.firmwareMaxBytes);
      const firmware = await this.validateAndStore(access, product, file);
      return new Created(
        `/api/orgs/${pathSegment(access.orgName)}/products/${pathSegment(product.name)}/firmwares/${firmware.uuid}`,
        { data: firmwareView(firmware, product.name) },
      );
    } finally {
      await rm(temporary, { force: true });
    }
  }

  private async validateAndStore(access: OrgAccess, product: Product, file: ReceivedFile): Promise<Firmware> {
    let archive: FirmwareArchive;
    try {
      archive = await readFirmwareArchive(file.path);
    } catch (err) {
      if (err instanceof FirmwareFormatError) throw invalidFirmware(err.message);
      throw err;
    }
    const meta = archive.metadata;
    const missing = missingRequiredMetadata(meta);
    if (missing.length > 0) {
      throw invalidFirmware(`meta.conf lacks ${missing.map((key) => `meta-${key}`).join(', ')}`);
    }
    const tooLong = (Object.keys(META_LIMITS) as LimitedField[]).find(
      (field) => [...(meta[field] ?? '')].length > META_LIMITS[field],
    );
    if (tooLong) {
      throw invalidFirmware(
        `meta.conf's ${META_NAMES[tooLong]} is longer than ${META_LIMITS[tooLong]} characters`,
      );
    }
    if (!product.allowedUpdateTools.includes('fwup')) {
      throw invalidFirmware(
        `the product "${product.name}" does not accept fwup firmware (see allowed_update_tools)`,
      );
    }
    if (meta.product !== product.name) {
      throw invalidFirmware(
        `is built for the product "${meta.product}", but was uploaded to "${product.name}"`,
      );
    }
    const versionSortKey = semverSortKey(meta.version!);
    if (versionSortKey === null)
      throw DomainError.invalidField('version', 'must be a valid semantic version');

    const keys = await this.keys.forOrg(access.orgId);
    if (!archive.signature) {
      throw invalidFirmware(
        "is not signed: fwup firmware must be signed with one of the organization's keys",
      );
    }
    if (keys.length === 0) throw invalidFirmware('is signed, but the organization has no signing keys yet');
    const signedWith = verifyMetaSignature(archive.metaConf, archive.signature, keys);
    if (signedWith === null)
      throw invalidFirmware("signature does not match any of the organization's signing keys");

    const uuid = archive.uuid;
    const storageKey = `${product.id}/${uuid}.fw`;
    let stored = false;
    try {
      return await this.db.transaction(async (tx) => {
        // Serialises uploads to one product so that "version already taken" cannot race.
        await tx.query(`SELECT pg_advisory_xact_lock(hashtext('firmware'), hashtext($1))`, [product.id]);
        const repo = tx.getRepository(Firmware);
        if (await repo.existsBy({ productId: product.id, uuid })) {
          throw DomainError.invalidField('uuid', 'has already been taken');
        }
        if (
          product.requireUniqueFirmwareVersion &&
          (await repo.existsBy({ productId: product.id, version: meta.version! }))
        ) {
          throw DomainError.invalidField('version', 'has already been taken');
        }
        await this.storage.adopt(storageKey, file.path);
        stored = true;
        const saved = await repo.save(
          repo.create({
            productId: product.id,
            uuid,
            version: meta.version!,
            versionSortKey,
            metaProduct: meta.product!,
            platform: meta.platform!,
            architecture: meta.architecture!,
            author: meta.author ?? null,
            description: meta.description ?? null,
            misc: meta.misc ?? null,
            vcsIdentifier: meta.vcsIdentifier ?? null,
            fwupVersion: meta.fwupVersion ?? null,
            tool: 'fwup',
            size: String(file.size),
            sha256: file.sha256,
            chunkSha256: file.chunkSha256,
            storageKey,
            signedWith,
            uploadedById: access.actor.userId,
          }),
        );
        await this.audit.record(tx, {
          orgId: access.orgId,
          actor: access.actor,
          action: 'firmware.upload',
          targetType: 'firmware',
          targetId: uuid,
          details: { product: product.name, version: meta.version!, size: file.size },
        });
        return saved;
      });
    } catch (err) {
      if (stored) await this.storage.remove(storageKey);
      if (isUniqueViolation(err)) throw DomainError.invalidField('uuid', 'has already been taken');
      throw err;
    }
  }

  private async find(product: Product, uuid: string): Promise<Firmware> {
    const firmware = UUID_PATTERN.test(uuid)
      ? await this.db.getRepository(Firmware).findOneBy({ productId: product.id, uuid: uuid.toLowerCase() })
      : null;
    if (!firmware) throw DomainError.notFound();
    return firmware;
  }
}
