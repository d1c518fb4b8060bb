import type { Product } from './product.entity';

/**
 * A product as other features see it (ProductsService.findInOrg, the caller's access): its settings, without the
 * persistence class. Features outside products depend on this, never on the entity.
 */
export type ProductRecord = Omit<Product, 'org'>;
