import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../api/client';
import type { components } from '../api/schema';
import { ActionsHeader } from './actions-header';
import { ErrorAlert, Status } from './alert';

type BrowserSession = components['schemas']['BrowserSessionView'];

const when = (timestamp: string) => new Date(timestamp).toLocaleString();

/** The account's browser sessions (this one marked): when and from where they signed in, each can be ended. */
export function BrowserSessionsSection() {
  const [sessions, setSessions] = useState<BrowserSession[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [status, setStatus] = useState<string | null>(null);

  const load = async () => {
    const { data, error: failure, response } = await api.GET('/api/users/me/sessions');
    if (data) setSessions(data.data);
    else setError(errorText(failure, response.status));
  };
  useEffect(() => void load(), []);

  const end = async (session: BrowserSession) => {
    setError(null);
    const { error: failure, response } = await api.DELETE('/api/users/me/sessions/{id}', {
      params: { path: { id: session.id } },
    });
    if (!response.ok) {
      setError(errorText(failure, response.status));
      return;
    }
    setStatus(`The session signed in ${when(session.inserted_at)} was ended.`);
    await load();
  };

  return (
    <section aria-labelledby="sessions-heading">
      <h2 id="sessions-heading">Browser sessions</h2>
      <ErrorAlert message={error} />
      <Status message={status} />
      {sessions !== null && (
        <table>
          <caption class="visually-hidden">Your browser sessions</caption>
          <thead>
            <tr>
              <th scope="col">Signed in</th>
              <th scope="col">From</th>
              <th scope="col">Browser</th>
              <th scope="col">Last used</th>
              <ActionsHeader />
            </tr>
          </thead>
          <tbody>
            {sessions.map((session) => (
              <tr key={session.id}>
                <th scope="row">
                  {when(session.inserted_at)}
                  {session.current && <span class="hint"> (this session)</span>}
                </th>
                <td>{session.source_address ?? ''}</td>
                <td class="user-agent">{session.user_agent ?? ''}</td>
                <td>{when(session.last_seen_at)}</td>
                <td>
                  {!session.current && (
                    <button
                      type="button"
                      class="danger"
                      aria-label={`End the session signed in ${when(session.inserted_at)}`}
                      onClick={() => void end(session)}
                    >
                      End
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
