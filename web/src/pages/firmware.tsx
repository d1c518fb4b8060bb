import { useEffect, useState } from 'preact/hooks';
import { api, currentCsrfToken, errorText } from '../api/client';
import type { components } from '../api/schema';
import { ActionsHeader } from '../components/actions-header';
import { ErrorAlert, Status } from '../components/alert';
import { ProductNav } from '../components/product-nav';
import { seg } from '../router';
import { allows, type Role } from '../session';

type Firmware = components['schemas']['FirmwareView'];

/** Sends a file as the upload route takes it, reporting its progress (fetch cannot); the answer's status and body. */
function upload(url: string, file: File, progress: (fraction: number) => void): Promise<[number, unknown]> {
  return new Promise((resolve) => {
    const request = new XMLHttpRequest();
    request.open('POST', url);
    const csrf = currentCsrfToken();
    if (csrf !== null) request.setRequestHeader('X-CSRF-Token', csrf);
    request.upload.onprogress = (event) => {
      if (event.lengthComputable) progress(event.loaded / event.total);
    };
    request.onload = () => {
      let body: unknown = null;
      try {
        body = JSON.parse(request.responseText);
      } catch {
        body = null;
      }
      resolve([request.status, body]);
    };
    request.onerror = () => resolve([0, null]);
    const form = new FormData();
    form.append('firmware', file);
    request.send(form);
  });
}

/** The product's firmware: listed, uploaded (with progress and the server's refusal in words), downloaded, deleted. */
export function FirmwarePage({
  org,
  product,
  role,
}: {
  org: string;
  product: string;
  role: Role | undefined;
}) {
  const canManage = allows(role, 'manage');
  const path = { org_name: org, product_name: product };
  const apiBase = `/api/orgs/${seg(org)}/products/${seg(product)}/firmwares`;
  const [firmware, setFirmware] = useState<Firmware[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [status, setStatus] = useState<string | null>(null);
  const [file, setFile] = useState<File | null>(null);
  const [sent, setSent] = useState<number | null>(null);

  const load = async () => {
    const {
      data,
      error: failure,
      response,
    } = await api.GET('/api/orgs/{org_name}/products/{product_name}/firmwares', {
      params: { path },
    });
    if (data) setFirmware(data.data);
    else setError(errorText(failure, response.status));
  };
  useEffect(() => {
    setFirmware(null);
    void load();
  }, [org, product]);

  const submit = async (event: Event) => {
    event.preventDefault();
    if (file === null) return;
    setError(null);
    setStatus(null);
    setSent(0);
    const [code, body] = await upload(apiBase, file, setSent);
    setSent(null);
    if (code === 201) {
      const created = (body as { data: Firmware }).data;
      setStatus(`Firmware ${created.version} uploaded.`);
      setFile(null);
      (event.target as HTMLFormElement).reset();
      await load();
    } else setError(errorText(body, code === 0 ? undefined : code));
  };

  const remove = async (item: Firmware) => {
    if (!window.confirm(`Delete firmware ${item.version} (${item.uuid})?`)) return;
    const { error: failure, response } = await api.DELETE(
      '/api/orgs/{org_name}/products/{product_name}/firmwares/{uuid}',
      { params: { path: { ...path, uuid: item.uuid } } },
    );
    if (!response.ok) {
      setError(errorText(failure, response.status));
      return;
    }
    setError(null);
    setStatus(`Firmware ${item.version} deleted.`);
    await load();
  };

  return (
    <>
      <h1>{product}</h1>
      <ProductNav org={org} product={product} current="firmware" />
      <ErrorAlert message={error} />
      <Status message={status} />
      {firmware !== null && firmware.length === 0 && <p>No firmware uploaded yet.</p>}
      {firmware !== null && firmware.length > 0 && (
        <table>
          <caption class="visually-hidden">Firmware of {product}</caption>
          <thead>
            <tr>
              <th scope="col">Version</th>
              <th scope="col">UUID</th>
              <th scope="col">Platform</th>
              <th scope="col">Architecture</th>
              <th scope="col">Author</th>
              <ActionsHeader />
            </tr>
          </thead>
          <tbody>
            {firmware.map((item) => (
              <tr key={item.uuid}>
                <th scope="row">{item.version}</th>
                <td class="mono">{item.uuid}</td>
                <td>{item.platform}</td>
                <td>{item.architecture}</td>
                <td>{item.author ?? '—'}</td>
                <td class="row-actions">
                  <a
                    href={`${apiBase}/${item.uuid}/download`}
                    download
                    aria-label={`Download firmware ${item.version}`}
                  >
                    Download
                  </a>
                  {canManage && (
                    <button
                      type="button"
                      class="danger"
                      aria-label={`Delete firmware ${item.version}`}
                      onClick={() => void remove(item)}
                    >
                      Delete
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {canManage && (
        <form class="inline" onSubmit={(event) => void submit(event)}>
          <h2>Upload firmware</h2>
          <label for="firmware-file">Firmware file (.fw, AtomVM .avm, ESP-IDF .bin)</label>
          <input
            id="firmware-file"
            type="file"
            required
            onChange={(event) => setFile(event.currentTarget.files?.[0] ?? null)}
          />
          <button type="submit" disabled={sent !== null}>
            Upload
          </button>
          {sent !== null && (
            <progress max={1} value={sent} aria-label="Upload progress">
              {Math.round(sent * 100)} %
            </progress>
          )}
        </form>
      )}
    </>
  );
}
