import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../api/client';
import type { components } from '../api/schema';
import { ActionsHeader } from '../components/actions-header';
import { ErrorAlert, Status } from '../components/alert';
import { BrowserSessionsSection } from '../components/browser-sessions';
import { TwoFactorSection } from '../components/two-factor';
import type { Session } from '../session';

type Token = components['schemas']['TokenView'];
type Scope = Token['scope'];

const when = (timestamp: string | null, never: string) =>
  timestamp === null ? never : new Date(timestamp).toLocaleString();

/**
 * The signed-in user's personal access tokens (listed, created with the token shown once, revoked) and two-factor
 * sign-in.
 */
export function Account({ session }: { session: Session }) {
  const [tokens, setTokens] = useState<Token[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [note, setNote] = useState('');
  const [scope, setScope] = useState<Scope>('all');
  const [created, setCreated] = useState<string | null>(null);
  const [status, setStatus] = useState<string | null>(null);

  const load = async () => {
    const { data, error: failure, response } = await api.GET('/api/users/me/tokens');
    if (data) setTokens(data.data);
    else setError(errorText(failure, response.status));
  };
  useEffect(() => void load(), []);

  const create = async (event: Event) => {
    event.preventDefault();
    setError(null);
    setStatus(null);
    const {
      data,
      error: failure,
      response,
    } = await api.POST('/api/users/me/tokens', {
      body: { note: note.trim() === '' ? null : note, scope },
    });
    if (!data) {
      setError(errorText(failure, response.status));
      return;
    }
    setCreated(data.data.token);
    setNote('');
    await load();
  };

  const revoke = async (token: Token) => {
    setError(null);
    const { error: failure, response } = await api.DELETE('/api/users/me/tokens/{id}', {
      params: { path: { id: token.id } },
    });
    if (!response.ok) {
      setError(errorText(failure, response.status));
      return;
    }
    setStatus(`Token ${token.note ?? token.id} revoked.`);
    await load();
  };

  return (
    <>
      <h1>Account</h1>
      <dl class="facts">
        <dt>Name</dt>
        <dd>{session.name}</dd>
        <dt>Email</dt>
        <dd>{session.email}</dd>
        <dt>Username</dt>
        <dd>{session.username}</dd>
      </dl>
      <h2>Personal access tokens</h2>
      <p class="hint">For scripts, CI and the NervesHub CLI. A token is shown once, when it is created.</p>
      <ErrorAlert message={error} />
      <Status message={status} />
      {created !== null && (
        <div class="created" role="region" aria-label="New token">
          <p>Copy the new token now: it will not be shown again.</p>
          <output>{created}</output>
          <button type="button" class="secondary" onClick={() => setCreated(null)}>
            Done
          </button>
        </div>
      )}
      {tokens !== null && tokens.length === 0 && <p>No tokens.</p>}
      {tokens !== null && tokens.length > 0 && (
        <table>
          <caption class="visually-hidden">Your personal access tokens</caption>
          <thead>
            <tr>
              <th scope="col">Note</th>
              <th scope="col">Scope</th>
              <th scope="col">Created</th>
              <th scope="col">Last used</th>
              <th scope="col">From</th>
              <th scope="col">Expires</th>
              <ActionsHeader />
            </tr>
          </thead>
          <tbody>
            {tokens.map((token) => (
              <tr key={token.id}>
                <th scope="row">{token.note ?? <span class="hint">(no note)</span>}</th>
                <td>{token.scope}</td>
                <td>{when(token.inserted_at, '')}</td>
                <td>{when(token.last_used_at, 'never')}</td>
                <td>{token.last_used_address ?? ''}</td>
                <td>{when(token.expires_at, 'never')}</td>
                <td>
                  <button
                    type="button"
                    class="danger"
                    aria-label={`Revoke token ${token.note ?? token.id}`}
                    onClick={() => void revoke(token)}
                  >
                    Revoke
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <form class="inline" onSubmit={(event) => void create(event)}>
        <h3>New token</h3>
        <label for="token-note">Note</label>
        <input id="token-note" maxLength={255} value={note} onInput={(e) => setNote(e.currentTarget.value)} />
        <label for="token-scope">Scope</label>
        <select id="token-scope" value={scope} onChange={(e) => setScope(e.currentTarget.value as Scope)}>
          <option value="all">all: read and change</option>
          <option value="read">read: GET calls only</option>
        </select>
        <button type="submit">Create token</button>
      </form>
      <TwoFactorSection />
      <BrowserSessionsSection />
    </>
  );
}
