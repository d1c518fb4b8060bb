import type { TokenRendering } from '../../auth/token-rendering';
import type { TokenScope } from '../../auth/token-scope';
import type { ProductRecord } from '../../products/product-record';
import type { Role } from './roles';

/** The authenticated caller, resolved once per request by the AuthGuard. */
export interface Actor {
  userId: string;
  email: string;
  username: string;
  name: string;
  /** The token's id; for a browser session, `session:<id>` (the API rate limit is per token or session). */
  tokenId: string;
  scope: TokenScope;
  /** Set when a browser session's cookie authenticated the request: that session's id. */
  sessionId?: string;
  /** The session signed in through the identity provider (single sign-on), which stands for a second factor. */
  singleSignOn?: boolean;
  /** How answers render where the spec and NervesHub differ (absent: `fleethub`). */
  rendering?: TokenRendering;
  /** When the personal access token was created (ms since the epoch); absent for a browser session. */
  tokenIssuedAt?: number;
  /** The request this actor is acting in (`x-request-id`), recorded in the audit log. */
  requestId?: string;
}

/** The caller's membership of the organization a route works in, resolved by the AuthGuard. */
export interface OrgAccess {
  actor: Actor;
  orgId: string;
  orgName: string;
  role: Role;
  /**
   * The path's `{product_name}` product, read by the AuthGuard in the same query as the membership (`found`
   * null: the organization has no product by that name). ProductsService.findInOrg answers from it without a
   * query. Absent when the route has no product in its path or the access was built elsewhere.
   */
  product?: { name: string; found: ProductRecord | null };
}

/** For short device URLs: the device found among the caller's organizations, with that membership. */
export interface DeviceAccess extends OrgAccess {
  deviceId: string;
  productId: string;
}
