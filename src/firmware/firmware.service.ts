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
import { FILE_EXTENSIONS, inspectFirmware } from './firmware-inspection';
import { detectFileFormat, UNRECOGNISED_FORMAT } from './formats/detect-format';
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
    const tool = await detectFileFormat(file.path);
    if (tool === null) throw invalidFirmware(UNRECOGNISED_FORMAT);
    if (!(product.allowedUpdateTools as string[]).includes(tool)) {
      throw invalidFirmware(
        `The product "${product.name}" does not accept ${tool} firmware. A member with the manage role can ` +
          `enable it in the product's settings (allowed_update_tools).`,
      );
    }
    const candidate = await inspectFirmware(tool, file, product, () => this.keys.forOrg(access.orgId));
    const storageKey = `${product.id}/${candidate.uuid}${FILE_EXTENSIONS[tool]}`;
    let stored = false;
    try {
      return await this.db.transaction(async (tx) => {
        // Serialises uploads to one product so that "version already taken" cannot race.
        await tx.query(`SELECT pg_advisory_xact_lock(hashtext('firmware'), hashtext($1))`, [product.id]);
        const repo = tx.getRepository(Firmware);
        if (await repo.existsBy({ productId: product.id, uuid: candidate.uuid })) {
          throw DomainError.invalidField('uuid', 'has already been taken');
        }
        if (
          product.requireUniqueFirmwareVersion &&
          (await repo.existsBy({ productId: product.id, version: candidate.version }))
        ) {
          throw DomainError.invalidField('version', 'has already been taken');
        }
        await this.storage.adopt(storageKey, file.path);
        stored = true;
        const saved = await repo.save(
          repo.create({
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
            tool,
            size: String(file.size),
            sha256: file.sha256,
            chunkSha256: file.chunkSha256,
            storageKey,
            signedWith: candidate.signedWith,
            uploadedById: access.actor.userId,
          }),
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
