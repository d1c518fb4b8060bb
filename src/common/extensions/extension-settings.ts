import { applyDecorators } from '@nestjs/common';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { CustomField } from '../validation/fields';

/**
 * The extensions NervesHub knows (device-protocol.md 5), as product settings (`extensions` on the product: which
 * the product enables) and device settings (`extensions` on the device: which the device opts out of).
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

/**
 * Checks an `extensions` setting in a request body: an object of the known keys, each a boolean (or "true"/"false",
 * as NervesHub's forms send); null when valid.
 */
export function checkExtensionSettings(value: unknown): string | null {
  if (value === undefined) return null;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return `must be an object of booleans with the keys: ${EXTENSION_KEYS.join(', ')}`;
  }
  for (const [key, setting] of Object.entries(value as Record<string, unknown>)) {
    if (!(EXTENSION_KEYS as readonly string[]).includes(key)) {
      return `unknown extension "${key}" (known: ${EXTENSION_KEYS.join(', ')})`;
    }
    if (typeof setting !== 'boolean' && setting !== 'true' && setting !== 'false') {
      return `${key} must be true or false`;
    }
  }
  return null;
}

/** A checked setting from a request body: only the keys it names, as booleans. */
export function parseExtensionSettings(value: Record<string, unknown>): Partial<ExtensionSettings> {
  const parsed: Partial<ExtensionSettings> = {};
  for (const key of EXTENSION_KEYS) {
    const setting = value[key];
    if (setting !== undefined) parsed[key] = setting === true || setting === 'true';
  }
  return parsed;
}

/** An `extensions` setting in a request body, validated and documented. */
export function ExtensionSettingsField(description: string): PropertyDecorator {
  return applyDecorators(
    CustomField('extensionSettings', checkExtensionSettings),
    ApiPropertyOptional({
      type: 'object',
      description,
      properties: Object.fromEntries(EXTENSION_KEYS.map((key) => [key, { type: 'boolean' }])),
      example: { health: true, logging: false },
    }),
  );
}
