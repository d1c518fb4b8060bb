import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../api/client';
import type { components } from '../api/schema';
import { ErrorAlert, Status } from '../components/alert';
import { DeviceConsole } from '../components/device-console';
import { DeviceHealth } from '../components/device-health';
import { DeviceIdentities } from '../components/device-identities';
import { DeviceLogs } from '../components/device-logs';
import { DeviceMove } from '../components/device-move';
import { DeviceUpdate } from '../components/device-update';
import { Link } from '../components/link';
import { LiveBadge } from '../components/live-badge';
import { useLiveEvent, useLiveStream } from '../live';
import { navigate, seg } from '../router';
import { allows, type Role } from '../session';

type Device = components['schemas']['DeviceView'];
type Extensions = components['schemas']['ExtensionSettingsView'];

const when = (timestamp: string | null) =>
  timestamp === null ? 'never' : new Date(timestamp).toLocaleString();

/**
 * One device: who it is, what it runs, how it is connected (live), its update as it goes, its console, logs,
 * health, location, network identities and certificates; its description, tags, opt-outs and actions (for a
 * manage member: reboot, reconnect, automatic updates on or off, penalty box clear, upgrade, move, delete). One
 * event stream (the product's, with this device's console and logs) feeds every live part.
 */
export function DevicePage(props: {
  org: string;
  product: string;
  identifier: string;
  role: Role | undefined;
}) {
  const { org, product, identifier } = props;
  const path = { org_name: org, product_name: product, identifier };
  const canManage = allows(props.role, 'manage');
  const list = `/orgs/${seg(org)}/products/${seg(product)}/devices`;
  const [device, setDevice] = useState<Device | null>(null);
  const [extensions, setExtensions] = useState<Extensions | null>(null);
  const [description, setDescription] = useState('');
  const [tags, setTags] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [status, setStatus] = useState<string | null>(null);
  const { live, state, reopened } = useLiveStream(org, product, identifier);

  useLiveEvent(live, 'device.connection', (change) => {
    if (change.identifier !== identifier) return;
    setDevice((shown) =>
      shown === null
        ? null
        : {
            ...shown,
            connection_status: change.connection_status,
            online: change.connection_status === 'connected',
            last_communication: change.at,
          },
    );
  });
  // The device reports its new firmware when it comes back from an update: read it again.
  useLiveEvent(live, 'device.update', (update) => {
    if (update.identifier === identifier && update.status === 'updated') reload();
  });

  const reload = () => {
    void api
      .GET('/api/orgs/{org_name}/products/{product_name}/devices/{identifier}', { params: { path } })
      .then(({ data }) => {
        if (data) setDevice(data.data);
      });
  };

  const show = (shown: Device) => {
    setDevice(shown);
    setDescription(shown.description ?? '');
    setTags(shown.tags);
  };

  useEffect(() => {
    setDevice(null);
    setError(null);
    let newest = true;
    void Promise.all([
      api.GET('/api/orgs/{org_name}/products/{product_name}/devices/{identifier}', { params: { path } }),
      api.GET('/api/orgs/{org_name}/products/{product_name}/devices/{identifier}/extensions', {
        params: { path },
      }),
    ]).then(([shown, optOuts]) => {
      if (!newest) return;
      if (shown.data) show(shown.data.data);
      else setError(errorText(shown.error, shown.response.status));
      if (optOuts.data) setExtensions(optOuts.data.data);
    });
    return () => {
      newest = false;
    };
  }, [org, product, identifier, reopened]);

  const save = async (event: Event) => {
    event.preventDefault();
    setError(null);
    setStatus(null);
    const {
      data,
      error: failure,
      response,
    } = await api.PATCH('/api/orgs/{org_name}/products/{product_name}/devices/{identifier}', {
      params: { path },
      body: { description: description.trim() === '' ? null : description, tags },
    });
    if (data) {
      show(data.data);
      setStatus('Device saved.');
    } else setError(errorText(failure, response.status));
  };

  const saveExtensions = async (event: Event) => {
    event.preventDefault();
    if (!extensions) return;
    setError(null);
    setStatus(null);
    const {
      data,
      error: failure,
      response,
    } = await api.PATCH('/api/orgs/{org_name}/products/{product_name}/devices/{identifier}/extensions', {
      params: { path },
      body: extensions,
    });
    if (data) {
      setExtensions(data.data);
      setStatus('Extensions saved. They apply when the device next connects.');
    } else setError(errorText(failure, response.status));
  };

  const act = async (action: 'reboot' | 'reconnect', done: string) => {
    setError(null);
    setStatus(null);
    const { error: failure, response } =
      action === 'reboot'
        ? await api.POST('/api/orgs/{org_name}/products/{product_name}/devices/{identifier}/reboot', {
            params: { path },
          })
        : await api.POST('/api/orgs/{org_name}/products/{product_name}/devices/{identifier}/reconnect', {
            params: { path },
          });
    if (response.ok) setStatus(done);
    else setError(errorText(failure, response.status));
  };

  /** Out of the penalty box (`DELETE .../penalty`): no block, update attempts forgotten, automatic updates on. */
  const clearPenalty = async () => {
    setError(null);
    setStatus(null);
    const { error: failure, response } = await api.DELETE(
      '/api/orgs/{org_name}/products/{product_name}/devices/{identifier}/penalty',
      { params: { path } },
    );
    if (response.ok) {
      setStatus('Penalty box cleared: automatic updates are on.');
      reload();
    } else setError(errorText(failure, response.status));
  };

  const setUpdates = async (enabled: boolean) => {
    setError(null);
    setStatus(null);
    const {
      data,
      error: failure,
      response,
    } = await api.PATCH('/api/orgs/{org_name}/products/{product_name}/devices/{identifier}', {
      params: { path },
      body: { updates_enabled: enabled },
    });
    if (data) {
      setDevice(data.data);
      setStatus(enabled ? 'Automatic updates turned on.' : 'Automatic updates turned off.');
    } else setError(errorText(failure, response.status));
  };

  const remove = async () => {
    if (!window.confirm(`Delete the device ${identifier}? Its history goes with it.`)) return;
    const { error: failure, response } = await api.DELETE(
      '/api/orgs/{org_name}/products/{product_name}/devices/{identifier}',
      { params: { path } },
    );
    if (response.ok) navigate(list);
    else setError(errorText(failure, response.status));
  };

  return (
    <>
      <p class="crumbs">
        <Link href={list}>{product} devices</Link>
      </p>
      <h1>{identifier}</h1>
      <LiveBadge state={state} />
      <ErrorAlert message={error} />
      <Status message={status} />
      {device !== null && (
        <>
          <dl class="facts">
            <dt>Connection</dt>
            <dd id="device-connection" data-connection={device.connection_status}>
              <span class={`dot ${device.connection_status}`} aria-hidden="true" />
              {device.connection_status.replace('_', ' ')}
            </dd>
            <dt>Last seen</dt>
            <dd>{when(device.last_communication)}</dd>
            <dt>Firmware</dt>
            <dd>
              {device.version ?? 'not reported'}
              {device.firmware_metadata &&
                ` (${device.firmware_metadata.platform}, ${device.firmware_metadata.architecture})`}
            </dd>
            <dt>Firmware UUID</dt>
            <dd class="mono">{device.firmware_metadata?.uuid ?? '—'}</dd>
            <dt>Deployment group</dt>
            <dd>{device.deployment_group?.name ?? 'none'}</dd>
            <dt>Automatic updates</dt>
            <dd>
              {device.updates_enabled ? 'on' : 'off'}
              {device.updates_blocked_until !== null &&
                ` (penalty box until ${when(device.updates_blocked_until)})`}
            </dd>
          </dl>
          {canManage && (
            <div class="actions">
              <button type="button" class="secondary" onClick={() => void act('reboot', 'Reboot sent.')}>
                Reboot
              </button>
              <button
                type="button"
                class="secondary"
                onClick={() => void act('reconnect', 'Reconnect sent.')}
              >
                Reconnect
              </button>
              <button
                type="button"
                class="secondary"
                onClick={() => void setUpdates(!device.updates_enabled)}
              >
                {device.updates_enabled ? 'Turn automatic updates off' : 'Turn automatic updates on'}
              </button>
              {device.updates_blocked_until !== null && (
                <button type="button" class="secondary" onClick={() => void clearPenalty()}>
                  Clear penalty box
                </button>
              )}
              <button type="button" class="danger" onClick={() => void remove()}>
                Delete device
              </button>
            </div>
          )}
          <DeviceUpdate
            org={org}
            product={product}
            identifier={identifier}
            live={live}
            canManage={canManage}
          />
          <DeviceConsole
            org={org}
            product={product}
            identifier={identifier}
            live={live}
            canType={canManage}
          />
          <DeviceLogs org={org} product={product} identifier={identifier} live={live} reopened={reopened} />
          <DeviceHealth org={org} product={product} identifier={identifier} />
          <DeviceIdentities org={org} product={product} identifier={identifier} />
          {canManage && <DeviceMove org={org} product={product} identifier={identifier} />}
          <form onSubmit={(event) => void save(event)}>
            <fieldset disabled={!canManage}>
              <legend>Description and tags</legend>
              <label for="device-description">Description</label>
              <input
                id="device-description"
                maxLength={1024}
                value={description}
                onInput={(event) => setDescription(event.currentTarget.value)}
              />
              <label for="device-tags">Tags (comma-separated)</label>
              <input id="device-tags" value={tags} onInput={(event) => setTags(event.currentTarget.value)} />
              {canManage && <button type="submit">Save device</button>}
            </fieldset>
          </form>
        </>
      )}
      {extensions !== null && (
        <form onSubmit={(event) => void saveExtensions(event)}>
          <fieldset disabled={!canManage}>
            <legend>Extensions this device allows</legend>
            <p class="hint">Unchecked: the device opts out even where its product enables the extension.</p>
            {(Object.keys(extensions) as (keyof Extensions)[]).map((key) => (
              <label key={key} class="check">
                <input
                  type="checkbox"
                  checked={extensions[key]}
                  onChange={(event) => setExtensions({ ...extensions, [key]: event.currentTarget.checked })}
                />
                {key.replace('_', ' ')}
              </label>
            ))}
            {canManage && <button type="submit">Save extensions</button>}
          </fieldset>
        </form>
      )}
    </>
  );
}
