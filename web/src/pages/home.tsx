import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../api/client';
import { ErrorAlert } from '../components/alert';
import { navigate, seg } from '../router';
import type { OrgWithRole } from '../session';

/** Where a signed-in user lands: their first organization's products, or the creation of one. */
export function Home({ orgs, onOrgCreated }: { orgs: OrgWithRole[]; onOrgCreated: () => Promise<void> }) {
  const [name, setName] = useState('');
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    if (orgs.length > 0) navigate(`/orgs/${seg(orgs[0].name)}/products`, true);
  }, [orgs]);
  if (orgs.length > 0) return null;

  const create = async (event: Event) => {
    event.preventDefault();
    setError(null);
    const { data, error: failure, response } = await api.POST('/api/orgs', { body: { name } });
    if (!data) {
      setError(errorText(failure, response.status));
      return;
    }
    await onOrgCreated();
  };

  return (
    <>
      <h1>Welcome</h1>
      <p>You are not a member of any organization yet. Ask an admin for an invitation, or create one.</p>
      <form class="inline" onSubmit={(event) => void create(event)}>
        <label for="org-name">Organization name</label>
        <input
          id="org-name"
          required
          pattern="[A-Za-z0-9_\-]{1,64}"
          value={name}
          onInput={(event) => setName(event.currentTarget.value)}
        />
        <button type="submit">Create organization</button>
        <ErrorAlert message={error} />
      </form>
    </>
  );
}
