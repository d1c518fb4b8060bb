import { Injectable } from '@nestjs/common';
import { AuditService } from '../audit/audit.service';
import type { OrgAccess } from '../common/auth/actor';
import { DomainError } from '../common/errors/domain-error';
import { isForeignKeyViolation, isUniqueViolation } from '../common/errors/postgres-errors';
import { Created, pathSegment } from '../common/http/created';
import { type PaginationView, paginationView } from '../common/http/pagination';
import { Transactions } from '../database/transactions';
import { MembersService } from '../members/members.service';
import type { CreateIrohEndpointDto } from './dto/create-iroh-endpoint.dto';
import type { IrohEndpointView } from './dto/iroh-endpoint.view';
import { DEFAULT_INSTANCE, IROH_SERVICE, normaliseEndpointId } from './dto/iroh-fields';
import { type EndpointRow, endpointView } from './endpoint-view';
import { IrohEndpointsRepository } from './iroh-endpoints.repository';
import type { IrohListQuery } from './iroh-list.query';

export const ALREADY_REGISTERED = 'That endpoint id is already registered.';
export const NOT_A_MEMBER = 'does not belong to a member of this organization';

/** Iroh endpoints as operators manage them (the API); devices' reports go through IrohClaimsService. */
@Injectable()
export class IrohService {
  constructor(
    private readonly endpoints: IrohEndpointsRepository,
    private readonly members: MembersService,
    private readonly transactions: Transactions,
    private readonly audit: AuditService,
  ) {}

  /** The iroh endpoints the device holds, optionally of one instance (its network identities of service iroh). */
  listForDevice(deviceId: string, instance: string | null): Promise<EndpointRow[]> {
    return this.endpoints.listForDevice(deviceId, instance);
  }

  /**
   * Registers an endpoint by hand (source `operator`), held by the organization or by one of its members.
   * The unique constraint on `identifier` decides a key registered anywhere (409), so concurrent creates of
   * one key give exactly one success.
   */
  async create(access: OrgAccess, dto: CreateIrohEndpointDto): Promise<Created<{ data: IrohEndpointView }>> {
    const identifier = normaliseEndpointId(dto.identifier)!;
    const userId = dto.user_email ? await this.memberId(access.orgId, dto.user_email) : null;
    let row: EndpointRow;
    try {
      row = await this.transactions.run(async (tx) => {
        const inserted = await this.endpoints.insertOperator(
          {
            orgId: access.orgId,
            identifier,
            service: IROH_SERVICE,
            instance: dto.instance ?? DEFAULT_INSTANCE,
            details: dto.details ?? {},
            userId,
          },
          tx,
        );
        await this.audit.record(tx, {
          orgId: access.orgId,
          actor: access.actor,
          action: 'iroh_endpoint.create',
          targetType: 'iroh_endpoint',
          targetId: identifier,
          details: { instance: dto.instance ?? DEFAULT_INSTANCE, user_email: dto.user_email ?? null },
        });
        return inserted;
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw DomainError.conflict(ALREADY_REGISTERED);
      // The member's account was deleted between the lookup and the insert.
      if (isForeignKeyViolation(err) && userId !== null)
        throw DomainError.invalidField('user_email', NOT_A_MEMBER);
      throw err;
    }
    return new Created(`/api/orgs/${pathSegment(access.orgName)}/iroh_endpoints/${identifier}`, {
      data: endpointView(row),
    });
  }

  /** The org's iroh endpoints, newest first, narrowed by `owner` and `search`; paginated when asked. */
  async list(
    access: OrgAccess,
    query: IrohListQuery,
  ): Promise<{ data: IrohEndpointView[]; pagination?: PaginationView }> {
    const { rows, paging } = await this.endpoints.list(access.orgId, query);
    const data = rows.map(endpointView);
    return paging ? { data, pagination: paginationView(paging.page, paging.total) } : { data };
  }

  async show(access: OrgAccess, rawIdentifier: string): Promise<{ data: IrohEndpointView }> {
    const identifier = normaliseEndpointId(rawIdentifier);
    if (identifier === null) throw DomainError.notFound();
    const row = await this.endpoints.findInOrg(access.orgId, IROH_SERVICE, identifier);
    if (!row) throw DomainError.notFound();
    return { data: endpointView(row) };
  }

  /** Removes the endpoint. A device-reported one comes back the next time the device reports it. */
  async remove(access: OrgAccess, rawIdentifier: string): Promise<void> {
    const identifier = normaliseEndpointId(rawIdentifier);
    if (identifier === null) throw DomainError.notFound();
    await this.transactions.run(async (tx) => {
      const deleted = await this.endpoints.deleteInOrg(access.orgId, IROH_SERVICE, identifier, tx);
      if (deleted === 0) throw DomainError.notFound();
      await this.audit.record(tx, {
        orgId: access.orgId,
        actor: access.actor,
        action: 'iroh_endpoint.delete',
        targetType: 'iroh_endpoint',
        targetId: identifier,
      });
    });
  }

  private async memberId(orgId: string, email: string): Promise<string> {
    const userId = await this.members.memberUserId(orgId, email);
    if (userId === null) throw DomainError.invalidField('user_email', NOT_A_MEMBER);
    return userId;
  }
}
