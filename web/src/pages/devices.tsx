import { useEffect, useRef, useState } from 'preact/hooks';
import { api, errorText } from '../api/client';
import type { components, operations } from '../api/schema';
import { ErrorAlert, Status } from '../components/alert';
import { Link } from '../components/link';
import { LiveBadge } from '../components/live-badge';
import { type LiveData, useLiveEvent, useLiveStream } from '../live';
import { ProductNav } from '../components/product-nav';
import { Pager } from '../components/pager';
import { navigate, navigateWithParams, seg } from '../router';
import type { Role } from '../session';
import { allows } from '../session';
import { BulkActions, type Selection } from './devices-bulk';

type Device = components['schemas']['DeviceView'];
type Pagination = components['schemas']['PaginationView'];
type ListQuery = NonNullable<operations['Devices_list']['parameters']['query']>;

/** The filters the page offers, each kept in the URL under its own name (a filtered list can be shared). */
const TEXT_FILTERS = [
  { name: 'identifier', label: 'Identifier contains' },
  { name: 'tags', label: 'Tags (all of, comma-separated)' },
  { name: 'firmware_version', label: 'Firmware version' },
  { name: 'platform', label: 'Platform' },
  { name: 'deployment_group', label: 'Deployment group' },
] as const;
const CHOICE_FILTERS = [
  { name: 'connection', label: 'Connection', values: ['connected', 'disconnected', 'not_seen'] },
  { name: 'updates', label: 'Updates', values: ['enabled', 'disabled', 'penalty-box'] },
  { name: 'alarm_status', label: 'Health alarms', values: ['with', 'without'] },
] as const;
const SORTS = ['identifier', 'connection_status', 'last_communication', 'version', 'inserted_at'] as const;
const PAGE_SIZES = [25, 50, 100, 250];
type FilterName = (typeof TEXT_FILTERS)[number]['name'] | (typeof CHOICE_FILTERS)[number]['name'];

/** The list's filters as the API names them (`filters[name]` → name), from the URL. */
export function listFilters(search: URLSearchParams): Record<string, string> {
  const filters: Record<string, string> = {};
  for (const { name } of [...TEXT_FILTERS, ...CHOICE_FILTERS]) {
    const value = search.get(name);
    if (value) filters[name] = value;
  }
  return filters;
}

/** The list's query as the URL holds it. */
function listQuery(search: URLSearchParams): ListQuery {
  const query: Record<string, string | number> = {};
  for (const { name } of [...TEXT_FILTERS, ...CHOICE_FILTERS]) {
    const value = search.get(name);
    if (value) query[`filters[${name}]`] = value;
  }
  const sort = search.get('sort');
  if (sort && (SORTS as readonly string[]).includes(sort)) query.sort = sort;
  if (search.get('dir') === 'desc') query.sort_direction = 'desc';
  query['pagination[page]'] = Math.max(1, Number(search.get('page')) || 1);
  const size = Number(search.get('page_size'));
  query['pagination[page_size]'] = PAGE_SIZES.includes(size) ? size : 50;
  return query;
}

function readList(org: string, product: string, search: URLSearchParams) {
  return api.GET('/api/orgs/{org_name}/products/{product_name}/devices', {
    params: { path: { org_name: org, product_name: product }, query: listQuery(search) },
  });
}

/** The list asked for as the console starts on this page, with the session (see prefetchDeviceList). */
let prefetched: { key: string; answer: ReturnType<typeof readList> } | null = null;

/**
 * Asks for the list a devices page opened by its URL will show, while the console still waits for the session:
 * the page's own request would leave only after the session's answer and the first render. Taken once, by the
 * page for the same list.
 */
export function prefetchDeviceList(org: string, product: string, search: URLSearchParams): void {
  prefetched = { key: `${org}\n${product}\n${search.toString()}`, answer: readList(org, product, search) };
}

/** Signed out: the list asked for at the start was refused, and a later sign-in asks again. */
export function dropPrefetchedDeviceList(): void {
  prefetched = null;
}

function takePrefetchedList(org: string, product: string, search: URLSearchParams) {
  const taken = prefetched;
  prefetched = null;
  return taken?.key === `${org}\n${product}\n${search.toString()}` ? taken.answer : null;
}

/** As `Date.toLocaleString()` writes it, from one formatter for every row. */
const dateTime = new Intl.DateTimeFormat(undefined, {
  year: 'numeric',
  month: 'numeric',
  day: 'numeric',
  hour: 'numeric',
  minute: 'numeric',
  second: 'numeric',
});
const when = (timestamp: string | null) =>
  timestamp === null ? 'never' : dateTime.format(new Date(timestamp));

