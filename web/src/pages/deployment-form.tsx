import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../api/client';
import type { components } from '../api/schema';
import { ErrorAlert } from '../components/alert';
import { Link } from '../components/link';
import { ProductNav } from '../components/product-nav';
import { navigate } from '../router';
import { allows, type Role } from '../session';
import { type DeploymentGroup, deploymentPaths } from './deployments';

type Firmware = components['schemas']['FirmwareView'];

/** The rollout settings a group has, as the form's text fields hold them (NervesHub's defaults for a new one). */
const NUMBERS = [
  {
    key: 'concurrent_updates',
    label: 'Updates at once',
    hint: 'How many devices update at the same time',
    fallback: 10,
  },
  {
    key: 'inflight_update_expiration_minutes',
    label: 'An update expires after (minutes)',
    hint: 'An update in flight that long counts as failed',
    fallback: 60,
  },
  {
    key: 'failure_threshold',
    label: 'Pause after this many failed updates',
    hint: 'Failed updates of the current release that pause the group',
    fallback: 50,
  },
  {
    key: 'device_failure_threshold',
    label: 'Device failures before the penalty box',
    hint: "A device's failed attempts in all",
    fallback: 3,
  },
  {
    key: 'device_failure_rate_amount',
    label: 'Device failures within the window',
    hint: 'Failed attempts within the window below that block a device',
    fallback: 5,
  },
  {
    key: 'device_failure_rate_seconds',
    label: 'Window of device failures (seconds)',
    hint: 'At least 60',
    fallback: 180,
  },
  {
    key: 'penalty_timeout_minutes',
    label: 'Penalty box (minutes)',
    hint: 'How long a failing device waits; at least 60',
    fallback: 1440,
  },
] as const;
type NumberKey = (typeof NUMBERS)[number]['key'];

interface Draft {
  name: string;
  firmware: string;
  version: string;
  tags: string;
  tag_operator: 'and' | 'or';
  is_active: boolean;
  delta_updatable: boolean;
  lock_device_membership: boolean;
  queue_management: 'FIFO' | 'LIFO';
  notes: string;
  numbers: Record<NumberKey, string>;
}

const EMPTY: Draft = {
  name: '',
  firmware: '',
  version: '',
  tags: '',
  tag_operator: 'and',
  is_active: false,
  delta_updatable: true,
  lock_device_membership: false,
  queue_management: 'FIFO',
  notes: '',
  numbers: Object.fromEntries(NUMBERS.map(({ key, fallback }) => [key, String(fallback)])) as Record<
    NumberKey,
    string
  >,
};

function draftOf(group: DeploymentGroup): Draft {
  return {
    name: group.name,
    firmware: group.firmware_uuid,
    version: group.conditions.version,
    tags: group.conditions.tags.join(', '),
    tag_operator: group.conditions.tag_operator,
    is_active: group.is_active,
    delta_updatable: group.delta_updatable,
    lock_device_membership: group.lock_device_membership,
    queue_management: group.queue_management,
    notes: group.notes ?? '',
    numbers: Object.fromEntries(NUMBERS.map(({ key }) => [key, String(group[key])])) as Record<
      NumberKey,
      string
    >,
  };
}

/** The 422 body's messages by field (`{"errors": {field: [messages]}}`), or none. */
function fieldErrors(body: unknown): Record<string, string[]> {
  const errors = (body as { errors?: unknown } | null)?.errors;
  if (typeof errors !== 'object' || errors === null) return {};
  const fields: Record<string, string[]> = {};
  for (const [field, messages] of Object.entries(errors as Record<string, unknown>)) {
    if (field !== 'detail' && Array.isArray(messages)) fields[field] = messages.map(String);
  }
  return fields;
}

/** A labelled field with its hint and the server's complaint about it, tied to the control. */
function Field(props: {
  id: string;
  label: string;
  hint?: string;
  errors?: string[];
  children: (described: { 'aria-describedby'?: string; 'aria-invalid'?: boolean }) => ComponentChildren;
}) {
  const described = [props.hint ? `${props.id}-hint` : '', props.errors ? `${props.id}-error` : '']
    .filter(Boolean)
    .join(' ');
  return (
    <div class="field">
      <label for={props.id}>{props.label}</label>
      {props.children({
        'aria-describedby': described || undefined,
        'aria-invalid': props.errors ? true : undefined,
      })}
      {props.hint && (
        <span id={`${props.id}-hint`} class="hint">
          {props.hint}
        </span>
      )}
      {props.errors && (
        <span id={`${props.id}-error`} class="field-error">
          {props.errors.join('; ')}
        </span>
      )}
    </div>
  );
}

/**
 * A deployment group's form: a new group (`name` undefined) or the group `name`'s settings. What the server
 * refuses is shown beside each field in its words; a manage member only (the server refuses others anyway).
 */
