import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../api/client';
import type { components } from '../api/schema';
import { ErrorAlert } from '../components/alert';
import { ConfirmDialog } from '../components/confirm-dialog';
import { MoveTargetFields, useMoveTarget } from '../components/move-target';

type Firmware = components['schemas']['FirmwareView'];
type BulkAction = components['schemas']['BulkDevicesDto']['action'];
type BulkResult = components['schemas']['BulkDevicesResultView'];

/** Devices named by identifier (a selection of rows), or every device matching the list's filters. */
export type Selection = { identifiers: string[] } | { filters: Record<string, string>; count: number };

const ACTIONS: { value: BulkAction; label: string }[] = [
  { value: 'add_tags', label: 'Add tags' },
  { value: 'remove_tags', label: 'Remove tags' },
  { value: 'upgrade', label: 'Upgrade to a firmware' },
  { value: 'enable_updates', label: 'Turn automatic updates on' },
  { value: 'disable_updates', label: 'Turn automatic updates off' },
  { value: 'clear_penalty_box', label: 'Take out of the penalty box' },
  { value: 'move', label: 'Move to another product' },
];

const tagList = (text: string) =>
  text
    .split(',')
    .map((tag) => tag.trim())
    .filter((tag) => tag !== '');

/** What the confirmation asks, for `count` devices. */
function question(
  action: BulkAction,
  devices: string,
  params: { tags: string; firmware: string; target: string },
) {
  const tags = tagList(params.tags).join(', ');
  switch (action) {
    case 'add_tags':
      return `Add the tags ${tags} to ${devices}?`;
    case 'remove_tags':
      return `Remove the tags ${tags} from ${devices}?`;
    case 'upgrade':
      return `Upgrade ${devices} to firmware ${params.firmware}? Their automatic updates are turned off, as for one device upgraded by hand.`;
    case 'enable_updates':
      return `Turn automatic updates on for ${devices}?`;
    case 'disable_updates':
      return `Turn automatic updates off for ${devices}?`;
    case 'clear_penalty_box':
      return `Take ${devices} out of the penalty box? Their automatic updates are turned on.`;
    case 'move':
      return `Move ${devices} to ${params.target}? They leave their deployment group and reconnect under the new product.`;
  }
}

/** What happened, in words, from the server's answer. */
function outcome(
  action: BulkAction,
  result: BulkResult,
  params: { firmware: string; target: string },
): string {
  const of = `${result.changed.toLocaleString()} of ${result.matched.toLocaleString()} device${result.matched === 1 ? '' : 's'}`;
  const devices = `${result.changed.toLocaleString()} device${result.changed === 1 ? '' : 's'}`;
  switch (action) {
    case 'add_tags':
      return `Tags added to ${of}; the others had them already.`;
    case 'remove_tags':
      return `Tags removed from ${of}; the others did not carry them.`;
    case 'upgrade':
      return `${devices} will be upgraded to firmware ${params.firmware}; connected ones get it now.`;
    case 'enable_updates':
      return `Automatic updates turned on for ${of}.`;
    case 'disable_updates':
      return `Automatic updates turned off for ${of}.`;
    case 'clear_penalty_box':
      return `${of} taken out of the penalty box.`;
    case 'move':
      return `${devices} moved to ${params.target}.`;
  }
}

/**
 * The bulk actions on the selected devices: the action and what it needs, then a confirmation that says how many
 * devices it touches (for a whole filter, as the server counts them when asked), then the server's own count of
 * what changed.
 */
