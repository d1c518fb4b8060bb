import type { ComponentChildren } from 'preact';
import { navigate, seg } from '../router';
import { allows, type OrgWithRole, type Section, type Session } from '../session';
import { Link } from './link';

interface LayoutProps {
  session: Session;
  orgs: OrgWithRole[];
  org: string | null;
  section: Section | null;
  onSignOut: () => void;
  children: ComponentChildren;
}

/** The frame of every signed-in page: the organization switcher, the sections, the account and sign-out. */
export function Layout(props: LayoutProps) {
  const org = props.org ?? props.orgs[0]?.name ?? null;
  const role = props.orgs.find((o) => o.name === org)?.role;
  return (
    <>
      <a class="skip" href="#content">
        Skip to content
      </a>
      <header class="top">
        <Link href="/" class="brand">
          fleethub
        </Link>
        {props.orgs.length > 0 && (
          <div class="switcher">
            <label for="org-switcher">Organization</label>
            <select
              id="org-switcher"
              value={org ?? ''}
              onChange={(event) => navigate(`/orgs/${seg(event.currentTarget.value)}/products`)}
            >
              {props.orgs.map((o) => (
                <option key={o.name} value={o.name}>
                  {o.name} ({o.role})
                </option>
              ))}
            </select>
          </div>
        )}
        <nav aria-label="Sections">
          {org !== null && (
            <>
              <Link href={`/orgs/${seg(org)}/products`} current={props.section === 'products'}>
                Products
              </Link>
              <Link href={`/orgs/${seg(org)}/members`} current={props.section === 'members'}>
                Members
              </Link>
              <Link href={`/orgs/${seg(org)}/keys`} current={props.section === 'keys'}>
                Signing keys
              </Link>
              <Link href={`/orgs/${seg(org)}/certificates`} current={props.section === 'certificates'}>
                CA certificates
              </Link>
              <Link href={`/orgs/${seg(org)}/iroh`} current={props.section === 'iroh'}>
                Iroh endpoints
              </Link>
              <Link href={`/orgs/${seg(org)}/webhooks`} current={props.section === 'webhooks'}>
                Webhooks
              </Link>
              {allows(role, 'admin') && (
                <Link href={`/orgs/${seg(org)}/audit`} current={props.section === 'audit'}>
                  Audit log
                </Link>
              )}
            </>
          )}
          <Link href="/account" current={props.section === 'account'}>
            Account
          </Link>
        </nav>
        <div class="who">
          <span>{props.session.name}</span>
          <button type="button" class="secondary" onClick={props.onSignOut}>
            Sign out
          </button>
        </div>
      </header>
      <main id="content" tabIndex={-1}>
        {props.children}
      </main>
    </>
  );
}
