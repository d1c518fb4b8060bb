import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../api/client';
import type { components } from '../api/schema';
import { ErrorAlert, Status } from '../components/alert';
import { ProductNav } from '../components/product-nav';
import { allows, type Role } from '../session';

type Product = components['schemas']['ProductView'];
type Extensions = components['schemas']['ExtensionSettingsView'];
type UpdateTool = Product['allowed_update_tools'][number];

const TOOLS: UpdateTool[] = ['fwup', 'atomvm', 'esp-idf'];
const FLAGS: {
  key:
    'require_unique_firmware_version' | 'allow_unsigned_atomvm_firmware' | 'allow_unsigned_esp_idf_firmware';
  label: string;
}[] = [
  { key: 'require_unique_firmware_version', label: 'Each firmware version may be uploaded once' },
  { key: 'allow_unsigned_atomvm_firmware', label: 'Accept unsigned AtomVM firmware' },
  { key: 'allow_unsigned_esp_idf_firmware', label: 'Accept unsigned ESP-IDF firmware' },
];
const EXTENSIONS: { key: keyof Extensions; label: string; hint: string }[] = [
  { key: 'health', label: 'Health', hint: 'metrics, alarms and checks' },
  { key: 'geo', label: 'Location', hint: 'where the device is' },
  { key: 'logging', label: 'Logs', hint: 'log lines' },
  { key: 'network_identity', label: 'Network identities', hint: 'iroh, NetBird, Tailscale, WireGuard keys' },
  { key: 'local_shell', label: 'Local shell', hint: 'not served by fleethub' },
];

/** One product's settings and the extensions it enables; a view member reads them, a manage member changes them. */
export function ProductSettings({
  org,
  product,
  role,
}: {
  org: string;
  product: string;
  role: Role | undefined;
}) {
  const path = { org_name: org, product_name: product };
  const canManage = allows(role, 'manage');
  const [settings, setSettings] = useState<Product | null>(null);
  const [extensions, setExtensions] = useState<Extensions | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [saved, setSaved] = useState<string | null>(null);

  useEffect(() => {
    setSettings(null);
    setExtensions(null);
    setError(null);
    let newest = true;
    void Promise.all([
      api.GET('/api/orgs/{org_name}/products/{product_name}', { params: { path } }),
      api.GET('/api/orgs/{org_name}/products/{product_name}/extensions', { params: { path } }),
    ]).then(([shown, enabled]) => {
      if (!newest) return;
      if (shown.data) setSettings(shown.data.data);
      else setError(errorText(shown.error, shown.response.status));
      if (enabled.data) setExtensions(enabled.data.data);
    });
    return () => {
      newest = false;
    };
  }, [org, product]);

  const saveSettings = async (event: Event) => {
    event.preventDefault();
    if (!settings) return;
    setSaved(null);
    setError(null);
    const {
      data,
      error: failure,
      response,
    } = await api.PATCH('/api/orgs/{org_name}/products/{product_name}', {
      params: { path },
      body: {
        allow_unsigned_atomvm_firmware: settings.allow_unsigned_atomvm_firmware,
        allow_unsigned_esp_idf_firmware: settings.allow_unsigned_esp_idf_firmware,
        allowed_update_tools: settings.allowed_update_tools,
        require_unique_firmware_version: settings.require_unique_firmware_version,
      },
    });
    if (data) {
      setSettings(data.data);
      setSaved('Settings saved.');
    } else setError(errorText(failure, response.status));
  };

  const saveExtensions = async (event: Event) => {
    event.preventDefault();
    if (!extensions) return;
    setSaved(null);
    setError(null);
    const {
      data,
      error: failure,
      response,
    } = await api.PATCH('/api/orgs/{org_name}/products/{product_name}/extensions', {
      params: { path },
      body: extensions,
    });
    if (data) {
      setExtensions(data.data);
      setSaved('Extensions saved. Devices pick them up when they next connect.');
    } else setError(errorText(failure, response.status));
  };

  return (
    <>
      <h1>{product}</h1>
      <ProductNav org={org} product={product} current="settings" />
      <ErrorAlert message={error} />
      <Status message={saved} />
      {settings === null && error === null && <p>Loading…</p>}
      {settings !== null && (
        <form onSubmit={(event) => void saveSettings(event)}>
          <fieldset disabled={!canManage}>
            <legend>Firmware settings</legend>
            <fieldset class="group">
              <legend>Update tools accepted</legend>
              {TOOLS.map((tool) => (
                <label key={tool} class="check">
                  <input
                    type="checkbox"
                    checked={settings.allowed_update_tools.includes(tool)}
                    onChange={(event) =>
                      setSettings({
                        ...settings,
                        allowed_update_tools: event.currentTarget.checked
                          ? TOOLS.filter((t) => t === tool || settings.allowed_update_tools.includes(t))
                          : settings.allowed_update_tools.filter((t) => t !== tool),
                      })
                    }
                  />
                  {tool}
                </label>
              ))}
            </fieldset>
            {FLAGS.map(({ key, label }) => (
              <label key={key} class="check">
                <input
                  type="checkbox"
                  checked={settings[key]}
                  onChange={(event) => setSettings({ ...settings, [key]: event.currentTarget.checked })}
                />
                {label}
              </label>
            ))}
            {canManage && <button type="submit">Save settings</button>}
          </fieldset>
        </form>
      )}
      {extensions !== null && (
        <form onSubmit={(event) => void saveExtensions(event)}>
          <fieldset disabled={!canManage}>
            <legend>Device extensions</legend>
            <p class="hint">
              What devices of this product may report. A device can still opt out on its own.
            </p>
            {EXTENSIONS.map(({ key, label, hint }) => (
              <label key={key} class="check">
                <input
                  type="checkbox"
                  checked={extensions[key]}
                  onChange={(event) => setExtensions({ ...extensions, [key]: event.currentTarget.checked })}
                />
                {label} <span class="hint">({hint})</span>
              </label>
            ))}
            {canManage && <button type="submit">Save extensions</button>}
          </fieldset>
        </form>
      )}
    </>
  );
}