export function BulkActions(props: {
  org: string;
  product: string;
  selection: Selection;
  onDone: (message: string) => void;
}) {
  const { org, product, selection } = props;
  const path = { org_name: org, product_name: product };
  const [action, setAction] = useState<BulkAction>('add_tags');
  const [tags, setTags] = useState('');
  const [uuid, setUuid] = useState('');
  const [firmware, setFirmware] = useState<Firmware[] | null>(null);
  const target = useMoveTarget(org, product, action === 'move');
  const { targetOrg, targetProduct } = target;
  const [confirm, setConfirm] = useState<{ count: number } | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    if (action === 'upgrade' && firmware === null) {
      void api
        .GET('/api/orgs/{org_name}/products/{product_name}/firmwares', { params: { path } })
        .then(({ data }) => setFirmware(data ? data.data : []));
    }
  }, [action]);
  const firmwareLabel = firmware?.find((f) => f.uuid === uuid)?.version ?? uuid;
  const params = { tags, firmware: firmwareLabel, target: `${targetOrg} / ${targetProduct}` };

  /** How many devices the action touches: the rows chosen, or the server's count of the filter's devices now. */
  const prepare = async (event: Event) => {
    event.preventDefault();
    setError(null);
    if ('identifiers' in selection) {
      setConfirm({ count: selection.identifiers.length });
      return;
    }
    const query: Record<string, string | number> = { 'pagination[page_size]': 1 };
    for (const [name, value] of Object.entries(selection.filters)) query[`filters[${name}]`] = value;
    const {
      data,
      error: failure,
      response,
    } = await api.GET('/api/orgs/{org_name}/products/{product_name}/devices', {
      params: { path, query },
    });
    if (data?.pagination) setConfirm({ count: data.pagination.total_entries });
    else setError(errorText(failure, response.status));
  };

  const apply = async () => {
    setBusy(true);
    setError(null);
    const {
      data,
      error: failure,
      response,
    } = await api.POST('/api/orgs/{org_name}/products/{product_name}/devices/bulk', {
      params: { path },
      body: {
        action,
        ...('identifiers' in selection
          ? { identifiers: selection.identifiers }
          : { filters: selection.filters }),
        ...(action === 'add_tags' || action === 'remove_tags' ? { tags } : {}),
        ...(action === 'upgrade' ? { uuid } : {}),
        ...(action === 'move' ? { new_org_name: targetOrg, new_product_name: targetProduct } : {}),
      },
    });
    setBusy(false);
    setConfirm(null);
    if (data) props.onDone(outcome(action, data.data, params));
    else setError(errorText(failure, response.status));
  };

  const count = 'identifiers' in selection ? selection.identifiers.length : selection.count;
  const devices = (n: number) =>
    'identifiers' in selection
      ? `the ${n.toLocaleString()} selected device${n === 1 ? '' : 's'}`
      : `all ${n.toLocaleString()} device${n === 1 ? '' : 's'} matching this filter`;
  return (
    <form class="bulk" aria-label="Change the selected devices" onSubmit={(event) => void prepare(event)}>
      <span class="selected-count">
        {count.toLocaleString()} device{count === 1 ? '' : 's'} selected
      </span>
      <label for="bulk-action">Action</label>
      <select
        id="bulk-action"
        value={action}
        onChange={(e) => setAction(e.currentTarget.value as BulkAction)}
      >
        {ACTIONS.map(({ value, label }) => (
          <option key={value} value={value}>
            {label}
          </option>
        ))}
      </select>
      {(action === 'add_tags' || action === 'remove_tags') && (
        <>
          <label for="bulk-tags">Tags (comma-separated)</label>
          <input id="bulk-tags" value={tags} onInput={(e) => setTags(e.currentTarget.value)} />
        </>
      )}
      {action === 'upgrade' && (
        <>
          <label for="bulk-firmware">Firmware</label>
          <select id="bulk-firmware" value={uuid} onChange={(e) => setUuid(e.currentTarget.value)}>
            <option value="">choose a firmware</option>
            {(firmware ?? []).map((f) => (
              <option key={f.uuid} value={f.uuid}>
                {f.version} ({f.platform}, {f.architecture})
              </option>
            ))}
          </select>
        </>
      )}
      {action === 'move' && (
        <>
          <MoveTargetFields idPrefix="bulk" target={target} />
        </>
      )}
      <button type="submit">Apply…</button>
      <ErrorAlert message={error} />
      <ConfirmDialog
        open={confirm !== null}
        title={`${ACTIONS.find((a) => a.value === action)?.label ?? action}: ${(confirm?.count ?? 0).toLocaleString()} device${confirm?.count === 1 ? '' : 's'}`}
        confirmLabel={`Change ${(confirm?.count ?? 0).toLocaleString()} device${confirm?.count === 1 ? '' : 's'}`}
        danger={action === 'move'}
        busy={busy}
        onConfirm={() => void apply()}
        onCancel={() => setConfirm(null)}
      >
        <p>{question(action, devices(confirm?.count ?? 0), params)}</p>
        {!('identifiers' in selection) && (
          <p class="hint">
            Counted by the server just now. Devices that start or stop matching the filter while the change
            runs may be left out; a million devices take a few minutes.
          </p>
        )}
      </ConfirmDialog>
    </form>
  );
}
