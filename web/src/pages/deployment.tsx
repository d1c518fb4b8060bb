import { useEffect, useRef, useState } from 'preact/hooks';
import { api, errorText } from '../api/client';
import type { components } from '../api/schema';
import { ErrorAlert, Status } from '../components/alert';
import { ConfirmDialog } from '../components/confirm-dialog';
import { Link } from '../components/link';
import { ProductNav } from '../components/product-nav';
import {
  type DeviceConnectionEvent,
  type DeviceUpdateEvent,
  liveText,
  useProductEvents,
} from '../live-events';
import { navigate, seg } from '../router';
import { allows, type Role } from '../session';
import { type DeploymentGroup, deploymentPaths, stateText } from './deployments';

type Release = components['schemas']['DeploymentReleaseView'];
type Device = components['schemas']['DeviceView'];
type Counts = components['schemas']['DeploymentCountsView'];
type Pagination = components['schemas']['PaginationView'];

const DEVICES_PER_PAGE = 25;
/** A device joining or leaving the group changes its count: the page of devices is read again, at most this often. */
const DEVICES_RELOAD_MS = 1000;

const when = (timestamp: string | null) => (timestamp === null ? '—' : new Date(timestamp).toLocaleString());

const COUNTS: { key: keyof Counts; label: string }[] = [
  { key: 'devices', label: 'Devices' },
  { key: 'updating', label: 'Updating' },
  { key: 'updated', label: 'Updated' },
  { key: 'failed', label: 'Failed' },
  { key: 'blocked', label: 'Penalty box' },
];

/** An update's state as the live events report it, for one device row. */
function updateText(update: DeviceUpdateEvent | undefined): string {
  if (!update) return '—';
  if (update.status === 'updating' && update.progress !== null) return `updating, ${update.progress} %`;
  return update.status;
}

/**
 * One deployment group's rollout: its counts and its devices as they change (live events, no polling), its state
 * with pause and resume and why it paused itself, its conditions and settings, its releases; edit and delete for a
 * manage member.
 */
