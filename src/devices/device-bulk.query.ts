import type { DeviceListQuery } from './device-list.query';
import { deviceListSql } from './device-list.query';

/** What a bulk request does to each device it selects (`POST .../devices/bulk`). */
export const BULK_ACTIONS = [
  'add_tags',
  'remove_tags',
  'move',
  'upgrade',
  'enable_updates',
  'disable_updates',
  'clear_penalty_box',
] as const;
export type BulkAction = (typeof BULK_ACTIONS)[number];

/** The devices a bulk request names: a bounded list of identifiers, or whatever matches the list's filters. */
export type BulkSelection = { identifiers: readonly string[] } | { filters: DeviceListQuery['filters'] };

/** The change made to the selected devices, in SQL terms (the service checked its inputs). */
export type BulkChange =
  | { kind: 'add_tags'; tags: readonly string[]; maxTags: number }
  | { kind: 'remove_tags'; tags: readonly string[] }
  | { kind: 'updates_enabled'; enabled: boolean }
  | { kind: 'clear_penalty_box' }
  /** A manual upgrade's rule: automatic updates off. Every selected device counts as changed. */
  | { kind: 'upgrade' }
  | { kind: 'move'; orgId: string; productId: string };

/**
 * The planner settings of a window's selection after a full window (DevicesRepository.bulkWindow): the next
 * window is read in primary-key order, never by a bitmap or a sort of every remaining match (see
 * `bulkWindowSql`).
 */
export const ORDERED_WINDOW_SETTINGS = ['enable_bitmapscan', 'enable_sort'] as const;

/**
 * The transaction-local setting that tells the row trigger keeping the device counters to skip a statement's rows:
 * the bulk statement writes the counters' deltas itself, once (migration BulkDeviceCounts).
 */
export const COUNTS_BY_STATEMENT = { name: 'fleethub.device_counts', value: 'statement' } as const;

/** The product's devices the selection names: a WHERE over `devices d`; `$1` is the product's id. */
export function bulkSelectionSql(
  productId: string,
  selection: BulkSelection,
): { where: string; params: unknown[] } {
  if ('identifiers' in selection) {
    return {
      where: 'd.product_id = $1 AND d.identifier = ANY($2::text[])',
      params: [productId, selection.identifiers],
    };
  }
  const { where, params } = deviceListSql(productId, {
    sort: 'identifier',
    direction: 'asc',
    page: { page: 1, pageSize: 1, offset: 0 },
    filters: selection.filters,
  });
  return { where, params };
}

/**
 * One change in SQL: `changes`, which selected rows it locks and changes (over `devices d`); `set`, the UPDATE's SET
 * (from the row as it is once locked); `over`, for `add_tags`, a locked row (`target`) that would carry too many
 * tags; `updateIf`, which locked rows are written (default: all).
 */
function changeSql(
  change: BulkChange,
  param: (value: unknown) => string,
): { changes: string; set: string; over: string | null; updateIf?: string } {
  switch (change.kind) {
    case 'add_tags': {
      const tags = param(change.tags);
      const missing = (row: string) =>
        `SELECT t FROM unnest(${tags}::text[]) WITH ORDINALITY AS u(t, n) WHERE t <> ALL(${row}.tags)`;
      // The tags the device lacks, in the order given, after its own.
      return {
        changes: `NOT d.tags @> ${tags}::text[]`,
        set: `tags = d.tags || ARRAY(${missing('d')} ORDER BY n), updated_at = now()`,
        over: `cardinality(target.tags) + (SELECT count(*) FROM (${missing('target')}) m) > ${param(change.maxTags)}`,
      };
    }
    case 'remove_tags': {
      const tags = param(change.tags);
      return {
        changes: `d.tags && ${tags}::text[]`,
        set:
          `tags = ARRAY(SELECT t FROM unnest(d.tags) WITH ORDINALITY AS u(t, n)` +
          ` WHERE t <> ALL(${tags}::text[]) ORDER BY n), updated_at = now()`,
        over: null,
      };
    }
    case 'updates_enabled': {
      const enabled = param(change.enabled);
      return {
        changes: `d.updates_enabled <> ${enabled}::boolean`,
        set: `updates_enabled = ${enabled}::boolean, updated_at = now()`,
        over: null,
      };
    }
    case 'clear_penalty_box':
      // As DELETE .../penalty: no block, no update attempts, automatic updates on.
      return {
        changes: `(d.updates_blocked_until IS NOT NULL OR cardinality(d.update_attempts) > 0 OR NOT d.updates_enabled)`,
        set: `updates_blocked_until = NULL, update_attempts = '{}', updates_enabled = true, updated_at = now()`,
        over: null,
      };
    case 'upgrade':
      // Every selected device is locked (it gets the update); only those with automatic updates on are written.
      return { changes: 'TRUE', set: 'updates_enabled = false', over: null, updateIf: 'd.updates_enabled' };
    case 'move':
      return {
        changes: 'TRUE',
        set: `org_id = ${param(change.orgId)}::bigint, product_id = ${param(change.productId)}::bigint, updated_at = now()`,
        over: null,
      };
  }
}