export function DeploymentForm(props: {
  org: string;
  product: string;
  name?: string;
  role: Role | undefined;
}) {
  const { org, product, name } = props;
  const paths = deploymentPaths(org, product);
  const path = { org_name: org, product_name: product };
  const [draft, setDraft] = useState<Draft | null>(name === undefined ? EMPTY : null);
  const [original, setOriginal] = useState<DeploymentGroup | null>(null);
  const [firmware, setFirmware] = useState<Firmware[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [errors, setErrors] = useState<Record<string, string[]>>({});
  const [saving, setSaving] = useState(false);

  useEffect(() => {
    let newest = true;
    setError(null);
    setErrors({});
    void api
      .GET('/api/orgs/{org_name}/products/{product_name}/firmwares', { params: { path } })
      .then(({ data }) => newest && setFirmware(data ? data.data : []));
    if (name !== undefined) {
      setDraft(null);
      void api
        .GET('/api/orgs/{org_name}/products/{product_name}/deployments/{name}', {
          params: { path: { ...path, name } },
        })
        .then(({ data, error: failure, response }) => {
          if (!newest) return;
          if (data) {
            setOriginal(data.data);
            setDraft(draftOf(data.data));
          } else setError(errorText(failure, response.status));
        });
    } else setDraft(EMPTY);
    return () => {
      newest = false;
    };
  }, [org, product, name]);

  if (!allows(props.role, 'manage')) {
    return (
      <>
        <h1>{product}</h1>
        <p>Creating and changing deployment groups needs the manage role.</p>
      </>
    );
  }

  const change = (changes: Partial<Draft>) =>
    setDraft((current) => (current ? { ...current, ...changes } : current));
  const setNumber = (key: NumberKey, value: string) =>
    setDraft((current) =>
      current ? { ...current, numbers: { ...current.numbers, [key]: value } } : current,
    );

  const submit = async (event: Event) => {
    event.preventDefault();
    if (!draft) return;
    setSaving(true);
    setError(null);
    setErrors({});
    const numbers: Partial<Record<NumberKey, number>> = {};
    for (const { key } of NUMBERS) {
      const text = draft.numbers[key].trim();
      // An empty field is left out: the default for a new group, unchanged for an existing one.
      if (text !== '') numbers[key] = Number(text);
    }
    const settings = {
      name: draft.name,
      conditions: {
        version: draft.version.trim(),
        tags: draft.tags
          .split(',')
          .map((tag) => tag.trim())
          .filter((tag) => tag !== ''),
        tag_operator: draft.tag_operator,
      },
      is_active: draft.is_active,
      delta_updatable: draft.delta_updatable,
      lock_device_membership: draft.lock_device_membership,
      queue_management: draft.queue_management,
      notes: draft.notes.trim() === '' ? null : draft.notes,
      ...numbers,
    };
    const result =
      name === undefined
        ? await api.POST('/api/orgs/{org_name}/products/{product_name}/deployments', {
            params: { path },
            body: { ...settings, firmware: draft.firmware },
          })
        : await api.PATCH('/api/orgs/{org_name}/products/{product_name}/deployments/{name}', {
            params: { path: { ...path, name } },
            // The firmware only when it changed: each change is a new release.
            body:
              draft.firmware !== original?.firmware_uuid
                ? { ...settings, firmware: draft.firmware }
                : settings,
          });
    setSaving(false);
    if (result.data) {
      navigate(paths.group(result.data.data.name));
      return;
    }
    setErrors(fieldErrors(result.error));
    setError(`The group was not saved. ${errorText(result.error, result.response.status)}`);
  };

  const title = name === undefined ? 'New deployment group' : `Edit ${name}`;
  // A later release must run on the group's platform and architecture: only those are offered.
  const choices =
    firmware === null
      ? []
      : original === null
        ? firmware
        : firmware.filter(
            (f) => f.platform === original.platform && f.architecture === original.architecture,
          );
  return (
    <>
      <h1>{product}</h1>
      <ProductNav org={org} product={product} current="deployments" />
      <p class="crumbs">
        <Link href={paths.list}>Deployment groups</Link>
        {name !== undefined && (
          <>
            {' › '}
            <Link href={paths.group(name)}>{name}</Link>
          </>
        )}
      </p>
      <h2>{title}</h2>
      <ErrorAlert message={error} />
      {firmware !== null && firmware.length === 0 && name === undefined && (
        <p>
          Upload a firmware first: a group rolls one out.{' '}
          <Link href={`/orgs/${encodeURIComponent(org)}/products/${encodeURIComponent(product)}/firmware`}>
            Go to the firmware
          </Link>
        </p>
      )}
      {draft !== null && (
        <form class="group-form" noValidate onSubmit={(event) => void submit(event)} aria-label={title}>
          <fieldset>
            <legend>Group</legend>
            <Field id="group-name" label="Name" errors={errors.name}>
              {(described) => (
                <input
                  id="group-name"
                  maxLength={255}
                  value={draft.name}
                  onInput={(e) => change({ name: e.currentTarget.value })}
                  {...described}
                />
              )}
            </Field>
            <Field
              id="group-firmware"
              label="Firmware"
              hint={
                name === undefined
                  ? 'Devices of the group are updated to it'
                  : 'Another firmware makes a new release, rolled out to the group'
              }
              errors={errors.firmware}
            >
              {(described) => (
                <select
                  id="group-firmware"
                  value={draft.firmware}
                  onChange={(e) => change({ firmware: e.currentTarget.value })}
                  {...described}
                >
                  <option value="">choose a firmware</option>
                  {choices.map((f) => (
                    <option key={f.uuid} value={f.uuid}>
                      {f.version} ({f.platform}, {f.architecture}) {f.uuid.slice(0, 8)}
                    </option>
                  ))}
                </select>
              )}
            </Field>
            <label class="check">
              <input
                type="checkbox"
                checked={draft.is_active}
                onChange={(e) => change({ is_active: e.currentTarget.checked })}
              />
              On: roll the firmware out to the group's devices
            </label>
            {errors.is_active && <span class="field-error">{errors.is_active.join('; ')}</span>}
            <Field id="group-notes" label="Notes" errors={errors.notes}>
              {(described) => (
                <textarea
                  id="group-notes"
                  rows={2}
                  value={draft.notes}
                  onInput={(e) => change({ notes: e.currentTarget.value })}
                  {...described}
                />
              )}
            </Field>
          </fieldset>
          <fieldset>
            <legend>Which devices</legend>
            <p class="hint">
              A device of the product without a group joins the best matching group that is on, when it
              connects or its tags change.
            </p>
            <Field
              id="group-version"
              label="Version requirement"
              hint="An Elixir requirement such as ~> 1.2 or >= 1.0.0 and < 2.0.0; empty: every version"
              errors={errors['conditions.version'] ?? errors.conditions}
            >
              {(described) => (
                <input
                  id="group-version"
                  class="mono"
                  value={draft.version}
                  onInput={(e) => change({ version: e.currentTarget.value })}
                  {...described}
                />
              )}
            </Field>
            <Field
              id="group-tags"
              label="Tags"
              hint="Comma-separated; empty: every device"
              errors={errors['conditions.tags']}
            >
              {(described) => (
                <input
                  id="group-tags"
                  value={draft.tags}
                  onInput={(e) => change({ tags: e.currentTarget.value })}
                  {...described}
                />
              )}
            </Field>
            <Field id="group-tag-operator" label="Tag matching" errors={errors['conditions.tag_operator']}>
              {(described) => (
                <select
                  id="group-tag-operator"
                  value={draft.tag_operator}
                  onChange={(e) => change({ tag_operator: e.currentTarget.value as 'and' | 'or' })}
                  {...described}
                >
                  <option value="and">a device carries every tag</option>
                  <option value="or">a device carries at least one tag</option>
                </select>
              )}
            </Field>
            <label class="check">
              <input
                type="checkbox"
                checked={draft.lock_device_membership}
                onChange={(e) => change({ lock_device_membership: e.currentTarget.checked })}
              />
              Lock membership: devices stay whatever their conditions, none joins automatically
            </label>
          </fieldset>
          <fieldset>
            <legend>Rollout</legend>
            {NUMBERS.map(({ key, label, hint }) => (
              <Field key={key} id={`group-${key}`} label={label} hint={hint} errors={errors[key]}>
                {(described) => (
                  <input
                    id={`group-${key}`}
                    type="number"
                    inputMode="numeric"
                    value={draft.numbers[key]}
                    onInput={(e) => setNumber(key, e.currentTarget.value)}
                    {...described}
                  />
                )}
              </Field>
            ))}
            <Field id="group-queue" label="Order" errors={errors.queue_management}>
              {(described) => (
                <select
                  id="group-queue"
                  value={draft.queue_management}
                  onChange={(e) => change({ queue_management: e.currentTarget.value as 'FIFO' | 'LIFO' })}
                  {...described}
                >
                  <option value="FIFO">first connected, first updated (FIFO)</option>
                  <option value="LIFO">last connected, first updated (LIFO)</option>
                </select>
              )}
            </Field>
            <label class="check">
              <input
                type="checkbox"
                checked={draft.delta_updatable}
                onChange={(e) => change({ delta_updatable: e.currentTarget.checked })}
              />
              Delta updates
            </label>
          </fieldset>
          <div class="actions">
            <button type="submit" disabled={saving}>
              {name === undefined ? 'Create group' : 'Save group'}
            </button>
            <Link href={name === undefined ? paths.list : paths.group(name)} class="button secondary">
              Cancel
            </Link>
          </div>
        </form>
      )}
    </>
  );
}
