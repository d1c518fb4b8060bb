import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../api/client';
import type { components, operations } from '../api/schema';
import { ActionsHeader } from '../components/actions-header';
import { ErrorAlert, Status } from '../components/alert';
import { Pager } from '../components/pager';
import { navigate, navigateWithParams, seg } from '../router';
import { allows, type Role } from '../session';

type Endpoint = components['schemas']['IrohEndpointView'];
type Pagination = components['schemas']['PaginationView'];
type Member = components['schemas']['MemberView'];
type ListQuery = NonNullable<operations['Iroh_list']['parameters']['query']>;

const OWNERS = [
  { value: 'device', label: 'Devices' },
  { value: 'user', label: 'Members' },
  { value: 'none', label: 'Unassigned' },
] as const;
const PAGE_SIZES = [25, 50, 100];
const FIELD_LABELS: Record<string, string> = {
  identifier: 'Endpoint id',
  instance: 'Instance',
  user_email: 'Belongs to',
  details: 'Details',
};

/** The list's query as the URL holds it: always paginated (an organization may hold a million endpoints). */
function listQuery(search: URLSearchParams): ListQuery {
  const query: ListQuery = {
    'pagination[page]': Math.max(1, Number(search.get('page')) || 1),
    'pagination[page_size]': PAGE_SIZES.includes(Number(search.get('page_size')))
      ? Number(search.get('page_size'))
      : 25,
  };
  const term = search.get('search');
  if (term) query.search = term;
  const owner = search.get('owner');
  if (OWNERS.some((o) => o.value === owner)) query.owner = owner as ListQuery['owner'];
  return query;
}

function ownerText(endpoint: Endpoint): string {
  const { owner } = endpoint;
  if (owner.type === 'device') return `Device ${owner.device_identifier ?? ''}`;
  if (owner.type === 'user') return `Member ${owner.user_name ?? owner.user_email ?? ''}`;
  return 'Unassigned';
}

const when = (timestamp: string | null) => (timestamp === null ? '—' : new Date(timestamp).toLocaleString());

/**
 * The organization's iroh endpoint ids: searched, filtered by holder and paged by the server (all of it in the
 * URL); a manage member registers one (for a member, or for a device to claim when it connects) and removes them.
 */
