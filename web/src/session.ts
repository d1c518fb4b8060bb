import type { components } from './api/schema';

export type Session = components['schemas']['SessionView'];
export type OrgWithRole = components['schemas']['OrgWithRoleView'];
export type Role = OrgWithRole['role'];

const RANK: Record<Role, number> = { view: 0, manage: 1, admin: 2 };

/** True when `role` may do what `needed` may (view < manage < admin), as the server's route policies. */
export function allows(role: Role | undefined, needed: Role): boolean {
  return role !== undefined && RANK[role] >= RANK[needed];
}

/** The parts of the console the navigation names. */
export type Section =
  'products' | 'members' | 'keys' | 'certificates' | 'iroh' | 'webhooks' | 'audit' | 'account';
