import type { ScriptView } from './dto/script.dto';

export interface ScriptRow {
  id: string;
  name: string;
  tags: string;
  text: string;
  inserted_at: Date;
  updated_at: Date;
  author_id: string | null;
  author_name: string | null;
  author_email: string | null;
}

export const SELECT_SCRIPT = `
  SELECT s.id, s.name, s.tags, s.text, s.inserted_at, s.updated_at,
         u.id AS author_id, u.name AS author_name, u.email AS author_email
    FROM support_scripts s LEFT JOIN users u ON u.id = s.created_by_id`;

export function scriptView(row: ScriptRow): ScriptView {
  return {
    id: String(row.id),
    name: row.name,
    tags: row.tags,
    text: row.text,
    created_by:
      row.author_id === null
        ? null
        : { id: String(row.author_id), name: row.author_name!, email: row.author_email! },
    inserted_at: row.inserted_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** One script of a product by id: `$1` the product id, `$2` the script id. */
export const SCRIPT_IN_PRODUCT = `${SELECT_SCRIPT} WHERE s.product_id = $1 AND s.id = $2`;
