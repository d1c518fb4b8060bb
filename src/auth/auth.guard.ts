import { type CanActivate, type ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Actor, DeviceAccess, OrgAccess } from '../common/auth/actor';
import { type AuthenticatedRequest, PUBLIC_ROUTE, ROUTE_NAME } from '../common/auth/decorators';
import { ROUTE_POLICIES, type RouteName, type RoutePolicy } from '../common/auth/route-policies';
import { type Role, roleSatisfies } from '../common/auth/roles';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-codes';
import { RENDERS_NERVESHUB_TAGS } from '../common/http/nerveshub-rendering';
import { bucketKey, rateLimited, RateLimiter } from '../common/http/rate-limiter';
import { BrowserSessionAuthenticator } from '../browser-sessions/browser-session-authenticator';
import { sessionRequest } from '../browser-sessions/session-request';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { joinedProduct } from '../products/products.service';
import type { PolicyColumns } from './access.queries';
import { AccessRepository } from './access.repository';
import { TokensService } from './tokens.service';

const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
const TOO_MANY_FAILURES = 'too many failed authentications from this address, try again later';
const TOO_MANY_REQUESTS = 'too many requests for this token, try again later';

const DAY_MS = 86_400_000;

/**
 * Why the organization's policy refuses this caller, if it does: two-factor sign-in required and not on; or, for a
 * personal access token (not a browser session), a scope the organization does not accept or a token older than it
 * allows.
 */
function policyRefusal(policy: PolicyColumns, actor: Actor): string | undefined {
  if (policy.lacks_two_factor === true && actor.singleSignOn !== true) {
    return 'this organization requires two-factor sign-in: turn it on for your account (POST /api/users/me/two_factor) to work in it';
  }
  if (actor.tokenIssuedAt === undefined) return undefined;
  if (policy.allowed_token_scopes !== null && !policy.allowed_token_scopes.includes(actor.scope)) {
    return `this organization accepts personal access tokens with scope ${policy.allowed_token_scopes.join(' or ')} only`;
  }
  const days = policy.max_token_lifetime_days;
  if (days !== null && Date.now() - actor.tokenIssuedAt > days * DAY_MS) {
    return `this organization accepts personal access tokens up to ${days} days old: create a new token`;
  }
  return undefined;
}

/** The address only when it is needed (`req.ip` parses X-Forwarded-For each time it is read). */
const clientAddress = (request: AuthenticatedRequest) =>
  request.ip ?? request.socket.remoteAddress ?? 'unknown';

interface RouteMetadata {
  isPublic: boolean;
  policy: RoutePolicy | undefined;
  rendersNervesHubTags: boolean;
}