/**
 * The counters of `product_device_counts` and `product_tag_counts` for the rows `changed` (new values) replacing
 * the rows `target` (as they were when locked), in one grouped upsert each, on this backend's shard as the triggers
 * write them, in key order as they lock them.
 */
function countersSql(change: BulkChange, param: (value: unknown) => string): string {
  if (change.kind !== 'add_tags' && change.kind !== 'remove_tags' && change.kind !== 'move') return '';
  const shard = '(pg_backend_pid() % 16)::smallint';
  const devices =
    change.kind === 'move'
      ? `, device_counts AS (
           INSERT INTO product_device_counts (product_id, shard, total)
           SELECT product_id, ${shard}, delta
             FROM (SELECT $1::bigint AS product_id, -count(*) AS delta FROM changed
                   UNION ALL SELECT ${param(change.productId)}::bigint, count(*) FROM changed) c
            WHERE delta <> 0 ORDER BY product_id
           ON CONFLICT (product_id, shard) DO UPDATE SET total = product_device_counts.total + EXCLUDED.total
         )`
      : '';
  return `, tag_deltas AS (
      SELECT product_id, tag, sum(delta) AS delta FROM (
        SELECT $1::bigint AS product_id, t.tag, -1 AS delta
          FROM changed JOIN target ON target.id = changed.id, LATERAL (SELECT DISTINCT unnest(target.tags) AS tag) t
        UNION ALL
        SELECT changed.product_id, t.tag, 1 FROM changed, LATERAL (SELECT DISTINCT unnest(changed.tags) AS tag) t
      ) x GROUP BY 1, 2 HAVING sum(delta) <> 0
    ), tag_counts AS (
      INSERT INTO product_tag_counts (product_id, tag, shard, total)
      SELECT product_id, tag, ${shard}, delta FROM tag_deltas ORDER BY product_id, tag
      ON CONFLICT (product_id, tag, shard) DO UPDATE SET total = product_tag_counts.total + EXCLUDED.total
    )${devices}`;
}

/**
 * The next window of a bulk change over a filter: the ids of the first `size` selected devices after the id
 * `after` (`'0'` for the first window), in id order, read by primary-key range (`id > after ORDER BY id LIMIT
 * size`, on the index of the product's ids), so that each window starts where the last one stopped and a whole
 * run reads the product's devices once. Answers one row: `ids` (as text).
 */
export function bulkWindowSql(
  productId: string,
  selection: BulkSelection,
  after: string,
  size: number,
): { sql: string; params: unknown[] } {
  const { where, params } = bulkSelectionSql(productId, selection);
  params.push(after, size);
  return {
    sql: `SELECT COALESCE(array_agg(id::text ORDER BY id), '{}') AS ids FROM (
            SELECT d.id FROM devices d WHERE ${where} AND d.id > $${params.length - 1}::bigint
             ORDER BY d.id LIMIT $${params.length}
          ) w`,
    params,
  };
}

/**
 * One statement of a bulk change, over the selection (within the window's ids when given): counts the selected
 * devices, locks the rows it changes in id order (as every statement writing several devices locks them, so that
 * two bulk changes, or a bulk change and the gateway's presence writes, never deadlock; `FOR NO KEY UPDATE`, what an
 * UPDATE of non-key columns takes, so that a membership write's KEY SHARE is not blocked), changes them, writes
 * the device counters' deltas once (run with COUNTS_BY_STATEMENT set, so that the row trigger skips these rows). A row
 * another transaction changed meanwhile is read again once that one commits (READ COMMITTED) and the change is
 * computed from what it holds then: concurrent tag changes add up instead of overwriting each other.
 *
 * Answers one row: `matched` (selected), `written` (rows updated), `over_limit` (`add_tags`: devices that would
 * carry more than `maxTags`; when any, nothing is changed), `ids` and `identifiers` (the locked, changed devices,
 * in id order) and `connected` (the ids of those of them that are connected).
 */
