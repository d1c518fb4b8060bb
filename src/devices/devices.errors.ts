/** Messages of the devices feature. */

/** 422 on upgrade: the uuid is malformed or names no firmware of the device's product. */
export const UNKNOWN_FIRMWARE = 'does not match a firmware of this product';

/** 409 on console code, reboot and reconnect: no socket of the device able to take it, on any instance. */
export const DEVICE_NOT_CONNECTED = 'device is not connected';

/** A device's identifier is its name on the socket and in its certificates: set once, at creation. */
export const IDENTIFIER_IMMUTABLE = 'cannot be changed';

/** 422 on move: the target is where the device is. */
export const ALREADY_THE_PRODUCT = "is the device's product already";
