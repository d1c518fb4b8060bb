import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../api/client';
import type { components } from '../api/schema';
import { type LiveData, type LiveStream, useLiveEvent } from '../live';
import { ErrorAlert, Status } from './alert';

type Firmware = components['schemas']['FirmwareView'];
type Update = LiveData<'device.update'>;

const STATUS_TEXT: Record<Update['status'], string> = {
  pending: 'Update sent, waiting for the device',
  updating: 'Updating',
  updated: 'Updated',
  failed: 'Update failed',
};

/**
 * The device's update as it happens (`device.update` events: pending, updating with the device's percentage,
 * updated, failed), and for a manage member the firmware to push to it.
 */
export function DeviceUpdate(props: {
  org: string;
  product: string;
  identifier: string;
  live: LiveStream | null;
  canManage: boolean;
}) {
  const { org, product, identifier, canManage } = props;
  const [update, setUpdate] = useState<Update | null>(null);
  const [firmwares, setFirmwares] = useState<Firmware[] | null>(null);
  const [choice, setChoice] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [status, setStatus] = useState<string | null>(null);

  useEffect(() => {
    setUpdate(null);
    if (!canManage) return;
    let newest = true;
    void api
      .GET('/api/orgs/{org_name}/products/{product_name}/firmwares', {
        params: { path: { org_name: org, product_name: product } },
      })
      .then(({ data }) => {
        if (!newest || !data) return;
        setFirmwares(data.data);
        setChoice(data.data[0]?.uuid ?? '');
      });
    return () => {
      newest = false;
    };
  }, [org, product, identifier, canManage]);

  useLiveEvent(props.live, 'device.update', (event) => {
    if (event.identifier !== identifier) return;
    // A report without a percentage keeps the last one shown.
    setUpdate((shown) => ({
      ...event,
      progress: event.progress ?? (event.status === 'updating' ? (shown?.progress ?? null) : null),
    }));
  });

  const push = async (event: Event) => {
    event.preventDefault();
    setError(null);
    setStatus(null);
    const { error: failure, response } = await api.POST(
      '/api/orgs/{org_name}/products/{product_name}/devices/{identifier}/upgrade',
      { params: { path: { org_name: org, product_name: product, identifier } }, body: { uuid: choice } },
    );
    if (response.ok) setStatus('Update requested.');
    else setError(errorText(failure, response.status));
  };

  const version = (uuid: string | null) => firmwares?.find((f) => f.uuid === uuid)?.version;
  return (
    <section aria-labelledby="update-heading">
      <h2 id="update-heading">Firmware update</h2>
      {update === null ? (
        <p class="hint">No update in progress since this page opened.</p>
      ) : (
        <div class={`update ${update.status}`}>
          <p id="update-status">
            {STATUS_TEXT[update.status]}
            {update.status === 'updating' && update.progress !== null && `: ${update.progress} %`}
            {update.firmware_uuid !== null &&
              ` (firmware ${version(update.firmware_uuid) ?? update.firmware_uuid})`}
          </p>
          <progress
            aria-labelledby="update-status"
            max={100}
            value={update.status === 'updated' ? 100 : (update.progress ?? undefined)}
          />
        </div>
      )}
      {canManage && firmwares !== null && (
        <form class="inline" onSubmit={(event) => void push(event)}>
          <label for="update-firmware">Firmware</label>
          <select id="update-firmware" value={choice} onChange={(e) => setChoice(e.currentTarget.value)}>
            {firmwares.map((firmware) => (
              <option key={firmware.uuid} value={firmware.uuid}>
                {firmware.version} ({firmware.platform}, {firmware.architecture})
              </option>
            ))}
          </select>
          <button type="submit" disabled={choice === ''}>
            Push update
          </button>
        </form>
      )}
      {canManage && firmwares !== null && firmwares.length === 0 && (
        <p class="hint">The product has no firmware to push yet.</p>
      )}
      <ErrorAlert message={error} />
      <Status message={status} />
    </section>
  );
}
