import type { Product } from './product.entity';

export interface ProductRow {
  id: string;
  org_id: string;
  name: string;
  allow_unsigned_atomvm_firmware: boolean;
  allow_unsigned_esp_idf_firmware: boolean;
  allowed_update_tools: Product['allowedUpdateTools'];
  require_unique_firmware_version: boolean;
  extensions: Product['extensions'];
  inserted_at: Date;
  updated_at: Date;
}

export const PRODUCT_FIELDS = [
  'id',
  'org_id',
  'name',
  'allow_unsigned_atomvm_firmware',
  'allow_unsigned_esp_idf_firmware',
  'allowed_update_tools',
  'require_unique_firmware_version',
  'extensions',
  'inserted_at',
  'updated_at',
] as const satisfies readonly (keyof ProductRow)[];

export const PRODUCT_COLUMNS = PRODUCT_FIELDS.join(', ');

/** The product columns of `alias`, each as `product_<column>`, for a query that joins the product in. */
export function joinedProductColumns(alias: string): string {
  return PRODUCT_FIELDS.map((field) => `${alias}.${field} AS product_${field}`).join(', ');
}

/** The product columns of a row selected with joinedProductColumns (null when the outer join found none). */
export function joinedProductRow(row: Record<string, unknown>): ProductRow | null {
  if (row.product_id === null || row.product_id === undefined) return null;
  const fields: Record<string, unknown> = {};
  for (const field of PRODUCT_FIELDS) fields[field] = row[`product_${field}`];
  return fields as unknown as ProductRow;
}
