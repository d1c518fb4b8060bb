import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../api/client';
import { ErrorAlert } from '../components/alert';
import type { Session } from '../session';

/** Whether a 422 names the two-factor `code` (missing or wrong), as the server answers after a right password. */
const asksForCode = (failure: unknown) =>
  typeof failure === 'object' &&
  failure !== null &&
  typeof (failure as { errors?: unknown }).errors === 'object' &&
  'code' in ((failure as { errors: object }).errors ?? {});

/**
 * Email and password (and a two-factor code when the account has it), through the server's login rules (rate limits
 * included); the session is a cookie.
 */
export function SignIn({ onSignedIn }: { onSignedIn: (session: Session) => void }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  /** Shown once the server says this account needs a second factor. */
  const [needsCode, setNeedsCode] = useState(false);
  const [code, setCode] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  /** The identity provider's sign-in, when the server has single sign-on. */
  const [sso, setSso] = useState<{ name: string; url: string } | null>(null);
  useEffect(() => {
    void api.GET('/api/auth/single_sign_on').then(({ data }) => {
      if (data?.data.enabled && data.data.start_url !== null) {
        setSso({ name: data.data.name ?? 'single sign-on', url: data.data.start_url });
      }
    });
  }, []);

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    const {
      data,
      error: failure,
      response,
    } = await api.POST('/api/session', {
      body: { email, password, ...(needsCode && { code }) },
    });
    setBusy(false);
    if (data) onSignedIn(data.data);
    else if (response.status === 401) setError('Wrong email or password.');
    else if (response.status === 422 && asksForCode(failure)) {
      setError(
        needsCode
          ? 'That code is wrong or was already used: type the current one from your app, or a backup code.'
          : 'This account uses two-factor sign-in: type the code your authenticator app shows.',
      );
      setNeedsCode(true);
      setCode('');
    } else setError(errorText(failure, response.status));
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
        {needsCode && (
          <>
            <label for="code">Two-factor code</label>
            <input
              id="code"
              autocomplete="one-time-code"
              required
              autoFocus
              maxLength={64}
              value={code}
              onInput={(event) => setCode(event.currentTarget.value)}
            />
          </>
        )}
        <ErrorAlert message={error} />
        <button type="submit" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
      {sso !== null && (
        <p class="single-sign-on">
          <a class="button" href={sso.url}>
            Sign in with {sso.name}
          </a>
        </p>
      )}
    </main>
  );
}
