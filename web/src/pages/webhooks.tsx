import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, errorText } from '../api/client';
import type { components } from '../api/schema';
import { ActionsHeader } from '../components/actions-header';
import { ErrorAlert, Status } from '../components/alert';
import { ConfirmDialog } from '../components/confirm-dialog';
import { Link } from '../components/link';
import { navigate, seg } from '../router';
import { allows, type Role } from '../session';

type Webhook = components['schemas']['WebhookView'];
type EventType = components['schemas']['WebhookEventTypeView'];
type Attempt = components['schemas']['WebhookAttemptView'];
type Pagination = components['schemas']['PaginationView'];

/** The form's fields as the API names them in its 422s, in the form's words. */
const FIELD_LABELS: Record<string, string> = {
  url: 'URL',
  event_types: 'Events',
  product: 'Product',
  rate_limit_per_second: 'Deliveries per second',
  event_id: 'Event',
};

/** Sent by the test button to one webhook; never subscribed to. */
const TEST_EVENT = 'webhook.test';
const ALL_EVENTS = '*';
const DELIVERIES_PAGE_SIZE = 25;
/** After a test event or a redelivery, the log is read again this much later (the dispatcher polls). */
const LOG_RELOAD_MS = 1500;

const when = (timestamp: string | null) => (timestamp === null ? '' : new Date(timestamp).toLocaleString());
const webhookPath = (org: string, id: string) => `/orgs/${seg(org)}/webhooks/${seg(id)}`;

/** "every event", "every device event", or the types, as a person reads a subscription. */
function describeEvents(eventTypes: string[]): string {
  return eventTypes
    .map((pattern) =>
      pattern === ALL_EVENTS
        ? 'every event'
        : pattern.endsWith('.*')
          ? `every ${pattern.slice(0, -2).replaceAll('_', ' ')} event`
          : pattern,
    )
    .join(', ');
}

function stateOf(webhook: Webhook): string {
  if (webhook.enabled) return 'enabled';
  // The reason says it: "disabled by <email>", or "disabled by fleethub: <the failures>".
  return webhook.disabled_reason ?? 'disabled';
}

/** The event catalogue (`GET .../webhooks/event_types`, readable by every member), without the test event. */
function useEventCatalogue(org: string): EventType[] | null {
  const [catalogue, setCatalogue] = useState<EventType[] | null>(null);
  useEffect(() => {
    setCatalogue(null);
    void api
      .GET('/api/orgs/{org_name}/webhooks/event_types', { params: { path: { org_name: org } } })
      .then(({ data }) => {
        if (data) setCatalogue(data.data.filter((t) => t.type !== TEST_EVENT));
      });
  }, [org]);
  return catalogue;
}

/** The product filter's choices: the organization's products. */
function useProducts(org: string, enabled: boolean): string[] {
  const [products, setProducts] = useState<string[]>([]);
  useEffect(() => {
    if (!enabled) return;
    void api
      .GET('/api/orgs/{org_name}/products', { params: { path: { org_name: org } } })
      .then(({ data }) => {
        if (data) setProducts(data.data.map((p) => p.name));
      });
  }, [org, enabled]);
  return products;
}

/** The families of the catalogue (`device`, `deployment_group`, ...) with their types, in catalogue order. */
function families(catalogue: EventType[]): [string, EventType[]][] {
  const byFamily = new Map<string, EventType[]>();
  for (const eventType of catalogue) {
    const family = eventType.type.split('.')[0];
    byFamily.set(family, [...(byFamily.get(family) ?? []), eventType]);
  }
  return [...byFamily];
}

/**
 * The events a webhook wants, chosen from the catalogue: every event (`*`), a whole family (`device.*`) or single
 * types; a wider choice hides the narrower ones it covers.
 */
