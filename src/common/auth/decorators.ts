import { createParamDecorator, type ExecutionContext, SetMetadata } from '@nestjs/common';
import type { Request } from 'express';
import type { RouteName } from './route-policies';
import type { Actor, DeviceAccess, OrgAccess } from './actor';

export const PUBLIC_ROUTE = 'fleethub:public';
export const ROUTE_NAME = 'fleethub:route';

/** The route needs no token. Everything else is denied unless it names its policy with @Route. */
export const Public = () => SetMetadata(PUBLIC_ROUTE, true);

/** Names the route in ROUTE_POLICIES, which says who may call it. */
export const Route = (name: RouteName) => SetMetadata(ROUTE_NAME, name);

export interface AuthenticatedRequest extends Request {
  actor?: Actor;
  access?: OrgAccess | DeviceAccess;
  /** Set by the guard: the answer's records carry `tags` as lists (RendersNervesHubTags). */
  rendersNervesHubTags?: true;
}

export const CurrentActor = createParamDecorator((_: unknown, ctx: ExecutionContext): Actor => {
  const actor = ctx.switchToHttp().getRequest<AuthenticatedRequest>().actor;
  if (!actor) throw new Error('CurrentActor used on a route without authentication');
  return actor;
});

export const CurrentAccess = createParamDecorator((_: unknown, ctx: ExecutionContext): OrgAccess => {
  const access = ctx.switchToHttp().getRequest<AuthenticatedRequest>().access;
  if (!access) throw new Error('CurrentAccess used on a route without an org or device policy');
  return access;
});
