/** Messages of the devices feature. */

/** 422 on upgrade: the uuid is malformed or names no firmware of the device's product. */
export const UNKNOWN_FIRMWARE = 'does not match a firmware of this product';

/** 409 on console code: no console connection of the device on any instance. */
export const DEVICE_NOT_CONNECTED = 'device is not connected';