/**
 * Denies by default: a route passes only if it is @Public() or names its policy with @Route(). For a
 * named route: a valid token (401), a write allowed by the token's scope (403 forbidden), then the
 * organization membership the policy asks for (404 when absent) and its role (403 when too low).
 */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly tokens: TokensService,
    private readonly browserSessions: BrowserSessionAuthenticator,
    private readonly accessRows: AccessRepository,
    private readonly limiter: RateLimiter,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /**
   * Synchronous when it can be (a public route, or a cached bearer token on a route of the caller's own): Nest
   * awaits a guard's promise in steps of its own, part of what every request costs (bench/README.md §1).
   */
  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    const route = this.route(context);
    if (route.isPublic) return true;
    // The request itself: switchToHttp() builds a new object of three closures on every call.
    const request = context.getArgByIndex<AuthenticatedRequest>(0);
    const header = request.headers.authorization;
    const cached = header === undefined ? undefined : this.tokens.cachedActor(header);
    if (cached === undefined || this.blockedAddress(request, header) !== undefined) {
      return this.authenticate(request).then((actor) => this.admit(request, route, actor));
    }
    return this.admit(request, route, cached);
  }

  /** The authenticated caller against the route's policy (and the token's request budget). */
  private admit(
    request: AuthenticatedRequest,
    route: RouteMetadata,
    authenticated: Actor,
  ): true | Promise<true> {
    // A copy: the token cache shares the authenticated actor between requests. Object.assign, not a spread with an
    // extra property, which V8 runs on a slow path (~1 µs, the guard's largest cost per request).
    const actor: Actor = Object.assign({}, authenticated, { requestId: (request as { id?: string }).id });
    request.actor = actor;
    if (route.rendersNervesHubTags && actor.rendering === 'nerveshub') request.rendersNervesHubTags = true;
    // Counted in memory and shared in batches (hitBuffered): no database round trip on the request path.
    const limit = this.limiter.hitBuffered(bucketKey('api', actor.tokenId), this.config.rateLimitApiPerMin);
    if (actor.scope === 'read' && !READ_METHODS.has(request.method)) throw DomainError.readOnlyToken();

    const policy = route.policy;
    if (!policy) throw DomainError.notFound();
    if (policy.scope === 'user') {
      if (!limit.allowed) throw rateLimited(limit, TOO_MANY_REQUESTS);
      return true;
    }
    const access =
      policy.scope === 'org' ? this.orgAccess(request, policy.role) : this.deviceAccess(request, policy.role);
    return access.then((granted) => {
      request.access = granted;
      if (!limit.allowed) throw rateLimited(limit, TOO_MANY_REQUESTS);
      return true;
    });
  }

  /** Each route's @Public() and @Route() metadata (per controller class and handler), read once. */
  private readonly routes = new WeakMap<object, WeakMap<object, RouteMetadata>>();

  private route(context: ExecutionContext): RouteMetadata {
    const handler = context.getHandler();
    const controller = context.getClass();
    let handlers = this.routes.get(controller);
    if (!handlers) this.routes.set(controller, (handlers = new WeakMap()));
    let route = handlers.get(handler);
    if (!route) {
      const targets = [handler, controller];
      const name = this.reflector.getAllAndOverride<RouteName | undefined>(ROUTE_NAME, targets);
      route = {
        isPublic: this.reflector.getAllAndOverride<boolean>(PUBLIC_ROUTE, targets) === true,
        policy: name ? ROUTE_POLICIES[name] : undefined,
        rendersNervesHubTags:
          this.reflector.getAllAndOverride<boolean>(RENDERS_NERVESHUB_TAGS, targets) === true,
      };
      handlers.set(handler, route);
    }
    return route;
  }

  /**
   * The token's actor. A presented credential that fails counts against the source address; over the
   * limit, the address gets 429 (before any token lookup) until its window ends. Without an `Authorization`
   * header, a browser session's cookie (not counted: its secret cannot be guessed, and an expired one is normal).
   */
  private async authenticate(request: AuthenticatedRequest): Promise<Actor> {
    const header = request.headers.authorization;
    if (header === undefined && request.headers.cookie !== undefined) {
      return this.browserSessions.authenticate(sessionRequest(request));
    }
    const block = this.blockedAddress(request, header);
    if (block !== undefined) throw rateLimited(block, TOO_MANY_FAILURES);
    try {
      return await this.tokens.authenticate(header, clientAddress(request));
    } catch (err) {
      const unauthenticated = err instanceof DomainError && err.code === ErrorCode.UNAUTHENTICATED;
      const limit = this.config.rateLimitAuthFailuresPerMin;
      if (!unauthenticated || limit <= 0 || header === undefined) throw err;
      const result = await this.limiter.hitOrBlock('authfail', clientAddress(request), limit);
      if (result.allowed) throw err;
      throw rateLimited(result, TOO_MANY_FAILURES);
    }
  }

  /**
   * A presented credential that fails counts against the source address; over the limit, the address is refused
   * (before any token lookup, a cached one included) until its window ends.
   */
  private blockedAddress(request: AuthenticatedRequest, header: string | undefined) {
    const counted = this.config.rateLimitAuthFailuresPerMin > 0 && header !== undefined;
    return counted && this.limiter.blocking
      ? this.limiter.blocked('authfail', clientAddress(request))
      : undefined;
  }

  /**
   * The caller's membership of `{org_name}`; on routes under a product, the path's `{product_name}` product
   * too, in the same round trip (an unknown product is the service's 404, after the role check).
   */
  private async orgAccess(request: AuthenticatedRequest, role: Role): Promise<OrgAccess> {
    const orgName = request.params.org_name;
    if (typeof orgName !== 'string') throw DomainError.notFound();
    const productName = request.params.product_name;
    const row =
      typeof productName === 'string'
        ? await this.accessRows.findOrgAndProductAccess(orgName, request.actor!.userId, productName)
        : await this.accessRows.findOrgAccess(orgName, request.actor!.userId);
    return this.checked(row, role, request.actor!, (row) => ({
      actor: request.actor!,
      orgId: row.org_id,
      orgName: row.org_name,
      role: row.role,
      ...(typeof productName === 'string' && { product: { name: productName, found: joinedProduct(row) } }),
    }));
  }

  private async deviceAccess(request: AuthenticatedRequest, role: Role): Promise<DeviceAccess> {
    const identifier = request.params.identifier;
    if (typeof identifier !== 'string') throw DomainError.notFound();
    const row = await this.accessRows.findDeviceAccess(identifier, request.actor!.userId);
    return this.checked(row, role, request.actor!, (row) => ({
      actor: request.actor!,
      orgId: row.org_id,
      orgName: row.org_name,
      role: row.role,
      deviceId: row.device_id,
      productId: row.product_id,
    }));
  }

  private checked<Row extends { role: Role } & PolicyColumns, A>(
    row: Row | undefined,
    required: Role,
    actor: Actor,
    toAccess: (row: Row) => A,
  ): A {
    if (!row) throw DomainError.notFound();
    if (!roleSatisfies(row.role, required)) throw DomainError.roleTooLow();
    const refusal = policyRefusal(row, actor);
    if (refusal !== undefined) throw DomainError.policyRefused(refusal);
    return toAccess(row);
  }
}
