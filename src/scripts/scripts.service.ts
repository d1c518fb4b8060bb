import { Injectable } from '@nestjs/common';
import { AuditService } from '../audit/audit.service';
import type { OrgAccess } from '../common/auth/actor';
import { DomainError } from '../common/errors/domain-error';
import { Created, pathSegment } from '../common/http/created';
import {
  type PaginationView,
  paginationView,
  parsePageRequest,
  type RawQuery,
} from '../common/http/pagination';
import { normaliseTags, parseBigId } from '../common/values';
import { Transactions } from '../database/transactions';
import { ProductsService } from '../products/products.service';
import type { CreateScriptDto, ScriptView, UpdateScriptDto } from './dto/script.dto';
import { scriptView } from './script-view';
import { type ScriptChanges, ScriptsRepository } from './scripts.repository';

@Injectable()
export class ScriptsService {
  constructor(
    private readonly scripts: ScriptsRepository,
    private readonly transactions: Transactions,
    private readonly products: ProductsService,
    private readonly audit: AuditService,
  ) {}

  async create(
    access: OrgAccess,
    productName: string,
    dto: CreateScriptDto,
  ): Promise<Created<{ data: ScriptView }>> {
    const product = await this.products.findInOrg(access, productName);
    const id = await this.transactions.run(async (tx) => {
      const newId = await this.scripts.insert(
        {
          productId: product.id,
          name: dto.name,
          text: dto.text,
          tags: normaliseTags(dto.tags).join(','),
          createdById: access.actor.userId,
        },
        tx,
      );
      await this.audit.record(tx, {
        orgId: access.orgId,
        actor: access.actor,
        action: 'script.create',
        targetType: 'script',
        targetId: newId,
        details: { product: product.name, name: dto.name },
      });
      return newId;
    });
    const view = await this.load(product.id, id);
    return new Created(
      `/api/orgs/${pathSegment(access.orgName)}/products/${pathSegment(product.name)}/scripts/${id}`,
      { data: view! },
    );
  }

  async show(access: OrgAccess, productName: string, rawId: string): Promise<{ data: ScriptView }> {
    const product = await this.products.findInOrg(access, productName);
    const id = parseBigId(rawId);
    const view = id === null ? null : await this.load(product.id, id);
    if (!view) throw DomainError.notFound();
    return { data: view };
  }

  async list(
    access: OrgAccess,
    productName: string,
    query: RawQuery,
  ): Promise<{ data: ScriptView[]; pagination: PaginationView }> {
    const page = parsePageRequest(query);
    const product = await this.products.findInOrg(access, productName);
    return this.page(product.id, page);
  }

  /** `GET /api/devices/{identifier}/scripts`: the scripts of the device's product, as the product's list. */
  async listInProduct(
    productId: string,
    query: RawQuery,
  ): Promise<{ data: ScriptView[]; pagination: PaginationView }> {
    return this.page(productId, parsePageRequest(query));
  }

  /** The text of the script a device is asked to run (`name_or_id`: NervesHub's lookup), or null. */
  async findRunnable(productId: string, nameOrId: string): Promise<{ id: string; text: string } | null> {
    return this.scripts.findByNameOrId(productId, nameOrId, parseBigId(nameOrId));
  }

  private async page(
    productId: string,
    page: ReturnType<typeof parsePageRequest>,
  ): Promise<{ data: ScriptView[]; pagination: PaginationView }> {
    const [rows, count] = await Promise.all([
      this.scripts.listPage(productId, page.pageSize, page.offset),
      this.scripts.countInProduct(productId),
    ]);
    return { data: rows.map(scriptView), pagination: paginationView(page, count) };
  }

  async update(
    access: OrgAccess,
    productName: string,
    rawId: string,
    dto: UpdateScriptDto,
  ): Promise<{ data: ScriptView }> {
    const product = await this.products.findInOrg(access, productName);
    const id = parseBigId(rawId);
    if (id === null) throw DomainError.notFound();
    const changes: ScriptChanges = {};
    if (dto.name !== undefined) changes.name = dto.name;
    if (dto.text !== undefined) changes.text = dto.text;
    if (dto.tags !== undefined) changes.tags = normaliseTags(dto.tags).join(',');
    if (Object.keys(changes).length > 0) {
      await this.transactions.run(async (tx) => {
        if (!(await this.scripts.update(product.id, id, changes, tx))) throw DomainError.notFound();
        await this.audit.record(tx, {
          orgId: access.orgId,
          actor: access.actor,
          action: 'script.update',
          targetType: 'script',
          targetId: id,
          details: { product: product.name, fields: Object.keys(changes) },
        });
      });
    }
    const view = await this.load(product.id, id);
    if (!view) throw DomainError.notFound();
    return { data: view };
  }

  async remove(access: OrgAccess, productName: string, rawId: string): Promise<void> {
    const product = await this.products.findInOrg(access, productName);
    const id = parseBigId(rawId);
    if (id === null) throw DomainError.notFound();
    await this.transactions.run(async (tx) => {
      if (!(await this.scripts.delete(product.id, id, tx))) throw DomainError.notFound();
      await this.audit.record(tx, {
        orgId: access.orgId,
        actor: access.actor,
        action: 'script.delete',
        targetType: 'script',
        targetId: id,
        details: { product: product.name },
      });
    });
  }

  private async load(productId: string, id: string): Promise<ScriptView | null> {
    const row = await this.scripts.findInProduct(productId, id);
    return row ? scriptView(row) : null;
  }
}