/**
 * The product's devices: the API's filters and sorts, paged by the server, all of it in the URL. A manage member
 * selects devices (rows, the page, or every device the filter matches) and changes them in bulk.
 */
export function Devices(props: {
  org: string;
  product: string;
  search: URLSearchParams;
  role: Role | undefined;
}) {
  const { org, product, search } = props;
  const canManage = allows(props.role, 'manage');
  const base = `/orgs/${seg(org)}/products/${seg(product)}/devices`;
  const [devices, setDevices] = useState<Device[] | null>(null);
  const [pagination, setPagination] = useState<Pagination | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [draft, setDraft] = useState<Record<string, string>>({});
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [allMatching, setAllMatching] = useState(false);
  /** Bumped after a bulk change: the same list, read again. */
  const [generation, setGeneration] = useState(0);
  const [notice, setNotice] = useState<string | null>(null);
  const key = search.toString();
  // Rows follow their devices' connections as they change; after a reconnection the page is read again. Changes
  // are drawn once per frame, the latest per device (a reconnecting fleet sends thousands a second).
  const { live, state, reopened } = useLiveStream(org, product);
  const changes = useRef(new Map<string, LiveData<'device.connection'>>());
  const frame = useRef<number | null>(null);
  useLiveEvent(live, 'device.connection', (change) => {
    changes.current.set(change.identifier, change);
    frame.current ??= requestAnimationFrame(() => {
      frame.current = null;
      const latest = changes.current;
      changes.current = new Map();
      setDevices(
        (shown) =>
          shown?.map((device) => {
            const change = latest.get(device.identifier);
            return change
              ? {
                  ...device,
                  connection_status: change.connection_status,
                  online: change.connection_status === 'connected',
                  last_communication: change.at,
                }
              : device;
          }) ?? null,
      );
    });
  });
  useEffect(
    () => () => {
      if (frame.current !== null) cancelAnimationFrame(frame.current);
    },
    [],
  );
  useEffect(() => setNotice(null), [org, product, key]);

  useEffect(() => {
    setDraft(
      Object.fromEntries(
        [...TEXT_FILTERS, ...CHOICE_FILTERS].map(({ name }) => [name, search.get(name) ?? '']),
      ),
    );
    setError(null);
    setSelected(new Set());
    setAllMatching(false);
    // A later filter or page may answer first: only the newest request's answer is drawn.
    let newest = true;
    void (takePrefetchedList(org, product, search) ?? readList(org, product, search)).then(
      ({ data, error: failure, response }) => {
        if (!newest) return;
        if (data) {
          setDevices(data.data);
          setPagination(data.pagination ?? null);
        } else setError(errorText(failure, response.status));
      },
    );
    return () => {
      newest = false;
    };
  }, [org, product, key, reopened, generation]);

  const toggle = (identifier: string, on: boolean) => {
    const next = new Set(selected);
    if (on) next.add(identifier);
    else next.delete(identifier);
    setSelected(next);
    setAllMatching(false);
  };
  const pageSelected =
    devices !== null && devices.length > 0 && devices.every((d) => selected.has(d.identifier));
  const selectPage = (on: boolean) => {
    setSelected(on && devices ? new Set(devices.map((d) => d.identifier)) : new Set());
    setAllMatching(false);
  };
  const selection: Selection | null = allMatching
    ? { filters: listFilters(search), count: pagination?.total_entries ?? 0 }
    : selected.size > 0
      ? { identifiers: [...selected] }
      : null;

  /** Goes to the list with these URL parameters changed (empty: removed); a filter change starts at page 1. */
  const go = (changes: Record<string, string>) => navigateWithParams(base, search, changes);

  const sortBy = (sort: (typeof SORTS)[number]) => {
    const current = search.get('sort') ?? 'identifier';
    go({ sort, dir: current === sort && search.get('dir') !== 'desc' ? 'desc' : '' });
  };
  const sortState = (sort: string): 'ascending' | 'descending' | undefined =>
    (search.get('sort') ?? 'identifier') === sort
      ? search.get('dir') === 'desc'
        ? 'descending'
        : 'ascending'
      : undefined;
  // A function, not a component: a component defined here would be a new type on every render, and its cells
  // would be built anew each time instead of updated.
  const sortHeader = (sort: (typeof SORTS)[number], label: string) => (
    <th scope="col" aria-sort={sortState(sort)}>
      <button type="button" class="sort" onClick={() => sortBy(sort)}>
        {label}
        <span aria-hidden="true">
          {sortState(sort) === 'ascending' ? ' ▲' : sortState(sort) === 'descending' ? ' ▼' : ''}
        </span>
      </button>
    </th>
  );

  const page = pagination?.page_number ?? 1;
  return (
    <>
      <h1>{product}</h1>
      <ProductNav org={org} product={product} current="devices" />
      <LiveBadge state={state} />
      <form
        class="filters"
        aria-label="Filter devices"
        onSubmit={(event) => {
          event.preventDefault();
          go(draft);
        }}
      >
        {TEXT_FILTERS.map(({ name, label }) => (
          <div key={name}>
            <label for={`filter-${name}`}>{label}</label>
            <input
              id={`filter-${name}`}
              maxLength={255}
              value={draft[name] ?? ''}
              onInput={(event) => setDraft({ ...draft, [name]: event.currentTarget.value })}
            />
          </div>
        ))}
        {CHOICE_FILTERS.map(({ name, label, values }) => (
          <div key={name}>
            <label for={`filter-${name}`}>{label}</label>
            <select
              id={`filter-${name}`}
              value={draft[name] ?? ''}
              onChange={(event) => go({ [name as FilterName]: event.currentTarget.value })}
            >
              <option value="">any</option>
              {values.map((value) => (
                <option key={value} value={value}>
                  {value.replace('_', ' ')}
                </option>
              ))}
            </select>
          </div>
        ))}
        <div class="actions">
          <button type="submit">Apply filters</button>
          <button type="button" class="secondary" onClick={() => navigate(base)}>
            Clear
          </button>
        </div>
      </form>
      <ErrorAlert message={error} />
      {canManage && <Status message={notice} />}
      {pagination !== null && (
        <p role="status" class="count">
          {pagination.total_entries.toLocaleString()} device{pagination.total_entries === 1 ? '' : 's'}
          {pagination.total_pages > 1 &&
            `, page ${page.toLocaleString()} of ${pagination.total_pages.toLocaleString()}`}
        </p>
      )}
      {canManage &&
        pagination !== null &&
        (pageSelected || allMatching) &&
        pagination.total_entries > devices!.length && (
          <p class="selection" role="status">
            {allMatching ? (
              <>
                All {pagination.total_entries.toLocaleString()} devices matching this filter are selected.{' '}
                <button type="button" class="link" onClick={() => selectPage(false)}>
                  Clear the selection
                </button>
              </>
            ) : (
              <>
                The {devices!.length.toLocaleString()} devices on this page are selected.{' '}
                <button type="button" class="link" onClick={() => setAllMatching(true)}>
                  Select all {pagination.total_entries.toLocaleString()} devices matching this filter
                </button>
              </>
            )}
          </p>
        )}
      {canManage && selection !== null && (
        <BulkActions
          org={org}
          product={product}
          selection={selection}
          onDone={(message) => {
            setNotice(message);
            setGeneration(generation + 1);
          }}
        />
      )}
      {devices !== null && devices.length > 0 && (
        <table class="devices">
          <caption class="visually-hidden">Devices of {product}</caption>
          <thead>
            <tr>
              {canManage && (
                <th scope="col" class="select">
                  <input
                    type="checkbox"
                    aria-label="Select every device on this page"
                    checked={pageSelected}
                    onChange={(event) => selectPage(event.currentTarget.checked)}
                  />
                </th>
              )}
              {sortHeader('identifier', 'Identifier')}
              {sortHeader('connection_status', 'Connection')}
              {sortHeader('version', 'Firmware')}
              <th scope="col">Platform</th>
              <th scope="col">Tags</th>
              <th scope="col">Group</th>
              {sortHeader('last_communication', 'Last seen')}
            </tr>
          </thead>
          <tbody>
            {/* Keyed by position: another page or filter updates the rows in place rather than building new ones. */}
            {devices.map((device, position) => (
              <tr key={position} data-connection={device.connection_status}>
                {canManage && (
                  <td class="select">
                    <input
                      type="checkbox"
                      aria-label={`Select ${device.identifier}`}
                      checked={allMatching || selected.has(device.identifier)}
                      onChange={(event) => toggle(device.identifier, event.currentTarget.checked)}
                    />
                  </td>
                )}
                <th scope="row">
                  <Link href={`${base}/${seg(device.identifier)}`}>{device.identifier}</Link>
                </th>
                <td class="connection">
                  <span class={`dot ${device.connection_status}`} aria-hidden="true" />
                  {device.connection_status.replace('_', ' ')}
                </td>
                <td>{device.version ?? '—'}</td>
                <td>{device.firmware_metadata?.platform ?? '—'}</td>
                <td>{device.tags || '—'}</td>
                <td>{device.deployment_group?.name ?? '—'}</td>
                <td>{when(device.last_communication)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {pagination !== null && (
        <Pager
          page={page}
          totalPages={pagination.total_pages}
          pageSize={pagination.page_size}
          pageSizes={PAGE_SIZES}
          sizeId="page-size"
          go={go}
        />
      )}
    </>
  );
}