export function bulkChangeSql(
  productId: string,
  selection: BulkSelection,
  change: BulkChange,
  window: readonly string[] | null,
): { sql: string; params: unknown[] } {
  const selected = bulkSelectionSql(productId, selection);
  const params = selected.params;
  const param = (value: unknown) => {
    params.push(value);
    return `$${params.length}`;
  };
  const where = window ? `${selected.where} AND d.id = ANY(${param(window)}::bigint[])` : selected.where;
  const { changes, set, over, updateIf = 'TRUE' } = changeSql(change, param);
  const sql = `
    WITH matched AS (SELECT count(*)::int AS n FROM devices d WHERE ${where}),
         target AS MATERIALIZED (
           SELECT d.id, d.identifier, d.tags, d.connection_status FROM devices d
            WHERE ${where} AND ${changes} ORDER BY d.id FOR NO KEY UPDATE
         ),
         over AS (${over === null ? 'SELECT 0 AS n' : `SELECT count(*) FILTER (WHERE ${over})::int AS n FROM target`}),
         changed AS (
           UPDATE devices d SET ${set} FROM target, over
            WHERE d.id = target.id AND over.n = 0 AND ${updateIf}
           RETURNING d.id, d.product_id, d.tags
         )${countersSql(change, param)}
    SELECT (SELECT n FROM matched) AS matched, over.n AS over_limit,
           (SELECT count(*)::int FROM changed) AS written,
           COALESCE((SELECT array_agg(id ORDER BY id) FROM target WHERE over.n = 0), '{}') AS ids,
           COALESCE((SELECT array_agg(identifier ORDER BY id) FROM target WHERE over.n = 0), '{}') AS identifiers,
           COALESCE((SELECT array_agg(id ORDER BY id) FROM target
                      WHERE over.n = 0 AND connection_status = 'connected'), '{}') AS connected
      FROM over`;
  return { sql, params };
}

/**
 * How many selected devices would carry more than `maxTags` once `tags` are added (a bulk `add_tags` over a filter
 * is refused before its first window when any would).
 */
export function overTagLimitSql(
  productId: string,
  selection: BulkSelection,
  tags: readonly string[],
  maxTags: number,
): { sql: string; params: unknown[] } {
  const { where, params } = bulkSelectionSql(productId, selection);
  params.push(tags, maxTags);
  const t = `$${params.length - 1}::text[]`;
  return {
    sql: `SELECT count(*)::int AS n FROM devices d
           WHERE ${where} AND NOT d.tags @> ${t}
             AND cardinality(d.tags) + (SELECT count(*) FROM unnest(${t}) AS u(t) WHERE t <> ALL(d.tags)) > $${params.length}`,
    params,
  };
}

/** The webhook events a bulk change writes for the devices of a window: one per device and organization. */
export interface BulkEvents {
  type: string;
  /** The organizations to send it to (a move across organizations: both). */
  orgIds: readonly string[];
  /** The product the events name (a move: the new one). */
  product: string;
  /** Fields every event carries besides `identifier` and `product`. */
  data: Record<string, unknown>;
  /** `changes.tags`: each device's tags once changed. */
  withTags: boolean;
}

/**
 * The events of a window's devices as a SELECT for the webhook outbox (`WebhookOutbox.emitSelected`): one row per
 * device (by primary key) and organization, in id order, its data built from the row as the change left it.
 */
export function bulkEventsSql(
  ids: readonly string[],
  events: BulkEvents,
): { sql: string; params: unknown[] } {
  const tags = events.withTags
    ? ` || jsonb_build_object('changes', jsonb_build_object('tags', to_jsonb(d.tags)))`
    : '';
  return {
    sql: `SELECT o.org_id, $2::varchar AS type, $3::varchar AS product, 'device:' || d.identifier AS subject,
                 jsonb_build_object('identifier', d.identifier, 'product', $3::varchar) || $4::jsonb${tags} AS data,
                 row_number() OVER (ORDER BY d.id, o.n) AS ord
            FROM devices d CROSS JOIN unnest($5::bigint[]) WITH ORDINALITY AS o(org_id, n)
           WHERE d.id = ANY($1::bigint[])`,
    params: [ids, events.type, events.product, JSON.stringify(events.data), events.orgIds],
  };
}
