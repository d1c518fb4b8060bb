import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../api/client';
import type { components } from '../api/schema';
import { ErrorAlert, Status } from './alert';

type Policy = components['schemas']['OrgPolicyView'];
type Scope = Policy['allowed_token_scopes'][number];
const SCOPES: { scope: Scope; label: string }[] = [
  { scope: 'all', label: 'all (read and change)' },
  { scope: 'read', label: 'read (GET calls only)' },
];

/** An admin's form for the organization's sign-in and token policies (`PATCH .../policies`). */
export function OrgPolicySection({ org, onSaved }: { org: string; onSaved: () => void }) {
  const path = { org_name: org };
  const [policy, setPolicy] = useState<Policy | null>(null);
  const [requireTwoFactor, setRequireTwoFactor] = useState(false);
  const [maxDays, setMaxDays] = useState('');
  const [scopes, setScopes] = useState<Scope[]>(['all', 'read']);
  const [error, setError] = useState<string | null>(null);
  const [status, setStatus] = useState<string | null>(null);

  const show = (next: Policy) => {
    setPolicy(next);
    setRequireTwoFactor(next.require_two_factor);
    setMaxDays(next.max_token_lifetime_days === null ? '' : String(next.max_token_lifetime_days));
    setScopes(next.allowed_token_scopes);
  };
  useEffect(() => {
    void api
      .GET('/api/orgs/{org_name}/policies', { params: { path } })
      .then(({ data, error: failure, response }) => {
        if (data) show(data.data);
        else setError(errorText(failure, response.status));
      });
  }, [org]);

  const save = async (event: Event) => {
    event.preventDefault();
    setError(null);
    setStatus(null);
    const days = maxDays.trim() === '' ? null : Number(maxDays);
    const {
      data,
      error: failure,
      response,
    } = await api.PATCH('/api/orgs/{org_name}/policies', {
      params: { path },
      body: {
        require_two_factor: requireTwoFactor,
        max_token_lifetime_days: days,
        allowed_token_scopes: scopes,
      },
    });
    if (!data) {
      setError(
        errorText(failure, response.status, {
          require_two_factor: 'Requiring two-factor sign-in',
          max_token_lifetime_days: 'The maximum token age',
          allowed_token_scopes: 'The accepted scopes',
        }),
      );
      return;
    }
    show(data.data);
    setStatus('Sign-in policy saved: it holds from the next request on.');
    onSaved();
  };

  const toggleScope = (scope: Scope, on: boolean) =>
    setScopes((current) => (on ? [...new Set([...current, scope])] : current.filter((s) => s !== scope)));

  return (
    <section aria-labelledby="policy-heading">
      <h2 id="policy-heading">Sign-in policy</h2>
      <ErrorAlert message={error} />
      <Status message={status} />
      {policy !== null && (
        <form class="policy" onSubmit={(event) => void save(event)}>
          <label class="check">
            <input
              type="checkbox"
              checked={requireTwoFactor}
              onChange={(event) => setRequireTwoFactor(event.currentTarget.checked)}
            />
            Members must have two-factor sign-in on
          </label>
          <label for="policy-max-days">Personal access tokens: maximum age in days (empty: no limit)</label>
          <input
            id="policy-max-days"
            type="number"
            min={1}
            max={3650}
            value={maxDays}
            onInput={(event) => setMaxDays(event.currentTarget.value)}
          />
          <fieldset class="scopes">
            <legend>Personal access token scopes accepted</legend>
            {SCOPES.map(({ scope, label }) => (
              <label class="check" key={scope}>
                <input
                  type="checkbox"
                  checked={scopes.includes(scope)}
                  onChange={(event) => toggleScope(scope, event.currentTarget.checked)}
                />
                {label}
              </label>
            ))}
          </fieldset>
          <button type="submit">Save policy</button>
        </form>
      )}
    </section>
  );
}