function EventTypesField(props: {
  idPrefix: string;
  catalogue: EventType[];
  value: string[];
  onChange: (value: string[]) => void;
}) {
  const { idPrefix, catalogue, value, onChange } = props;
  const chosen = new Set(value);
  const toggle = (pattern: string, on: boolean, covers: (other: string) => boolean = () => false) => {
    const rest = value.filter((other) => other !== pattern && !(on && covers(other)));
    onChange(on ? [...rest, pattern] : rest);
  };
  return (
    <fieldset class="event-types">
      <legend>Events</legend>
      <label class="check">
        <input
          type="checkbox"
          checked={chosen.has(ALL_EVENTS)}
          onChange={(event) => toggle(ALL_EVENTS, event.currentTarget.checked, () => true)}
        />
        Every event (*)
      </label>
      {!chosen.has(ALL_EVENTS) &&
        families(catalogue).map(([family, types]) => {
          const wildcard = `${family}.*`;
          return (
            <div
              key={family}
              class="event-family"
              role="group"
              aria-labelledby={`${idPrefix}-family-${family}`}
            >
              <label class="check" id={`${idPrefix}-family-${family}`}>
                <input
                  type="checkbox"
                  checked={chosen.has(wildcard)}
                  onChange={(event) =>
                    toggle(wildcard, event.currentTarget.checked, (other) => other.startsWith(`${family}.`))
                  }
                />
                Every {family.replaceAll('_', ' ')} event ({wildcard})
              </label>
              {!chosen.has(wildcard) && (
                <ul>
                  {types.map((eventType) => (
                    <li key={eventType.type}>
                      <label class="check" title={eventType.description}>
                        <input
                          type="checkbox"
                          checked={chosen.has(eventType.type)}
                          onChange={(event) => toggle(eventType.type, event.currentTarget.checked)}
                        />
                        {eventType.type}
                      </label>
                    </li>
                  ))}
                </ul>
              )}
            </div>
          );
        })}
    </fieldset>
  );
}

interface WebhookFields {
  url: string;
  eventTypes: string[];
  product: string;
  /** Deliveries per second at most, as typed ('': the server's default). */
  rateLimit: string;
  enabled: boolean;
}

/** The fields as the API's body has them. */
function bodyOf(fields: WebhookFields) {
  return {
    url: fields.url,
    event_types: fields.eventTypes,
    product: fields.product === '' ? null : fields.product,
    rate_limit_per_second: fields.rateLimit.trim() === '' ? null : Number(fields.rateLimit),
  };
}

const rateOf = (webhook: Webhook) =>
  webhook.rate_limit_per_second === null
    ? "the server's default"
    : `${webhook.rate_limit_per_second.toLocaleString()} deliveries a second`;

/** The fields of a webhook, to create one (with `enabled`) or change one. */
function WebhookForm(props: {
  idPrefix: string;
  title: string;
  submitLabel: string;
  catalogue: EventType[] | null;
  products: string[];
  initial: WebhookFields;
  withEnabled: boolean;
  error: string | null;
  onSubmit: (fields: WebhookFields) => Promise<boolean>;
  onCancel?: () => void;
}) {
  const { idPrefix } = props;
  const [fields, setFields] = useState<WebhookFields>(props.initial);
  const [busy, setBusy] = useState(false);
  const change = (changes: Partial<WebhookFields>) => setFields({ ...fields, ...changes });
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    const done = await props.onSubmit({ ...fields, url: fields.url.trim() });
    setBusy(false);
    if (done) setFields(props.initial);
  };
  return (
    <form class="webhook-form" aria-label={props.title} onSubmit={(event) => void submit(event)}>
      <h2>{props.title}</h2>
      <label for={`${idPrefix}-url`}>URL</label>
      <input
        id={`${idPrefix}-url`}
        type="url"
        required
        maxLength={2048}
        class="wide"
        placeholder="https://hooks.example.com/fleethub"
        value={fields.url}
        onInput={(event) => change({ url: event.currentTarget.value })}
      />
      {props.catalogue === null ? (
        <p>Loading the event types…</p>
      ) : (
        <EventTypesField
          idPrefix={idPrefix}
          catalogue={props.catalogue}
          value={fields.eventTypes}
          onChange={(eventTypes) => change({ eventTypes })}
        />
      )}
      <label for={`${idPrefix}-product`}>Product</label>
      <select
        id={`${idPrefix}-product`}
        value={fields.product}
        onChange={(event) => change({ product: event.currentTarget.value })}
      >
        <option value="">Every product</option>
        {props.products.map((name) => (
          <option key={name} value={name}>
            {name}
          </option>
        ))}
      </select>
      <label for={`${idPrefix}-rate`}>Deliveries per second at most (empty: the server's default)</label>
      <input
        id={`${idPrefix}-rate`}
        inputMode="numeric"
        pattern="[1-9][0-9]{0,4}"
        title="A whole number from 1 to 10,000"
        value={fields.rateLimit}
        onInput={(event) => change({ rateLimit: event.currentTarget.value })}
      />
      {props.withEnabled && (
        <label class="check">
          <input
            type="checkbox"
            checked={fields.enabled}
            onChange={(event) => change({ enabled: event.currentTarget.checked })}
          />
          Enabled: deliver events
        </label>
      )}
      <ErrorAlert message={props.error} />
      <div class="actions">
        <button type="submit" disabled={busy || fields.eventTypes.length === 0}>
          {props.submitLabel}
        </button>
        {props.onCancel && (
          <button type="button" class="secondary" onClick={props.onCancel}>
            Cancel
          </button>
        )}
      </div>
    </form>
  );
}

