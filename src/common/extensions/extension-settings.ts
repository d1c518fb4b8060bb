/**
 * The extensions NervesHub knows (device-protocol.md 5), as product settings (`.../products/{product}/extensions`:
 * which the product enables) and device settings (`.../devices/{identifier}/extensions`: which the device opts out of).
 * Neither is part of the Product or Device record (contract 5).
 */
export const EXTENSION_KEYS = ['health', 'geo', 'local_shell', 'logging', 'network_identity'] as const;
export type ExtensionKey = (typeof EXTENSION_KEYS)[number];
export type ExtensionSettings = Record<ExtensionKey, boolean>;

/**
 * A product's settings before anyone changes them. NervesHub enables nothing by default; `network_identity` is on
 * here because fleethub accepted iroh identity reports from every product before the setting existed (docs/decisions.md).
 */
export const PRODUCT_EXTENSION_DEFAULTS: ExtensionSettings = {
  health: false,
  geo: false,
  local_shell: false,
  logging: false,
  network_identity: true,
};

/** A device allows every extension its product enables unless it opts out. */
export const DEVICE_EXTENSION_DEFAULTS: ExtensionSettings = {
  health: true,
  geo: true,
  local_shell: true,
  logging: true,
  network_identity: true,
};

/** The stored settings (possibly written before a key existed) completed with the defaults. */
export function extensionSettings(stored: unknown, defaults: ExtensionSettings): ExtensionSettings {
  const settings = { ...defaults };
  if (typeof stored === 'object' && stored !== null) {
    for (const key of EXTENSION_KEYS) {
      const value = (stored as Record<string, unknown>)[key];
      if (typeof value === 'boolean') settings[key] = value;
    }
  }
  return settings;
}

/** What a device may attach: enabled on its product and not disabled on the device. */
export function allowedExtensions(product: unknown, device: unknown): Set<ExtensionKey> {
  const enabled = extensionSettings(product, PRODUCT_EXTENSION_DEFAULTS);
  const allowed = extensionSettings(device, DEVICE_EXTENSION_DEFAULTS);
  return new Set(EXTENSION_KEYS.filter((key) => enabled[key] && allowed[key]));
}

/** A checked settings body: only the keys it names. */
export function extensionChanges(body: Partial<ExtensionSettings>): Partial<ExtensionSettings> {
  const changes: Partial<ExtensionSettings> = {};
  for (const key of EXTENSION_KEYS) {
    if (body[key] !== undefined) changes[key] = body[key];
  }
  return changes;
}