export function DeploymentPage(props: {
  org: string;
  product: string;
  name: string;
  role: Role | undefined;
}) {
  const { org, product, name } = props;
  const canManage = allows(props.role, 'manage');
  const paths = deploymentPaths(org, product);
  const path = { org_name: org, product_name: product, name };
  const [group, setGroup] = useState<DeploymentGroup | null>(null);
  const [releases, setReleases] = useState<Release[] | null>(null);
  const [devices, setDevices] = useState<Device[] | null>(null);
  const [pagination, setPagination] = useState<Pagination | null>(null);
  const [page, setPage] = useState(1);
  const [updates, setUpdates] = useState<Record<string, DeviceUpdateEvent>>({});
  const [error, setError] = useState<string | null>(null);
  const [status, setStatus] = useState<string | null>(null);
  const [confirmDelete, setConfirmDelete] = useState(false);
  const [busy, setBusy] = useState(false);
  const reload = useRef<{ timer: number | null; last: number }>({ timer: null, last: 0 });

  const loadGroup = async () => {
    const [shown, history] = await Promise.all([
      api.GET('/api/orgs/{org_name}/products/{product_name}/deployments/{name}', { params: { path } }),
      api.GET('/api/orgs/{org_name}/products/{product_name}/deployments/{name}/releases', {
        params: { path },
      }),
    ]);
    if (shown.data) setGroup(shown.data.data);
    else setError(errorText(shown.error, shown.response.status));
    if (history.data) setReleases(history.data.data);
  };

  /** The page shown, for reloads a timer or an event starts (their closure may be older than the page). */
  const shownPage = useRef(page);
  shownPage.current = page;

  const loadDevices = async (pageNumber = shownPage.current) => {
    reload.current.last = Date.now();
    const { data } = await api.GET('/api/orgs/{org_name}/products/{product_name}/devices', {
      params: {
        path: { org_name: org, product_name: product },
        query: {
          'filters[deployment_group]': name,
          'pagination[page]': pageNumber,
          'pagination[page_size]': DEVICES_PER_PAGE,
        },
      },
    });
    if (data) {
      setDevices(data.data);
      setPagination(data.pagination ?? null);
    }
  };

  /** The devices again, soon: at most once a DEVICES_RELOAD_MS while members come and go. */
  const reloadDevicesSoon = () => {
    const state = reload.current;
    if (state.timer !== null) return;
    const wait = Math.max(0, state.last + DEVICES_RELOAD_MS - Date.now());
    state.timer = window.setTimeout(() => {
      state.timer = null;
      void loadDevices();
    }, wait);
  };

  useEffect(() => {
    setGroup(null);
    setReleases(null);
    setError(null);
    setStatus(null);
    setUpdates({});
    void loadGroup();
    return () => {
      if (reload.current.timer !== null) window.clearTimeout(reload.current.timer);
      reload.current.timer = null;
    };
  }, [org, product, name]);
  useEffect(() => {
    setUpdates({});
    void loadDevices(page);
  }, [org, product, name, page]);

  // A rollout sends hundreds of events a second (each device's update and its reconnection, the group's counts):
  // only the shown devices' and the group's matter, the latest of each, drawn once per animation frame.
  const pending = useRef<{
    counts: Counts | null;
    updates: Map<string, DeviceUpdateEvent>;
    connections: Map<string, DeviceConnectionEvent>;
    frame: number | null;
  }>({ counts: null, updates: new Map(), connections: new Map(), frame: null });
  const shownIds = new Set(devices?.map((d) => d.identifier));
  const flush = () => {
    const waiting = pending.current;
    waiting.frame = null;
    const { counts, updates: changed, connections } = waiting;
    waiting.counts = null;
    waiting.updates = new Map();
    waiting.connections = new Map();
    if (counts !== null) {
      setGroup((shown) => {
        if (shown && shown.counts.devices !== counts.devices) reloadDevicesSoon();
        return shown ? { ...shown, counts, device_count: counts.devices } : shown;
      });
    }
    if (changed.size > 0) {
      setUpdates((known) => ({ ...known, ...Object.fromEntries(changed) }));
      // A device that came back on the new firmware shows its new version.
      if ([...changed.values()].some((event) => event.status === 'updated')) reloadDevicesSoon();
    }
    if (connections.size > 0) {
      setDevices((shown) =>
        shown === null
          ? shown
          : shown.map((device) => {
              const event = connections.get(device.identifier);
              return event
                ? {
                    ...device,
                    connection_status: event.connection_status,
                    online: event.connection_status === 'connected',
                  }
                : device;
            }),
      );
    }
  };
  const drawSoon = () => {
    pending.current.frame ??= requestAnimationFrame(flush);
  };
  useEffect(
    () => () => {
      if (pending.current.frame !== null) cancelAnimationFrame(pending.current.frame);
      pending.current.frame = null;
    },
    [],
  );

  const live = useProductEvents(org, product, {
    counts: (event) => {
      if (event.name !== name) return;
      pending.current.counts = event.counts;
      drawSoon();
    },
    update: (event) => {
      // Only the devices shown are followed: a product's other updates would grow the page's memory for nothing.
      if (!shownIds.has(event.identifier)) return;
      pending.current.updates.set(event.identifier, event);
      drawSoon();
    },
    connection: (event) => {
      if (!shownIds.has(event.identifier)) return;
      pending.current.connections.set(event.identifier, event);
      drawSoon();
    },
    opened: () => {
      void loadGroup();
      void loadDevices();
    },
  });

  const setState = async (state: 'on' | 'off') => {
    setError(null);
    setStatus(null);
    setBusy(true);
    const {
      data,
      error: failure,
      response,
    } = await api.PATCH('/api/orgs/{org_name}/products/{product_name}/deployments/{name}', {
      params: { path },
      body: { state },
    });
    setBusy(false);
    if (data) {
      setGroup(data.data);
      setStatus(state === 'on' ? 'Rollout resumed.' : 'Rollout paused.');
    } else setError(errorText(failure, response.status));
  };

  const remove = async () => {
    setBusy(true);
    const { error: failure, response } = await api.DELETE(
      '/api/orgs/{org_name}/products/{product_name}/deployments/{name}',
      { params: { path } },
    );
    setBusy(false);
    setConfirmDelete(false);
    if (response.ok) navigate(paths.list);
    else setError(errorText(failure, response.status));
  };

  const counts = group?.counts;
  const totalPages = pagination?.total_pages ?? 0;
  return (
    <>
      <h1>{product}</h1>
      <ProductNav org={org} product={product} current="deployments" />
      <p class="crumbs">
        <Link href={paths.list}>Deployment groups</Link>
      </p>
      <h2>{name}</h2>
      <ErrorAlert message={error} />
      <Status message={status} />
      {group !== null && (
        <>
          {group.paused_reason !== null && !group.is_active && (
            <p class="notice" role="note">
              <strong>Paused by fleethub</strong> {when(group.paused_at)}: {group.paused_reason}. Resume it
              once the cause is fixed.
            </p>
          )}
          <section aria-labelledby="rollout-title">
            <h3 id="rollout-title">Rollout</h3>
            <p>
              <span class={`state ${group.is_active ? 'on' : 'off'}`}>{stateText(group)}</span>
              {' — '}release {group.current_release.number}: firmware {group.current_release.firmware.version}{' '}
              ({group.platform}, {group.architecture})
            </p>
            {canManage && (
              <div class="actions">
                {group.is_active ? (
                  <button
                    type="button"
                    class="secondary"
                    disabled={busy}
                    onClick={() => void setState('off')}
                  >
                    Pause rollout
                  </button>
                ) : (
                  <button type="button" disabled={busy} onClick={() => void setState('on')}>
                    {group.paused_reason ? 'Resume rollout' : 'Turn on'}
                  </button>
                )}
                <Link href={paths.edit(name)} class="button secondary">
                  Edit group
                </Link>
                <button type="button" class="danger" disabled={busy} onClick={() => setConfirmDelete(true)}>
                  Delete group
                </button>
              </div>
            )}
            <dl class="counts" aria-label="Rollout counts">
              {COUNTS.map(({ key, label }) => (
                <div key={key}>
                  <dt>{label}</dt>
                  <dd data-count={key}>{counts![key].toLocaleString()}</dd>
                </div>
              ))}
            </dl>
            <progress
              class="rollout"
              max={Math.max(1, counts!.devices)}
              value={counts!.updated}
              aria-label="Devices on the current release"
            >
              {counts!.updated} of {counts!.devices}
            </progress>
            <p class="hint" role="status">
              {liveText(live)}
            </p>
          </section>
          <section aria-labelledby="devices-title">
            <h3 id="devices-title">Devices of the group</h3>
            {devices !== null && devices.length === 0 && <p>No device belongs to this group now.</p>}
            {devices !== null && devices.length > 0 && (
              <table class="devices">
                <caption class="visually-hidden">Devices of {name}</caption>
                <thead>
                  <tr>
                    <th scope="col">Identifier</th>
                    <th scope="col">Connection</th>
                    <th scope="col">Firmware</th>
                    <th scope="col">Update</th>
                    <th scope="col">Last seen</th>
                  </tr>
                </thead>
                <tbody>
                  {devices.map((device) => (
                    <tr key={device.identifier}>
                      <th scope="row">
                        <Link
                          href={`/orgs/${seg(org)}/products/${seg(product)}/devices/${seg(device.identifier)}`}
                        >
                          {device.identifier}
                        </Link>
                      </th>
                      <td>
                        <span class={`dot ${device.connection_status}`} aria-hidden="true" />
                        {device.connection_status.replace('_', ' ')}
                      </td>
                      <td>{device.version ?? '—'}</td>
                      <td>{updateText(updates[device.identifier])}</td>
                      <td>{when(device.last_communication)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
            {pagination !== null && totalPages > 1 && (
              <nav class="pager" aria-label="Pages of the group's devices">
                <button
                  type="button"
                  class="secondary"
                  disabled={page <= 1}
                  onClick={() => setPage(page - 1)}
                >
                  Previous page
                </button>
                <span>
                  Page {page.toLocaleString()} of {totalPages.toLocaleString()}
                </span>
                <button
                  type="button"
                  class="secondary"
                  disabled={page >= totalPages}
                  onClick={() => setPage(page + 1)}
                >
                  Next page
                </button>
              </nav>
            )}
            <p>
              <Link
                href={`/orgs/${seg(org)}/products/${seg(product)}/devices?deployment_group=${encodeURIComponent(name)}`}
              >
                These devices in the device list
              </Link>
            </p>
          </section>
          <section aria-labelledby="settings-title">
            <h3 id="settings-title">Conditions and settings</h3>
            <dl class="facts">
              <dt>Version requirement</dt>
              <dd class="mono">{group.conditions.version || 'any version'}</dd>
              <dt>Tags</dt>
              <dd>
                {group.conditions.tags.length === 0
                  ? 'any device'
                  : `${group.conditions.tags.join(', ')} (${group.conditions.tag_operator === 'and' ? 'every one' : 'at least one'})`}
              </dd>
              <dt>Updates at once</dt>
              <dd>{group.concurrent_updates}</dd>
              <dt>An update expires after</dt>
              <dd>{group.inflight_update_expiration_minutes} minutes</dd>
              <dt>Pauses after</dt>
              <dd>{group.failure_threshold} failed updates of a release</dd>
              <dt>Penalty box</dt>
              <dd>
                {group.penalty_timeout_minutes} minutes, after {group.device_failure_threshold} failures of a
                device or {group.device_failure_rate_amount} within {group.device_failure_rate_seconds} s
              </dd>
              <dt>Order</dt>
              <dd>{group.queue_management}</dd>
              <dt>Delta updates</dt>
              <dd>{group.delta_updatable ? 'yes' : 'no'}</dd>
              <dt>Membership locked</dt>
              <dd>{group.lock_device_membership ? 'yes' : 'no'}</dd>
              {group.notes !== null && (
                <>
                  <dt>Notes</dt>
                  <dd>{group.notes}</dd>
                </>
              )}
            </dl>
          </section>
          <section aria-labelledby="releases-title">
            <h3 id="releases-title">Releases</h3>
            {releases !== null && (
              <table>
                <caption class="visually-hidden">Releases of {name}, newest first</caption>
                <thead>
                  <tr>
                    <th scope="col">Release</th>
                    <th scope="col">Firmware</th>
                    <th scope="col">UUID</th>
                    <th scope="col" class="number">
                      Failed
                    </th>
                    <th scope="col">By</th>
                    <th scope="col">When</th>
                  </tr>
                </thead>
                <tbody>
                  {releases.map((release) => (
                    <tr key={release.number}>
                      <th scope="row">{release.number}</th>
                      <td>{release.firmware.version}</td>
                      <td class="mono">{release.firmware.uuid}</td>
                      <td class="number">{release.failed_count}</td>
                      <td>{release.created_by ?? '—'}</td>
                      <td>{when(release.inserted_at)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </section>
        </>
      )}
      <ConfirmDialog
        open={confirmDelete}
        title={`Delete the group ${name}?`}
        confirmLabel="Delete group"
        danger
        busy={busy}
        onConfirm={() => void remove()}
        onCancel={() => setConfirmDelete(false)}
      >
        <p>
          Its releases and the updates it has in flight go with it; its{' '}
          {counts?.devices.toLocaleString() ?? 0} devices join their best other match.
        </p>
      </ConfirmDialog>
    </>
  );
}
