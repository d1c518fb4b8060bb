import { Injectable } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { AuditService } from '../audit/audit.service';
import type { OrgAccess } from '../common/auth/actor';
import { DomainError } from '../common/errors/domain-error';
import { ALREADY_TAKEN } from '../common/errors/messages';
import { Created, pathSegment } from '../common/http/created';
import { UUID_PATTERN } from '../common/values';
import { InstanceBus } from '../database/instance-bus/instance-bus';
import { type Tx, Transactions } from '../database/transactions';
import { DeploymentsService } from '../deployments/deployments.service';
import type { ReceivedFile } from '../firmware/received-file';
import { FirmwareFileRemover } from '../firmware/storage/firmware-file-remover';
import { FirmwareStorage } from '../firmware/storage/firmware-storage';
import { consumingUpload, UploadedFileStore } from '../firmware/storage/uploaded-file-store';
import {
  answerStoredFile,
  type StoredFileAnswer,
  type StoredFileRequest,
} from '../firmware/storage/stored-file-answer';
import type { ProductRecord } from '../products/product-record';
import { ProductsService } from '../products/products.service';
import { SigningKeysService } from '../signing-keys/signing-keys.service';
import type { Archive } from './archive.entity';
import { inspectArchive } from './archive-inspection';
import { ARCHIVES_CHANNEL, type ArchivesChange } from './archive-records.service';
import { ARCHIVE_ATTACHED, ARCHIVE_UNKNOWN } from './archives.errors';
import { ArchivesRepository } from './archives.repository';
import type { ArchiveView, AttachArchiveDto, DeploymentGroupArchiveView } from './dto/archive.dto';

export function archiveView(archive: Archive, productName: string): ArchiveView {
  return {
    uuid: archive.uuid,
    product: productName,
    version: archive.version,
    platform: archive.platform,
    architecture: archive.architecture,
    author: archive.author,
    description: archive.description,
    misc: archive.misc,
    vcs_identifier: archive.vcsIdentifier,
    size: Number(archive.size),
    signed_with: archive.signedWith,
    inserted_at: archive.insertedAt.toISOString(),
  };
}

/**
 * Archives (NervesHub's): signed fwup files that are not firmware, uploaded per product, attached to deployment
 * groups, whose devices are sent them (the device gateway, told through the instance bus).
 */
@Injectable()
export class ArchivesService {
  constructor(
    private readonly archives: ArchivesRepository,
    private readonly transactions: Transactions,
    private readonly products: ProductsService,
    private readonly keys: SigningKeysService,
    private readonly deployments: DeploymentsService,
    private readonly storage: FirmwareStorage,
    private readonly files: FirmwareFileRemover,
    private readonly audit: AuditService,
    private readonly bus: InstanceBus,
    private readonly uploads: UploadedFileStore,
  ) {}

  async list(access: OrgAccess, productName: string): Promise<{ data: ArchiveView[] }> {
    const product = await this.products.findInOrg(access, productName);
    const rows = await this.archives.listForProduct(product.id);
    return { data: rows.map((archive) => archiveView(archive, product.name)) };
  }

  async show(access: OrgAccess, productName: string, uuid: string): Promise<{ data: ArchiveView }> {
    const product = await this.products.findInOrg(access, productName);
    return { data: archiveView(await this.find(product, uuid), product.name) };
  }

  /** The archive's file (whole, one byte range, 416, or a redirect to the object store): `<uuid>.fw`. */
  async download(
    access: OrgAccess,
    productName: string,
    uuid: string,
    request: Omit<StoredFileRequest, 'fileHeaders'>,
  ): Promise<StoredFileAnswer> {
    const product = await this.products.findInOrg(access, productName);
    const archive = await this.find(product, uuid);
    return answerStoredFile(this.storage, archive.storageKey, {
      ...request,
      fileHeaders: { 'Content-Disposition': `attachment; filename="${archive.uuid}.fw"` },
    });
  }

  /** Deletes an archive; 409 while a deployment group has it attached. Its file is removed after the commit. */
  async remove(access: OrgAccess, productName: string, uuid: string): Promise<void> {
    const product = await this.products.findInOrg(access, productName);
    const archive = await this.find(product, uuid);
    try {
      await this.transactions.run(async (tx) => {
        // The archives trigger records the file for removal in this transaction (a product's deletion too).
        if (!(await this.archives.delete(archive.id, tx))) throw DomainError.notFound();
        await this.audit.record(tx, {
          orgId: access.orgId,
          actor: access.actor,
          action: 'archive.delete',
          targetType: 'archive',
          targetId: archive.uuid,
          details: { product: product.name, version: archive.version },
        });
      });
    } catch (err) {
      if (this.archives.isHeldByGroup(err)) throw DomainError.conflict(ARCHIVE_ATTACHED);
      throw err;
    }
    await this.files.removeNow([archive.storageKey]);
  }

  /** The 404 for an unknown product, before any byte of an upload is read. */
  async checkUploadTarget(access: OrgAccess, productName: string): Promise<void> {
    await this.products.findInOrg(access, productName);
  }