/** A signing secret shown once, with a button that copies it. */
function SecretOnce(props: {
  label: string;
  secret: string;
  children?: ComponentChildren;
  onDone: () => void;
}) {
  const [copied, setCopied] = useState<string | null>(null);
  const copy = () =>
    navigator.clipboard.writeText(props.secret).then(
      () => setCopied('Copied.'),
      () => setCopied('The browser refused to copy: select the secret and copy it.'),
    );
  return (
    <div class="created" role="region" aria-label={props.label}>
      <p>Copy the signing secret now: it will not be shown again.</p>
      <output aria-label="Signing secret">{props.secret}</output>
      {props.children}
      <div class="actions">
        <button type="button" onClick={() => void copy()}>
          Copy the secret
        </button>
        <button type="button" class="secondary" onClick={props.onDone}>
          Done
        </button>
      </div>
      <Status message={copied} />
    </div>
  );
}

/**
 * The organization's webhooks (manage members): listed with their state, created with the signing secret shown once.
 * A view member sees what webhooks are and the event catalogue, not the webhooks (the API keeps them for managers).
 */
export function Webhooks({ org, role }: { org: string; role: Role | undefined }) {
  const canManage = allows(role, 'manage');
  const path = { org_name: org };
  const catalogue = useEventCatalogue(org);
  const products = useProducts(org, canManage);
  const [webhooks, setWebhooks] = useState<Webhook[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [createError, setCreateError] = useState<string | null>(null);
  const [created, setCreated] = useState<{ id: string; url: string; secret: string } | null>(null);

  const load = async () => {
    const {
      data,
      error: failure,
      response,
    } = await api.GET('/api/orgs/{org_name}/webhooks', { params: { path } });
    if (data) setWebhooks(data.data);
    else setError(errorText(failure, response.status));
  };
  useEffect(() => {
    setWebhooks(null);
    setCreated(null);
    setError(null);
    if (canManage) void load();
  }, [org, canManage]);

  const create = async (fields: WebhookFields): Promise<boolean> => {
    setCreateError(null);
    const {
      data,
      error: failure,
      response,
    } = await api.POST('/api/orgs/{org_name}/webhooks', {
      params: { path },
      body: { ...bodyOf(fields), enabled: fields.enabled },
    });
    if (!data) {
      setCreateError(errorText(failure, response.status, FIELD_LABELS));
      return false;
    }
    setCreated({ id: data.data.id, url: data.data.url, secret: data.data.secret });
    await load();
    return true;
  };

  return (
    <>
      <h1>Webhooks</h1>
      <p class="hint">
        fleethub POSTs the organization's events (the event types below) to these URLs, signed as Standard
        Webhooks define, at least once and in order per subject.
      </p>
      {!canManage && <p>The organization's webhooks are shown to its members with the manage role.</p>}
      <ErrorAlert message={error} />
      {created !== null && (
        <SecretOnce label="New webhook's secret" secret={created.secret} onDone={() => setCreated(null)}>
          <p>
            Webhook <Link href={webhookPath(org, created.id)}>{created.url}</Link> created.
          </p>
        </SecretOnce>
      )}
      {canManage && webhooks === null && error === null && <p>Loading…</p>}
      {webhooks !== null && webhooks.length === 0 && <p>No webhook yet.</p>}
      {webhooks !== null && webhooks.length > 0 && (
        <table class="webhooks">
          <caption class="visually-hidden">Webhooks of {org}</caption>
          <thead>
            <tr>
              <th scope="col">URL</th>
              <th scope="col">Events</th>
              <th scope="col">Product</th>
              <th scope="col">State</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {webhooks.map((webhook) => (
              <tr key={webhook.id}>
                <th scope="row" class="url">
                  <Link href={webhookPath(org, webhook.id)}>{webhook.url}</Link>
                </th>
                <td>{describeEvents(webhook.event_types)}</td>
                <td>{webhook.product ?? 'every product'}</td>
                <td>{stateOf(webhook)}</td>
                <td>{when(webhook.inserted_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {canManage && (
        <WebhookForm
          idPrefix="new-webhook"
          title="New webhook"
          submitLabel="Create webhook"
          catalogue={catalogue}
          products={products}
          initial={{ url: '', eventTypes: [], product: '', rateLimit: '', enabled: true }}
          withEnabled
          error={createError}
          onSubmit={create}
        />
      )}
      {catalogue !== null && (
        <details class="catalogue">
          <summary>The event types ({catalogue.length})</summary>
          <table>
            <caption class="visually-hidden">Webhook event types</caption>
            <thead>
              <tr>
                <th scope="col">Type</th>
                <th scope="col">Version</th>
                <th scope="col">Subject</th>
                <th scope="col">When</th>
              </tr>
            </thead>
            <tbody>
              {catalogue.map((eventType) => (
                <tr key={eventType.type}>
                  <th scope="row" class="mono">
                    {eventType.type}
                  </th>
                  <td>{eventType.version}</td>
                  <td class="mono">{eventType.subject}</td>
                  <td>{eventType.description}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </details>
      )}
    </>
  );
}

type Confirming = 'delete' | 'rotate' | null;

/**
 * One webhook (manage members): its settings (changed, enabled, disabled), its delivery log (paged in the URL), a
 * test event, an event sent again; an admin rotates its secret, shown once.
 */
export function WebhookPage(props: {
  org: string;
  id: string;
  role: Role | undefined;
  search: URLSearchParams;
}) {
  const { org, id, search } = props;
  const canManage = allows(props.role, 'manage');
  const isAdmin = allows(props.role, 'admin');
  const path = { org_name: org, webhook_id: id };
  const page = Math.max(1, Number(search.get('page')) || 1);
  const catalogue = useEventCatalogue(org);
  const products = useProducts(org, canManage);
  const [webhook, setWebhook] = useState<Webhook | null>(null);
  const [attempts, setAttempts] = useState<Attempt[] | null>(null);
  const [pagination, setPagination] = useState<Pagination | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [status, setStatus] = useState<string | null>(null);
  const [editing, setEditing] = useState(false);
  const [editError, setEditError] = useState<string | null>(null);
  const [confirming, setConfirming] = useState<Confirming>(null);
  const [busy, setBusy] = useState(false);
  const [secret, setSecret] = useState<{ secret: string; previousUntil: string | null } | null>(null);
  const reloadTimer = useRef<number | undefined>(undefined);

  const failed = (failure: unknown, response: Response) => {
    setStatus(null);
    setError(errorText(failure, response.status, FIELD_LABELS));
  };

  const loadWebhook = async () => {
    const {
      data,
      error: failure,
      response,
    } = await api.GET('/api/orgs/{org_name}/webhooks/{webhook_id}', {
      params: { path },
    });
    if (data) setWebhook(data.data);
    else failed(failure, response);
  };
  const loadLog = async () => {
    const {
      data,
      error: failure,
      response,
    } = await api.GET('/api/orgs/{org_name}/webhooks/{webhook_id}/deliveries', {
      params: { path, query: { 'pagination[page]': page, 'pagination[page_size]': DELIVERIES_PAGE_SIZE } },
    });
    if (data) {
      setAttempts(data.data);
      setPagination(data.pagination ?? null);
    } else failed(failure, response);
  };
  /** The log now and once more shortly (what was just queued is sent within the dispatcher's poll). */
  const loadLogSoon = () => {
    window.clearTimeout(reloadTimer.current);
    reloadTimer.current = window.setTimeout(() => void loadLog(), LOG_RELOAD_MS);
  };
  useEffect(() => () => window.clearTimeout(reloadTimer.current), []);

  useEffect(() => {
    setWebhook(null);
    setSecret(null);
    setError(null);
    if (canManage) void loadWebhook();
  }, [org, id, canManage]);
  useEffect(() => {
    if (canManage) void loadLog();
  }, [org, id, page, canManage]);

  const update = async (
    body: {
      url?: string;
      event_types?: string[];
      product?: string | null;
      rate_limit_per_second?: number | null;
      enabled?: boolean;
    },
    done: string,
  ): Promise<boolean> => {
    const {
      data,
      error: failure,
      response,
    } = await api.PATCH('/api/orgs/{org_name}/webhooks/{webhook_id}', {
      params: { path },
      body,
    });
    if (!data) {
      if (body.enabled === undefined) setEditError(errorText(failure, response.status, FIELD_LABELS));
      else failed(failure, response);
      return false;
    }
    setWebhook(data.data);
    setError(null);
    setStatus(done);
    return true;
  };

  const saveEdit = async (fields: WebhookFields): Promise<boolean> => {
    setEditError(null);
    const saved = await update(bodyOf(fields), 'Webhook saved.');
    if (saved) setEditing(false);
    return saved;
  };

  const sendTest = async () => {
    const {
      data,
      error: failure,
      response,
    } = await api.POST('/api/orgs/{org_name}/webhooks/{webhook_id}/test', {
      params: { path },
    });
    if (!data) return failed(failure, response);
    setError(null);
    setStatus(`Test event ${data.data.event_id} queued.`);
    loadLogSoon();
  };

  const redeliver = async (attempt: Attempt) => {
    const {
      data,
      error: failure,
      response,
    } = await api.POST('/api/orgs/{org_name}/webhooks/{webhook_id}/redeliver', {
      params: { path },
      body: { event_id: attempt.event_id },
    });
    if (!data) return failed(failure, response);
    setError(null);
    setStatus(
      data.data.queued === 0
        ? `Event ${attempt.event_id} is still waiting to be delivered.`
        : `Event ${attempt.event_id} queued again.`,
    );
    loadLogSoon();
  };

  const remove = async () => {
    setBusy(true);
    const { error: failure, response } = await api.DELETE('/api/orgs/{org_name}/webhooks/{webhook_id}', {
      params: { path },
    });
    setBusy(false);
    setConfirming(null);
    if (!response.ok) return failed(failure, response);
    navigate(`/orgs/${seg(org)}/webhooks`);
  };

  const rotate = async () => {
    setBusy(true);
    const {
      data,
      error: failure,
      response,
    } = await api.POST('/api/orgs/{org_name}/webhooks/{webhook_id}/secret', { params: { path } });
    setBusy(false);
    setConfirming(null);
    if (!data) return failed(failure, response);
    setError(null);
    setStatus(null);
    setSecret({ secret: data.data.secret, previousUntil: data.data.previous_secret_expires_at });
    await loadWebhook();
  };

  const logBase = webhookPath(org, id);
  return (
    <>
      <p>
        <Link href={`/orgs/${seg(org)}/webhooks`}>All webhooks</Link>
      </p>
      <h1>Webhook {webhook?.url ?? id}</h1>
      {!canManage && <p>The organization's webhooks are shown to its members with the manage role.</p>}
      <ErrorAlert message={error} />
      <Status message={status} />
      {secret !== null && (
        <SecretOnce label="New secret" secret={secret.secret} onDone={() => setSecret(null)}>
          {secret.previousUntil !== null && (
            <p>The previous secret keeps signing too until {when(secret.previousUntil)}.</p>
          )}
        </SecretOnce>
      )}
      {webhook !== null && (
        <>
          <dl class="facts">
            <dt>URL</dt>
            <dd class="url">{webhook.url}</dd>
            <dt>Events</dt>
            <dd>{describeEvents(webhook.event_types)}</dd>
            <dt>Product</dt>
            <dd>{webhook.product ?? 'every product'}</dd>
            <dt>Rate limit</dt>
            <dd>{rateOf(webhook)}</dd>
            <dt>State</dt>
            <dd>{stateOf(webhook)}</dd>
            {webhook.disabled_at !== null && (
              <>
                <dt>Disabled at</dt>
                <dd>{when(webhook.disabled_at)}</dd>
              </>
            )}
            {webhook.previous_secret_expires_at !== null && (
              <>
                <dt>Previous secret signs until</dt>
                <dd>{when(webhook.previous_secret_expires_at)}</dd>
              </>
            )}
            <dt>Created</dt>
            <dd>{when(webhook.inserted_at)}</dd>
          </dl>
          <div class="actions">
            <button type="button" onClick={() => void sendTest()}>
              Send a test event
            </button>
            <button
              type="button"
              class="secondary"
              onClick={() => setEditing(!editing)}
              aria-expanded={editing}
            >
              Edit
            </button>
            <button
              type="button"
              class="secondary"
              onClick={() =>
                void update(
                  { enabled: !webhook.enabled },
                  webhook.enabled ? 'Webhook disabled.' : 'Webhook enabled.',
                )
              }
            >
              {webhook.enabled ? 'Disable' : 'Enable'}
            </button>
            {isAdmin && (
              <button type="button" class="secondary" onClick={() => setConfirming('rotate')}>
                Rotate the secret…
              </button>
            )}
            <button type="button" class="danger" onClick={() => setConfirming('delete')}>
              Delete…
            </button>
          </div>
          {editing && (
            <WebhookForm
              idPrefix="edit-webhook"
              title="Edit the webhook"
              submitLabel="Save"
              catalogue={catalogue}
              products={products}
              initial={{
                url: webhook.url,
                eventTypes: webhook.event_types,
                product: webhook.product ?? '',
                rateLimit:
                  webhook.rate_limit_per_second === null ? '' : String(webhook.rate_limit_per_second),
                enabled: webhook.enabled,
              }}
              withEnabled={false}
              error={editError}
              onSubmit={saveEdit}
              onCancel={() => setEditing(false)}
            />
          )}
          <h2>Delivery log</h2>
          <div class="actions">
            <button type="button" class="secondary" onClick={() => void loadLog()}>
              Refresh the log
            </button>
          </div>
          {pagination !== null && (
            <p role="status" class="count">
              {pagination.total_entries.toLocaleString()} attempt{pagination.total_entries === 1 ? '' : 's'}
              {pagination.total_pages > 1 && `, page ${pagination.page_number} of ${pagination.total_pages}`}
            </p>
          )}
          {attempts !== null && attempts.length === 0 && <p>Nothing delivered yet.</p>}
          {attempts !== null && attempts.length > 0 && (
            <table class="deliveries">
              <caption class="visually-hidden">Delivery attempts, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">When</th>
                  <th scope="col">Event</th>
                  <th scope="col">Attempt</th>
                  <th scope="col">Result</th>
                  <th scope="col">Latency</th>
                  <th scope="col">Response</th>
                  <th scope="col">Delivery</th>
                  <ActionsHeader />
                </tr>
              </thead>
              <tbody>
                {attempts.map((attempt) => (
                  <tr key={attempt.id}>
                    <td>{when(attempt.attempted_at)}</td>
                    <th scope="row">
                      {attempt.event_type}
                      <br />
                      <span class="mono hint">{attempt.event_id}</span>
                    </th>
                    <td>{attempt.attempt}</td>
                    <td>
                      {attempt.status}
                      {attempt.response_status !== null && ` (HTTP ${attempt.response_status})`}
                      {attempt.error !== null && `: ${attempt.error}`}
                    </td>
                    <td>{attempt.latency_ms} ms</td>
                    <td class="mono excerpt">{attempt.response_excerpt ?? ''}</td>
                    <td>{attempt.delivery_state}</td>
                    <td>
                      <button
                        type="button"
                        class="secondary"
                        aria-label={`Redeliver event ${attempt.event_id}`}
                        onClick={() => void redeliver(attempt)}
                      >
                        Redeliver
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          {pagination !== null && pagination.total_pages > 1 && (
            <nav class="pager" aria-label="Pages">
              <button
                type="button"
                class="secondary"
                disabled={page <= 1}
                onClick={() => navigate(`${logBase}?page=${page - 1}`)}
              >
                Newer
              </button>
              <button
                type="button"
                class="secondary"
                disabled={page >= pagination.total_pages}
                onClick={() => navigate(`${logBase}?page=${page + 1}`)}
              >
                Older
              </button>
            </nav>
          )}
          <ConfirmDialog
            open={confirming !== null}
            title={confirming === 'rotate' ? 'Rotate the signing secret' : 'Delete the webhook'}
            confirmLabel={confirming === 'rotate' ? 'Rotate the secret' : 'Delete the webhook'}
            danger={confirming === 'delete'}
            busy={busy}
            onConfirm={() => void (confirming === 'rotate' ? rotate() : remove())}
            onCancel={() => setConfirming(null)}
          >
            {confirming === 'rotate' ? (
              <p>
                A new secret signs every delivery from now on; the current one keeps signing too for a grace
                period, so the receiver can switch without losing an event. The new secret is shown once.
              </p>
            ) : (
              <p>
                Delete the webhook to {webhook.url}? Its pending deliveries and its delivery log go with it;
                no event is sent to it any more.
              </p>
            )}
          </ConfirmDialog>
        </>
      )}
    </>
  );
}
