/** Messages of the products feature. */

/** 409 on delete: the devices foreign key holds the product. */
export const PRODUCT_HAS_DEVICES = 'the product still has devices: delete or move them first';
