import { useCallback, useEffect, useState } from 'preact/hooks';
import { api, setCsrfToken, whenSignedOut } from './api/client';
import { Layout } from './components/layout';
import { Account } from './pages/account';
import { AuditLog } from './pages/audit';
import { CaCertificates } from './pages/ca-certificates';
import { DeploymentPage } from './pages/deployment';
import { DeploymentForm } from './pages/deployment-form';
import { Deployments } from './pages/deployments';
import { DevicePage } from './pages/device';
import { FirmwarePage } from './pages/firmware';
import { Devices, dropPrefetchedDeviceList, prefetchDeviceList } from './pages/devices';
import { Home } from './pages/home';
import { IrohEndpoints } from './pages/iroh-endpoints';
import { Members } from './pages/members';
import { Overview } from './pages/overview';
import { ProductSettings } from './pages/product';
import { Products } from './pages/products';
import { Scripts } from './pages/scripts';
import { SignIn } from './pages/sign-in';
import { SigningKeys } from './pages/signing-keys';
import { WebhookPage, Webhooks } from './pages/webhooks';
import { match, navigate, useLocation } from './router';
import type { OrgWithRole, Section, Session } from './session';

/** The console: the session first (a cookie the server set at sign-in), then the page the path names. */
export function App() {
  // undefined: not known yet (the first GET /api/session is on its way).
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  const [orgs, setOrgs] = useState<OrgWithRole[] | null>(null);
  const { path, search } = useLocation();

  const signedIn = useCallback((next: Session | null) => {
    setCsrfToken(next?.csrf_token ?? null);
    setSession(next);
    if (next === null) {
      setOrgs(null);
      dropPrefetchedDeviceList();
    }
  }, []);

  const loadOrgs = useCallback(async () => {
    const { data } = await api.GET('/api/orgs');
    if (data) setOrgs(data.data);
  }, []);

  // Asked while the first render runs, not after its paint (an effect's time), and together: both need only the
  // cookie, so the first page waits for one round trip, not two in a row (a signed-out browser's 401 on the
  // organizations says what the session's does).
  // A devices page opened by its URL asks for its list at the same time (the heaviest page, and the usual way in).
  const [atStart] = useState(() => {
    const devicesPage = match('/orgs/:org/products/:product/devices', path);
    if (devicesPage) prefetchDeviceList(devicesPage.org, devicesPage.product, search);
    return { session: api.GET('/api/session'), orgs: api.GET('/api/orgs') };
  });

  useEffect(() => {
    whenSignedOut(() => signedIn(null));
    const orgsAtStart = atStart.orgs;
    void atStart.session.then(async ({ data }) => {
      const next = data ? data.data : null;
      if (next) {
        const { data: known } = await orgsAtStart;
        if (known) setOrgs(known.data);
      }
      signedIn(next);
    });
  }, []);
  useEffect(() => {
    if (session && orgs === null) void loadOrgs();
  }, [session]);
  useEffect(() => {
    document.title = titleOf(path);
  }, [path]);

  if (session === undefined) return <p class="loading">Loading…</p>;
  if (session === null) return <SignIn onSignedIn={signedIn} />;
  if (orgs === null) return <p class="loading">Loading…</p>;

  const signOut = async () => {
    await api.DELETE('/api/session');
    signedIn(null);
    navigate('/', true);
  };
  const roleIn = (org: string) => orgs.find((o) => o.name === org)?.role;

  let section: Section | null = null;
  let org: string | null = null;
  let page;
  let params: Record<string, string> | null;
  if (path === '/' || path === '/sign-in') {
    page = <Home orgs={orgs} onOrgCreated={loadOrgs} />;
  } else if ((params = match('/orgs/:org/products', path))) {
    ({ org } = params);
    section = 'products';
    page = <Products org={params.org} role={roleIn(params.org)} />;
  } else if ((params = match('/orgs/:org/products/:product', path))) {
    ({ org } = params);
    section = 'products';
    page = <Overview org={params.org} product={params.product} search={search} />;
  } else if ((params = match('/orgs/:org/products/:product/settings', path))) {
    ({ org } = params);
    section = 'products';
    page = <ProductSettings org={params.org} product={params.product} role={roleIn(params.org)} />;
  } else if ((params = match('/orgs/:org/products/:product/devices', path))) {
    ({ org } = params);
    section = 'products';
    page = <Devices org={params.org} product={params.product} search={search} role={roleIn(params.org)} />;
  } else if ((params = match('/orgs/:org/products/:product/deployments', path))) {
    ({ org } = params);
    section = 'products';
    page = <Deployments org={params.org} product={params.product} role={roleIn(params.org)} />;
  } else if ((params = match('/orgs/:org/products/:product/new-deployment', path))) {
    ({ org } = params);
    section = 'products';
    page = <DeploymentForm org={params.org} product={params.product} role={roleIn(params.org)} />;
  } else if ((params = match('/orgs/:org/products/:product/deployments/:name', path))) {
    ({ org } = params);
    section = 'products';
    page = (
      <DeploymentPage
        org={params.org}
        product={params.product}
        name={params.name}
        role={roleIn(params.org)}
      />
    );
  } else if ((params = match('/orgs/:org/products/:product/deployments/:name/edit', path))) {
    ({ org } = params);
    section = 'products';
    page = (
      <DeploymentForm
        org={params.org}
        product={params.product}
        name={params.name}
        role={roleIn(params.org)}
      />
    );
  } else if ((params = match('/orgs/:org/products/:product/firmware', path))) {
    ({ org } = params);
    section = 'products';
    page = <FirmwarePage org={params.org} product={params.product} role={roleIn(params.org)} />;
  } else if ((params = match('/orgs/:org/products/:product/scripts', path))) {
    ({ org } = params);
    section = 'products';
    page = <Scripts org={params.org} product={params.product} role={roleIn(params.org)} />;
  } else if ((params = match('/orgs/:org/products/:product/devices/:identifier', path))) {
    ({ org } = params);
    section = 'products';
    page = (
      <DevicePage
        org={params.org}
        product={params.product}
        identifier={params.identifier}
        role={roleIn(params.org)}
      />
    );
  } else if ((params = match('/orgs/:org/members', path))) {
    ({ org } = params);
    section = 'members';
    page = <Members org={params.org} role={roleIn(params.org)} me={session.email} />;
  } else if ((params = match('/orgs/:org/keys', path))) {
    ({ org } = params);
    section = 'keys';
    page = <SigningKeys org={params.org} role={roleIn(params.org)} />;
  } else if ((params = match('/orgs/:org/certificates', path))) {
    ({ org } = params);
    section = 'certificates';
    page = <CaCertificates org={params.org} role={roleIn(params.org)} />;
  } else if ((params = match('/orgs/:org/iroh', path))) {
    ({ org } = params);
    section = 'iroh';
    page = <IrohEndpoints org={params.org} role={roleIn(params.org)} search={search} />;
  } else if ((params = match('/orgs/:org/webhooks', path))) {
    ({ org } = params);
    section = 'webhooks';
    page = <Webhooks org={params.org} role={roleIn(params.org)} />;
  } else if ((params = match('/orgs/:org/webhooks/:id', path))) {
    ({ org } = params);
    section = 'webhooks';
    page = <WebhookPage org={params.org} id={params.id} role={roleIn(params.org)} search={search} />;
  } else if ((params = match('/orgs/:org/audit', path))) {
    ({ org } = params);
    section = 'audit';
    page = <AuditLog org={params.org} search={search} />;
  } else if (path === '/account') {
    section = 'account';
    page = <Account session={session} />;
  } else {
    page = (
      <>
        <h1>Not found</h1>
        <p>There is no page at this address.</p>
      </>
    );
  }
  return (
    <Layout session={session} orgs={orgs} org={org} section={section} onSignOut={() => void signOut()}>
      {page}
    </Layout>
  );
}

function titleOf(path: string): string {
  const parts = path.split('/').filter(Boolean).map(decodeURIComponentSafe);
  return parts.length === 0 ? 'fleethub' : `${parts.reverse().join(' · ')} · fleethub`;
}

function decodeURIComponentSafe(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}