  /** Validates a received file and stores it; the temporary file is consumed (adopted or removed). */
  async ingest(
    access: OrgAccess,
    productName: string,
    file: ReceivedFile,
  ): Promise<Created<{ data: ArchiveView }>> {
    return consumingUpload(file, async () => {
      const product = await this.products.findInOrg(access, productName);
      const archive = await this.validateAndStore(access, product, file);
      return new Created(
        `/api/orgs/${pathSegment(access.orgName)}/products/${pathSegment(product.name)}/archives/${archive.uuid}`,
        { data: archiveView(archive, product.name) },
      );
    });
  }

  /** The archive attached to the group (null when none). */
  async attachment(
    access: OrgAccess,
    productName: string,
    groupName: string,
  ): Promise<{ data: DeploymentGroupArchiveView }> {
    const product = await this.products.findInOrg(access, productName);
    const groupId = await this.deployments.groupIdOf(product, groupName);
    const archive = await this.archives.attachedTo(groupId);
    return {
      data: { deployment_group: groupName, archive: archive && archiveView(archive, product.name) },
    };
  }

  /**
   * Attaches an archive to the group (replacing its archive, if any): the group's connected devices are sent it
   * at once, on whichever instance holds them, and the others when they connect.
   */
  async attach(
    access: OrgAccess,
    productName: string,
    groupName: string,
    dto: AttachArchiveDto,
  ): Promise<{ data: DeploymentGroupArchiveView }> {
    const product = await this.products.findInOrg(access, productName);
    const groupId = await this.deployments.groupIdOf(product, groupName);
    const uuid = dto.archive.toLowerCase();
    const archive = await this.transactions.run(async (tx) => {
      const found = UUID_PATTERN.test(uuid) ? await this.archives.findByUuid(product.id, uuid, tx) : null;
      if (!found) throw DomainError.invalidField('archive', ARCHIVE_UNKNOWN);
      // The archive's row is locked by the foreign key's check: a concurrent delete waits, then gets its 409.
      if (!(await this.archives.attach(groupId, found.id, tx))) throw DomainError.notFound();
      await this.recordGroupChange(tx, access, groupName, 'archive.attach', {
        product: product.name,
        archive: found.uuid,
        version: found.version,
      });
      await this.announce({ group: groupId, product: product.id }, tx);
      return found;
    });
    return { data: { deployment_group: groupName, archive: archiveView(archive, product.name) } };
  }

  /** Detaches the group's archive (nothing is sent to devices; nothing to do when it had none). */
  async detach(access: OrgAccess, productName: string, groupName: string): Promise<void> {
    const product = await this.products.findInOrg(access, productName);
    const groupId = await this.deployments.groupIdOf(product, groupName);
    await this.transactions.run(async (tx) => {
      const uuid = await this.archives.detach(groupId, tx);
      if (uuid === null) return;
      await this.recordGroupChange(tx, access, groupName, 'archive.detach', {
        product: product.name,
        archive: uuid,
      });
      await this.announce({ group: groupId, product: product.id }, tx);
    });
  }

  private async validateAndStore(
    access: OrgAccess,
    product: ProductRecord,
    file: ReceivedFile,
  ): Promise<Archive> {
    const candidate = await inspectArchive(file, () => this.keys.forOrg(access.orgId));
    // A key of its own for each upload, so that a file of a deleted archive still waiting for its removal is
    // never the file of a new upload of the same uuid.
    const storageKey = `archives/${product.id}/${candidate.uuid}-${randomBytes(6).toString('hex')}.fw`;
    if (await this.archives.existsByUuid(product.id, candidate.uuid)) {
      throw DomainError.invalidField('uuid', ALREADY_TAKEN);
    }
    return this.uploads.store(storageKey, file.path, () =>
      this.transactions.run(async (tx) => {
        await this.archives.lockProductUploads(product.id, tx);
        if (await this.archives.existsByUuid(product.id, candidate.uuid, tx)) {
          throw DomainError.invalidField('uuid', ALREADY_TAKEN);
        }
        const saved = await this.archives.insert(
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
            size: String(file.size),
            sha256: file.sha256,
            storageKey,
            signedWith: candidate.signedWith,
            uploadedById: access.actor.userId,
          },
          tx,
        );
        await this.audit.record(tx, {
          orgId: access.orgId,
          actor: access.actor,
          action: 'archive.upload',
          targetType: 'archive',
          targetId: candidate.uuid,
          details: { product: product.name, version: candidate.version, size: file.size },
        });
        return saved;
      }),
    );
  }

  private async find(product: ProductRecord, uuid: string): Promise<Archive> {
    const archive = UUID_PATTERN.test(uuid)
      ? await this.archives.findByUuid(product.id, uuid.toLowerCase())
      : null;
    if (!archive) throw DomainError.notFound();
    return archive;
  }

  /** Every instance's gateway learns of the change once `tx` commits (nothing if it rolls back). */
  private async announce(change: ArchivesChange, tx: Tx): Promise<void> {
    await this.bus.publish(ARCHIVES_CHANNEL, JSON.stringify(change), tx);
  }

  private recordGroupChange(
    tx: Tx,
    access: OrgAccess,
    groupName: string,
    action: string,
    details: Record<string, unknown>,
  ): Promise<void> {
    return this.audit.record(tx, {
      orgId: access.orgId,
      actor: access.actor,
      action,
      targetType: 'deployment_group',
      targetId: groupName,
      details,
    });
  }
}
