import { useState } from 'preact/hooks';
import { api, errorText } from '../api/client';
import { ErrorAlert } from '../components/alert';
import type { Session } from '../session';

/** Email and password, through the server's login rules (rate limits included); the session is a cookie. */
export function SignIn({ onSignedIn }: { onSignedIn: (session: Session) => void }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    const { data, error: failure, response } = await api.POST('/api/session', { body: { email, password } });
    setBusy(false);
    if (data) onSignedIn(data.data);
    else if (response.status === 401) setError('Wrong email or password.');
    else setError(errorText(failure, response.status));
  };

  return (
    <main class="sign-in">
      <h1>Sign in to fleethub</h1>
      <form onSubmit={(event) => void submit(event)}>
        <label for="email">Email</label>
        <input
          id="email"
          type="email"
          autocomplete="username"
          required
          value={email}
          onInput={(event) => setEmail(event.currentTarget.value)}
        />
        <label for="password">Password</label>
        <input
          id="password"
          type="password"
          autocomplete="current-password"
          required
          value={password}
          onInput={(event) => setPassword(event.currentTarget.value)}
        />
        <ErrorAlert message={error} />
        <button type="submit" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
