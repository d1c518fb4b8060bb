import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../api/client';
import type { components } from '../api/schema';
import { ActionsHeader } from '../components/actions-header';
import { ErrorAlert, Status } from '../components/alert';
import { allows, type Role } from '../session';

type SigningKey = components['schemas']['SigningKeyView'];

/** The organization's fwup public keys: firmware must be signed by one of them; an admin adds and deletes them. */
export function SigningKeys({ org, role }: { org: string; role: Role | undefined }) {
  const isAdmin = allows(role, 'admin');
  const path = { org_name: org };
  const [keys, setKeys] = useState<SigningKey[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [status, setStatus] = useState<string | null>(null);
  const [name, setName] = useState('');
  const [key, setKey] = useState('');

  const load = async () => {
    const {
      data,
      error: failure,
      response,
    } = await api.GET('/api/orgs/{org_name}/keys', { params: { path } });
    if (data) setKeys(data.data);
    else setError(errorText(failure, response.status));
  };
  useEffect(() => {
    setKeys(null);
    void load();
  }, [org]);

  const add = async (event: Event) => {
    event.preventDefault();
    setStatus(null);
    const { error: failure, response } = await api.POST('/api/orgs/{org_name}/keys', {
      params: { path },
      body: { name, key: key.trim() },
    });
    if (!response.ok) {
      setError(errorText(failure, response.status));
      return;
    }
    setError(null);
    setStatus(`Key ${name} added.`);
    setName('');
    setKey('');
    await load();
  };

  const remove = async (signingKey: SigningKey) => {
    if (!window.confirm(`Delete the signing key ${signingKey.name}?`)) return;
    const { error: failure, response } = await api.DELETE('/api/orgs/{org_name}/keys/{name}', {
      params: { path: { ...path, name: signingKey.name } },
    });
    if (!response.ok) {
      setError(errorText(failure, response.status));
      return;
    }
    setError(null);
    setStatus(`Key ${signingKey.name} deleted.`);
    await load();
  };

  return (
    <>
      <h1>Signing keys</h1>
      <p class="hint">
        fwup public keys: an uploaded firmware must be signed by one of them, and devices receive them.
      </p>
      <ErrorAlert message={error} />
      <Status message={status} />
      {keys !== null && keys.length === 0 && <p>No signing key yet.</p>}
      {keys !== null && keys.length > 0 && (
        <table>
          <caption class="visually-hidden">Signing keys of {org}</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Public key</th>
              <th scope="col">Added</th>
              {isAdmin && <ActionsHeader />}
            </tr>
          </thead>
          <tbody>
            {keys.map((signingKey) => (
              <tr key={signingKey.name}>
                <th scope="row">{signingKey.name}</th>
                <td class="mono">{signingKey.key}</td>
                <td>{new Date(signingKey.inserted_at).toLocaleString()}</td>
                {isAdmin && (
                  <td>
                    <button
                      type="button"
                      class="danger"
                      aria-label={`Delete key ${signingKey.name}`}
                      onClick={() => void remove(signingKey)}
                    >
                      Delete
                    </button>
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {isAdmin && (
        <form class="inline" onSubmit={(event) => void add(event)}>
          <h2>Add a key</h2>
          <label for="key-name">Name</label>
          <input
            id="key-name"
            required
            maxLength={255}
            value={name}
            onInput={(e) => setName(e.currentTarget.value)}
          />
          <label for="key-value">Public key (fwup-key.pub)</label>
          <input
            id="key-value"
            required
            maxLength={64}
            class="mono wide"
            value={key}
            onInput={(e) => setKey(e.currentTarget.value)}
          />
          <button type="submit">Add key</button>
        </form>
      )}
    </>
  );
}
