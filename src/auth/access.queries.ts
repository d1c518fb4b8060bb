import type { Actor } from '../common/auth/actor';
import type { Role } from '../common/auth/roles';
import { joinedProductColumns } from '../products/product-row';
import type { TokenRendering } from './token-rendering';
import type { TokenScope } from './token-scope';

/** A live personal access token and its user, by the token's SHA-256 (`$1`). */
export const TOKEN_BY_HASH = `SELECT t.id AS token_id, t.scope, t.rendering, t.expires_at, t.last_used_at, t.inserted_at,
        u.id AS user_id, u.email, u.username, u.name
   FROM access_tokens t JOIN users u ON u.id = t.user_id
  WHERE t.token_hash = $1 AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now())`;

export interface TokenRow {
  token_id: string;
  scope: TokenScope;
  rendering: TokenRendering;
  expires_at: Date | null;
  last_used_at: Date | null;
  inserted_at: Date;
  user_id: string;
  email: string;
  username: string;
  name: string;
}

/** The caller a live token stands for. */
export function actorOfToken(row: TokenRow): Actor {
  return {
    userId: row.user_id,
    email: row.email,
    username: row.username,
    name: row.name,
    tokenId: row.token_id,
    scope: row.scope,
    rendering: row.rendering,
    tokenIssuedAt: row.inserted_at.getTime(),
  };
}

/**
 * The organization's policy as it bears on the caller (member `m`): the token limits, and whether it requires
 * two-factor sign-in that the member lacks (looked up only when required). All null without a policy row.
 */
const POLICY_COLUMNS = `pol.max_token_lifetime_days, pol.allowed_token_scopes,
        CASE WHEN pol.require_two_factor THEN NOT EXISTS (
          SELECT 1 FROM user_two_factor tf WHERE tf.user_id = m.user_id AND tf.confirmed_at IS NOT NULL) END
          AS lacks_two_factor`;

/** The caller's (`$2`) membership of the organization named `$1`. */
export const ORG_ACCESS = `SELECT o.id AS org_id, o.name AS org_name, m.role, ${POLICY_COLUMNS}
   FROM orgs o JOIN org_memberships m ON m.org_id = o.id AND m.user_id = $2
   LEFT JOIN org_policies pol ON pol.org_id = o.id
  WHERE o.name = $1`;

/** ORG_ACCESS plus the organization's product named `$3` (product columns as joinedProductColumns, null when none). */
export const ORG_AND_PRODUCT_ACCESS = `SELECT o.id AS org_id, o.name AS org_name, m.role, ${POLICY_COLUMNS},
        ${joinedProductColumns('p')}
   FROM orgs o JOIN org_memberships m ON m.org_id = o.id AND m.user_id = $2
   LEFT JOIN org_policies pol ON pol.org_id = o.id
   LEFT JOIN products p ON p.org_id = o.id AND p.name = $3
  WHERE o.name = $1`;

/** The organization's policy columns of an access row (null: no policy row, or not required). */
export interface PolicyColumns {
  max_token_lifetime_days: number | null;
  allowed_token_scopes: TokenScope[] | null;
  lacks_two_factor: boolean | null;
}

export interface OrgAccessRow extends PolicyColumns {
  org_id: string;
  org_name: string;
  role: Role;
}

/** The device identified by `$1` and the caller's (`$2`) membership of its organization. */
export const DEVICE_ACCESS = `SELECT d.id AS device_id, d.product_id, o.id AS org_id, o.name AS org_name, m.role,
        ${POLICY_COLUMNS}
   FROM devices d
   JOIN orgs o ON o.id = d.org_id
   JOIN org_memberships m ON m.org_id = d.org_id AND m.user_id = $2
   LEFT JOIN org_policies pol ON pol.org_id = o.id
  WHERE d.identifier = $1`;

export interface DeviceAccessRow extends OrgAccessRow {
  device_id: string;
  product_id: string;
}
