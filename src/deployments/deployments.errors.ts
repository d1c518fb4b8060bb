/** Messages of the deployments feature. */

/** 422 on `firmware`: no firmware of the product has this uuid. */
export const FIRMWARE_UNKNOWN = 'does not exist in this product';

/** 422 on `firmware`: a later release must run on the group's platform and architecture. */
export const FIRMWARE_PLATFORM_MISMATCH = (platform: string, architecture: string) =>
  `platform and architecture must be the deployment group's (${platform}, ${architecture})`;

/** The unique index that keeps group names unique per product. */
export const GROUP_NAME_INDEX = 'deployment_groups_product_id_name_idx';
