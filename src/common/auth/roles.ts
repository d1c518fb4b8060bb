export const ROLES = ['view', 'manage', 'admin'] as const;
export type Role = (typeof ROLES)[number];

const RANK: Record<Role, number> = { view: 1, manage: 2, admin: 3 };

/** True when `role` is `required` or higher (view < manage < admin). */
export function roleSatisfies(role: Role, required: Role): boolean {
  return RANK[role] >= RANK[required];
}

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}