export function IrohEndpoints(props: { org: string; role: Role | undefined; search: URLSearchParams }) {
  const { org, role, search } = props;
  const canManage = allows(role, 'manage');
  const base = `/orgs/${seg(org)}/iroh`;
  const path = { org_name: org };
  const [endpoints, setEndpoints] = useState<Endpoint[] | null>(null);
  const [pagination, setPagination] = useState<Pagination | null>(null);
  const [members, setMembers] = useState<Member[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [status, setStatus] = useState<string | null>(null);
  const [term, setTerm] = useState('');
  const [identifier, setIdentifier] = useState('');
  const [instance, setInstance] = useState('');
  const [holder, setHolder] = useState('');
  const [details, setDetails] = useState('');
  const [createError, setCreateError] = useState<string | null>(null);
  const [reloads, setReloads] = useState(0);
  const key = search.toString();

  useEffect(() => {
    setTerm(search.get('search') ?? '');
    let newest = true;
    void api
      .GET('/api/orgs/{org_name}/iroh_endpoints', { params: { path, query: listQuery(search) } })
      .then(({ data, error: failure, response }) => {
        if (!newest) return;
        if (data) {
          setEndpoints(data.data);
          setPagination(data.pagination ?? null);
          setError(null);
        } else setError(errorText(failure, response.status));
      });
    return () => {
      newest = false;
    };
  }, [org, key, reloads]);
  useEffect(() => {
    if (!canManage) return;
    void api.GET('/api/orgs/{org_name}/users', { params: { path } }).then(({ data }) => {
      if (data) setMembers(data.data);
    });
  }, [org, canManage]);

  /** Goes to the list with these URL parameters changed (empty: removed); a new search starts at page 1. */
  const go = (changes: Record<string, string>) => navigateWithParams(base, search, changes);

  const create = async (event: Event) => {
    event.preventDefault();
    setCreateError(null);
    setStatus(null);
    let parsedDetails: Record<string, unknown> | null = null;
    if (details.trim() !== '') {
      try {
        const value: unknown = JSON.parse(details);
        if (typeof value !== 'object' || value === null || Array.isArray(value))
          throw new Error('not an object');
        parsedDetails = value as Record<string, unknown>;
      } catch {
        setCreateError('Details must be a JSON object, such as {"hostname": "build-box"}.');
        return;
      }
    }
    const {
      data,
      error: failure,
      response,
    } = await api.POST('/api/orgs/{org_name}/iroh_endpoints', {
      params: { path },
      body: {
        identifier: identifier.trim(),
        instance: instance.trim() || null,
        user_email: holder || null,
        details: parsedDetails,
      },
    });
    if (!data) {
      setCreateError(errorText(failure, response.status, FIELD_LABELS));
      return;
    }
    setStatus(`Endpoint ${data.data.identifier.slice(0, 12)}… registered.`);
    setIdentifier('');
    setInstance('');
    setHolder('');
    setDetails('');
    setReloads((n) => n + 1);
  };

  const remove = async (endpoint: Endpoint) => {
    const question =
      endpoint.source === 'device_reported'
        ? `Remove the endpoint ${endpoint.identifier}? Its device reported it and records it again the next time it reports its keys.`
        : `Remove the endpoint ${endpoint.identifier}?`;
    if (!window.confirm(question)) return;
    setStatus(null);
    const { error: failure, response } = await api.DELETE(
      '/api/orgs/{org_name}/iroh_endpoints/{identifier}',
      {
        params: { path: { ...path, identifier: endpoint.identifier } },
      },
    );
    if (!response.ok) {
      setError(errorText(failure, response.status));
      return;
    }
    setStatus(`Endpoint ${endpoint.identifier.slice(0, 12)}… removed.`);
    setReloads((n) => n + 1);
  };

  const page = pagination?.page_number ?? 1;
  const filtered = search.has('search') || search.has('owner');
  return (
    <>
      <h1>Iroh endpoints</h1>
      <p class="hint">
        Endpoint ids (public keys) that this organization's devices and people use to reach each other over
        iroh. A device records its own when it connects; anything else is registered here.
      </p>
      <form
        class="filters"
        role="search"
        aria-label="Search endpoints"
        onSubmit={(event) => {
          event.preventDefault();
          go({ search: term.trim() });
        }}
      >
        <div>
          <label for="iroh-search">Endpoint id prefix, device or member</label>
          <input
            id="iroh-search"
            type="search"
            maxLength={255}
            value={term}
            onInput={(event) => setTerm(event.currentTarget.value)}
          />
        </div>
        <div>
          <label for="iroh-owner">Held by</label>
          <select
            id="iroh-owner"
            value={search.get('owner') ?? ''}
            onChange={(event) => go({ owner: event.currentTarget.value })}
          >
            <option value="">anyone</option>
            {OWNERS.map(({ value, label }) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </div>
        <div class="actions">
          <button type="submit">Search</button>
          <button type="button" class="secondary" onClick={() => navigate(base)}>
            Clear
          </button>
        </div>
      </form>
      <ErrorAlert message={error} />
      <Status message={status} />
      {pagination !== null && (
        <p role="status" class="count">
          {pagination.total_entries.toLocaleString()} endpoint{pagination.total_entries === 1 ? '' : 's'}
          {pagination.total_pages > 1 &&
            `, page ${page.toLocaleString()} of ${pagination.total_pages.toLocaleString()}`}
        </p>
      )}
      {endpoints !== null && endpoints.length === 0 && (
        <p>
          {filtered
            ? 'Nothing matches that.'
            : 'No endpoints yet. Devices record their own when they connect.'}
        </p>
      )}
      {endpoints !== null && endpoints.length > 0 && (
        <table class="endpoints">
          <caption class="visually-hidden">Iroh endpoints of {org}</caption>
          <thead>
            <tr>
              <th scope="col">Endpoint id</th>
              <th scope="col">Held by</th>
              <th scope="col">Instance</th>
              <th scope="col">Source</th>
              <th scope="col">Last reported</th>
              <th scope="col">Registered</th>
              {canManage && <ActionsHeader />}
            </tr>
          </thead>
          <tbody>
            {endpoints.map((endpoint) => (
              <tr key={endpoint.identifier}>
                <th scope="row" class="mono key">
                  {endpoint.identifier}
                </th>
                <td>{ownerText(endpoint)}</td>
                <td>{endpoint.instance}</td>
                <td>{endpoint.source === 'device_reported' ? 'reported by its device' : 'registered'}</td>
                <td>{when(endpoint.last_reported_at)}</td>
                <td>{when(endpoint.inserted_at)}</td>
                {canManage && (
                  <td>
                    <button
                      type="button"
                      class="danger"
                      aria-label={`Remove endpoint ${endpoint.identifier}`}
                      onClick={() => void remove(endpoint)}
                    >
                      Remove
                    </button>
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {pagination !== null && pagination.total_pages > 1 && (
        <Pager
          page={page}
          totalPages={pagination.total_pages}
          pageSize={pagination.page_size}
          pageSizes={PAGE_SIZES}
          sizeId="iroh-page-size"
          go={go}
        />
      )}
      {canManage && (
        <form onSubmit={(event) => void create(event)} aria-labelledby="iroh-register-heading">
          <fieldset>
            <legend id="iroh-register-heading">Register an endpoint</legend>
            <label for="iroh-identifier">Endpoint id</label>
            <input
              id="iroh-identifier"
              class="mono wide"
              required
              pattern="[0-9A-Fa-f]{64}"
              title="64 hexadecimal characters"
              aria-describedby="iroh-identifier-hint"
              value={identifier}
              onInput={(event) => setIdentifier(event.currentTarget.value)}
            />
            <p class="hint" id="iroh-identifier-hint">
              The public key the endpoint proves it holds (64 hexadecimal characters), not a ticket or a relay
              URL.
            </p>
            <label for="iroh-instance">Instance (optional)</label>
            <input
              id="iroh-instance"
              maxLength={64}
              placeholder="default"
              value={instance}
              onInput={(event) => setInstance(event.currentTarget.value)}
            />
            <label for="iroh-holder">Belongs to</label>
            <select
              id="iroh-holder"
              value={holder}
              onChange={(event) => setHolder(event.currentTarget.value)}
            >
              <option value="">Nobody in particular (or a device that claims it when it connects)</option>
              {members.map((member) => (
                <option key={member.email} value={member.email}>
                  {member.name} ({member.email})
                </option>
              ))}
            </select>
            <label for="iroh-details">Details (optional JSON object)</label>
            <textarea
              id="iroh-details"
              class="mono"
              rows={2}
              value={details}
              onInput={(event) => setDetails(event.currentTarget.value)}
            />
            <ErrorAlert message={createError} />
            <button type="submit">Register endpoint</button>
          </fieldset>
        </form>
      )}
    </>
  );
}
