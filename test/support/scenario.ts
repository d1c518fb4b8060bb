import type { FwupKeyPair } from './fw-builder';
import type { Fixtures, TestUser } from './fixtures';
import { createTestApp, type TestApp, type TestAppOptions } from './test-app';

export interface OrgScenarioOptions {
  /** Environment of the test app (rate limits, ...). */
  env?: Record<string, string>;
  app?: TestAppOptions;
  /** Options of the admin user (name, password, ...). */
  admin?: Parameters<Fixtures['user']>[0];
  /** Create a product of this name (through the API, by the admin). */
  product?: string;
  /** Register a fresh fwup signing key under this name. */
  signingKey?: string;
}

export interface OrgScenario {
  t: TestApp;
  /** The organization's creator, its admin. */
  admin: TestUser;
  org: string;
}

/** What `orgScenario(options)` answers: `product` and `key` are there when the options asked for them. */
export type OrgScenarioOf<O extends OrgScenarioOptions> = OrgScenario &
  (O extends { product: string } ? { product: string } : unknown) &
  (O extends { signingKey: string } ? { key: FwupKeyPair } : unknown);

/**
 * The start most spec files share: a test app on a fresh database, a user and the organization they administer,
 * optionally a product and a signing key. Use as `({ t, admin, org } = await orgScenario(...))` in `beforeAll`,
 * and close `t` in `afterAll`.
 */
export async function orgScenario<O extends OrgScenarioOptions = Record<never, never>>(
  options: O = {} as O,
): Promise<OrgScenarioOf<O>> {
  const t = await createTestApp(options.env, options.app);
  const admin = await t.fixtures.user(options.admin);
  const org = await t.fixtures.org(admin);
  const key =
    options.signingKey === undefined ? undefined : await t.fixtures.signingKey(org, options.signingKey);
  const product =
    options.product === undefined ? undefined : await t.fixtures.product(admin, org, options.product);
  return { t, admin, org, product, key } as OrgScenarioOf<O>;
}
