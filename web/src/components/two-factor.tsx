import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../api/client';
import type { components } from '../api/schema';
import { ErrorAlert, Status } from './alert';

type TwoFactorStatus = components['schemas']['TwoFactorStatusView'];
type Enrolment = components['schemas']['TwoFactorEnrolmentView'];

const svgImage = (svg: string) => `data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg)}`;

/**
 * The account's two-factor sign-in: set up (scan the QR code, confirm with a first code, keep the backup codes
 * shown once), replace the backup codes, or turn it off; each change asks for a current code.
 */
export function TwoFactorSection() {
  const [state, setState] = useState<TwoFactorStatus | null>(null);
  const [enrolment, setEnrolment] = useState<Enrolment | null>(null);
  const [backupCodes, setBackupCodes] = useState<string[] | null>(null);
  const [code, setCode] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [status, setStatus] = useState<string | null>(null);

  const load = async () => {
    const { data, error: failure, response } = await api.GET('/api/users/me/two_factor');
    if (data) setState(data.data);
    else setError(errorText(failure, response.status));
  };
  useEffect(() => void load(), []);

  const start = async () => {
    setError(null);
    setStatus(null);
    const { data, error: failure, response } = await api.POST('/api/users/me/two_factor');
    if (data) setEnrolment(data.data);
    else setError(errorText(failure, response.status));
  };

  /** Sends the code to one of the routes that take one; on success, clears it and reloads the state. */
  const withCode = async (
    event: Event,
    send: (
      code: string,
    ) => Promise<{ data?: { data: { backup_codes?: string[] } }; error?: unknown; response: Response }>,
    done: string,
  ) => {
    event.preventDefault();
    setError(null);
    setStatus(null);
    const { data, error: failure, response } = await send(code);
    if (!response.ok) {
      setError(errorText(failure, response.status, { code: 'The code' }));
      return;
    }
    setCode('');
    setEnrolment(null);
    setBackupCodes(data?.data.backup_codes ?? null);
    setStatus(done);
    await load();
  };

  const codeField = (
    <>
      <label for="two-factor-code">Code from your authenticator app (or a backup code)</label>
      <input
        id="two-factor-code"
        autocomplete="one-time-code"
        inputMode="text"
        maxLength={64}
        required
        value={code}
        onInput={(event) => setCode(event.currentTarget.value)}
      />
    </>
  );

  return (
    <section aria-labelledby="two-factor-heading">
      <h2 id="two-factor-heading">Two-factor sign-in</h2>
      <ErrorAlert message={error} />
      <Status message={status} />
      {backupCodes !== null && (
        <div class="created" role="region" aria-label="Backup codes">
          <p>Keep these backup codes somewhere safe: each signs in once, and they will not be shown again.</p>
          <ul class="backup-codes">
            {backupCodes.map((c) => (
              <li key={c}>
                <code>{c}</code>
              </li>
            ))}
          </ul>
          <button type="button" class="secondary" onClick={() => setBackupCodes(null)}>
            Done
          </button>
        </div>
      )}
      {state !== null && !state.enabled && enrolment === null && (
        <>
          <p>Off: a password alone signs in to this account.</p>
          <button type="button" onClick={() => void start()}>
            Set up two-factor sign-in
          </button>
        </>
      )}
      {enrolment !== null && (
        <form
          class="enrolment"
          onSubmit={(event) =>
            void withCode(
              event,
              (c) => api.POST('/api/users/me/two_factor/confirm', { body: { code: c } }),
              'Two-factor sign-in is on.',
            )
          }
        >
          <p>Scan this code with an authenticator app, then type the 6-digit code it shows.</p>
          <img
            class="qr-code"
            src={svgImage(enrolment.qr_code_svg)}
            alt="QR code for your authenticator app"
          />
          <p>
            Or type this key into the app: <code class="totp-secret">{enrolment.secret}</code>
          </p>
          <div class="code-entry">
            {codeField}
            <button type="submit">Turn on</button>
          </div>
        </form>
      )}
      {state?.enabled && (
        <>
          <p>
            On since {new Date(state.enabled_at ?? '').toLocaleString()}: signing in needs a code from your
            app. {state.backup_codes_left} backup code{state.backup_codes_left === 1 ? '' : 's'} left.
          </p>
          <form class="inline" onSubmit={(event) => event.preventDefault()}>
            {codeField}
            <button
              type="submit"
              onClick={(event) =>
                void withCode(
                  event,
                  (c) => api.POST('/api/users/me/two_factor/backup_codes', { body: { code: c } }),
                  'New backup codes: the old ones no longer work.',
                )
              }
            >
              New backup codes
            </button>
            <button
              type="submit"
              class="danger"
              onClick={(event) =>
                void withCode(
                  event,
                  (c) => api.POST('/api/users/me/two_factor/disable', { body: { code: c } }),
                  'Two-factor sign-in is off.',
                )
              }
            >
              Turn off
            </button>
          </form>
        </>
      )}
    </section>
  );
}
