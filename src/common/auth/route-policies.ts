import type { Role } from './roles';

/**
 * How a route's caller is resolved and the least role it needs: the one table of access rules.
 * - `user`: any valid token; no organization involved.
 * - `org`: the path's `{org_name}`; the caller must be a member (else 404) with at least `role` (else 403).
 * - `device`: the device named by `{identifier}` among the caller's organizations (short device URLs).
 */
export type RoutePolicy = { scope: 'user' } | { scope: 'org'; role: Role } | { scope: 'device'; role: Role };

export const ROUTE_POLICIES = {
  'users.me': { scope: 'user' },
  'tokens.list': { scope: 'user' },
  'tokens.create': { scope: 'user' },
  'tokens.revoke': { scope: 'user' },
  'sessions.list': { scope: 'user' },
  'sessions.end': { scope: 'user' },
  'orgs.create': { scope: 'user' },
  'orgs.list': { scope: 'user' },

  'audit.list': { scope: 'org', role: 'admin' },
  'audit.export': { scope: 'org', role: 'admin' },

  'members.list': { scope: 'org', role: 'view' },
  'members.show': { scope: 'org', role: 'view' },
  'members.add': { scope: 'org', role: 'admin' },
  'members.update': { scope: 'org', role: 'admin' },
  'members.remove': { scope: 'org', role: 'admin' },
  'members.invite': { scope: 'org', role: 'admin' },
  'invitations.list': { scope: 'org', role: 'admin' },
  'invitations.revoke': { scope: 'org', role: 'admin' },

  'products.create': { scope: 'org', role: 'manage' },
  'products.list': { scope: 'org', role: 'view' },
  'products.show': { scope: 'org', role: 'view' },
  'products.update': { scope: 'org', role: 'manage' },
  'products.delete': { scope: 'org', role: 'admin' },
  'products.extensions.show': { scope: 'org', role: 'view' },
  'products.extensions.update': { scope: 'org', role: 'manage' },
  'products.overview': { scope: 'org', role: 'view' },

  'scripts.create': { scope: 'org', role: 'manage' },
  'scripts.list': { scope: 'org', role: 'view' },
  'scripts.show': { scope: 'org', role: 'view' },
  'scripts.update': { scope: 'org', role: 'manage' },
  'scripts.delete': { scope: 'org', role: 'manage' },

  'devices.create': { scope: 'org', role: 'manage' },
  'devices.list': { scope: 'org', role: 'view' },
  'devices.show': { scope: 'org', role: 'view' },
  'devices.auth': { scope: 'org', role: 'view' },
  'devices.update': { scope: 'org', role: 'manage' },
  'devices.extensions.show': { scope: 'org', role: 'view' },
  'devices.extensions.update': { scope: 'org', role: 'manage' },
  'devices.delete': { scope: 'org', role: 'manage' },
  'devices.upgrade': { scope: 'org', role: 'manage' },
  'devices.put': { scope: 'org', role: 'manage' },
  'devices.reboot': { scope: 'org', role: 'manage' },
  'devices.move': { scope: 'org', role: 'manage' },
  'devices.import': { scope: 'org', role: 'manage' },
  'devices.bulk': { scope: 'org', role: 'manage' },
  'devices.imports.show': { scope: 'org', role: 'view' },
  'devices.reconnect': { scope: 'org', role: 'manage' },
  'devices.penalty': { scope: 'org', role: 'manage' },
  'devices.code': { scope: 'org', role: 'manage' },
  'devices.scripts.run': { scope: 'org', role: 'view' },
  'devices.short.show': { scope: 'device', role: 'view' },
  'devices.short.upgrade': { scope: 'device', role: 'manage' },
  'devices.short.code': { scope: 'device', role: 'manage' },
  'devices.short.reboot': { scope: 'device', role: 'manage' },
  'devices.short.move': { scope: 'device', role: 'manage' },
  'devices.short.reconnect': { scope: 'device', role: 'manage' },
  'devices.short.penalty': { scope: 'device', role: 'manage' },
  'devices.short.scripts': { scope: 'device', role: 'view' },
  'devices.short.scripts.run': { scope: 'device', role: 'view' },
  'devices.short.console': { scope: 'device', role: 'manage' },

  'firmwares.upload': { scope: 'org', role: 'manage' },
  'firmwares.list': { scope: 'org', role: 'view' },
  'firmwares.show': { scope: 'org', role: 'view' },
  'firmwares.download': { scope: 'org', role: 'view' },
  'firmwares.delete': { scope: 'org', role: 'manage' },
  'firmwares.deltas': { scope: 'org', role: 'view' },

  'keys.create': { scope: 'org', role: 'admin' },
  'keys.list': { scope: 'org', role: 'view' },
  'keys.show': { scope: 'org', role: 'view' },
  'keys.delete': { scope: 'org', role: 'admin' },

  'sharedSecrets.create': { scope: 'org', role: 'admin' },
  'sharedSecrets.list': { scope: 'org', role: 'view' },
  'sharedSecrets.delete': { scope: 'org', role: 'admin' },
  'deviceSecrets.create': { scope: 'org', role: 'admin' },

  'iroh.create': { scope: 'org', role: 'manage' },
  'iroh.list': { scope: 'org', role: 'view' },
  'iroh.show': { scope: 'org', role: 'view' },
  'iroh.delete': { scope: 'org', role: 'manage' },

  'caCertificates.list': { scope: 'org', role: 'view' },
  'caCertificates.show': { scope: 'org', role: 'view' },
  'caCertificates.verificationToken': { scope: 'org', role: 'view' },
  'caCertificates.create': { scope: 'org', role: 'manage' },
  'caCertificates.delete': { scope: 'org', role: 'manage' },
  'deviceCertificates.list': { scope: 'org', role: 'view' },
  'deviceCertificates.show': { scope: 'org', role: 'view' },
  'deviceCertificates.create': { scope: 'org', role: 'manage' },
  'deviceCertificates.delete': { scope: 'org', role: 'manage' },

  'networkIdentities.list': { scope: 'org', role: 'view' },
  'deviceLogs.list': { scope: 'org', role: 'view' },
  'deviceHealth.show': { scope: 'org', role: 'view' },
  'deviceHealth.metrics': { scope: 'org', role: 'view' },

  'deployments.create': { scope: 'org', role: 'manage' },
  'deployments.list': { scope: 'org', role: 'view' },
  'deployments.show': { scope: 'org', role: 'view' },
  'deployments.releases': { scope: 'org', role: 'view' },
  'deployments.update': { scope: 'org', role: 'manage' },
  'deployments.delete': { scope: 'org', role: 'manage' },
  'deployments.deltas': { scope: 'org', role: 'view' },

  'live.events': { scope: 'org', role: 'view' },
} as const satisfies Record<string, RoutePolicy>;

export type RouteName = keyof typeof ROUTE_POLICIES;
