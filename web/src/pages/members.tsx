import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../api/client';
import type { components } from '../api/schema';
import { ActionsHeader } from '../components/actions-header';
import { ErrorAlert, Status } from '../components/alert';
import { OrgPolicySection } from '../components/org-policy';
import { allows, type Role } from '../session';

type Member = components['schemas']['MemberView'];
type Invitation = components['schemas']['InvitationView'];
const ROLES: Role[] = ['view', 'manage', 'admin'];

const twoFactorText = (entry: { two_factor: boolean; compliant: boolean } | undefined) =>
  entry === undefined
    ? ''
    : entry.two_factor
      ? 'on'
      : entry.compliant
        ? 'off'
        : 'off (refused: the policy requires it)';

/** Who is in the organization; an admin changes roles, removes members, invites and revokes invitations. */
export function Members({ org, role, me }: { org: string; role: Role | undefined; me: string }) {
  const isAdmin = allows(role, 'admin');
  const path = { org_name: org };
  const [members, setMembers] = useState<Member[] | null>(null);
  const [invitations, setInvitations] = useState<Invitation[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [status, setStatus] = useState<string | null>(null);
  const [email, setEmail] = useState('');
  const [inviteRole, setInviteRole] = useState<Role>('view');
  /** For an admin: each member's two-factor sign-in, and whether it meets the policy. */
  const [security, setSecurity] = useState<Map<string, { two_factor: boolean; compliant: boolean }> | null>(
    null,
  );

  const load = async () => {
    const listed = await api.GET('/api/orgs/{org_name}/users', { params: { path } });
    if (listed.data) setMembers(listed.data.data);
    else setError(errorText(listed.error, listed.response.status));
    if (isAdmin) {
      const pending = await api.GET('/api/orgs/{org_name}/invitations', { params: { path } });
      if (pending.data) setInvitations(pending.data.data);
      const secured = await api.GET('/api/orgs/{org_name}/policies/members', { params: { path } });
      if (secured.data) setSecurity(new Map(secured.data.data.map((m) => [m.email, m])));
    }
  };
  useEffect(() => {
    setMembers(null);
    setInvitations(null);
    setError(null);
    void load();
  }, [org, isAdmin]);

  const done = async (response: Response, failure: unknown, message: string) => {
    if (response.ok) {
      setStatus(message);
      setError(null);
      await load();
    } else {
      setStatus(null);
      setError(errorText(failure, response.status));
    }
  };

  const changeRole = async (member: Member, next: Role) => {
    const { error: failure, response } = await api.PUT('/api/orgs/{org_name}/users/{email}', {
      params: { path: { ...path, email: member.email } },
      body: { role: next },
    });
    await done(response, failure, `${member.email} is now ${next}.`);
  };

  const remove = async (member: Member) => {
    if (!window.confirm(`Remove ${member.email} from ${org}?`)) return;
    const { error: failure, response } = await api.DELETE('/api/orgs/{org_name}/users/{email}', {
      params: { path: { ...path, email: member.email } },
    });
    await done(response, failure, `${member.email} was removed.`);
  };

  const endSignIns = async (member: Member) => {
    if (!window.confirm(`End every browser session and revoke every token of ${member.email}?`)) return;
    const {
      data,
      error: failure,
      response,
    } = await api.DELETE('/api/orgs/{org_name}/users/{email}/credentials', {
      params: { path: { ...path, email: member.email } },
    });
    const counts = data
      ? `${data.data.sessions_ended} session(s) ended, ${data.data.tokens_revoked} token(s) revoked`
      : '';
    await done(response, failure, `Sign-ins of ${member.email} ended: ${counts}.`);
  };

  const invite = async (event: Event) => {
    event.preventDefault();
    const { error: failure, response } = await api.POST('/api/orgs/{org_name}/users/invite', {
      params: { path },
      body: { email, role: inviteRole },
    });
    if (response.ok) setEmail('');
    await done(response, failure, `Invitation sent to ${email}.`);
  };

  const revoke = async (invitation: Invitation) => {
    const { error: failure, response } = await api.DELETE('/api/orgs/{org_name}/invitations/{email}', {
      params: { path: { ...path, email: invitation.email } },
    });
    await done(response, failure, `The invitation of ${invitation.email} was revoked.`);
  };

  return (
    <>
      <h1>Members</h1>
      <ErrorAlert message={error} />
      <Status message={status} />
      {members !== null && (
        <table>
          <caption class="visually-hidden">Members of {org}</caption>
          <thead>
            <tr>
              <th scope="col">Email</th>
              <th scope="col">Name</th>
              <th scope="col">Role</th>
              {isAdmin && <th scope="col">Two-factor</th>}
              {isAdmin && <ActionsHeader />}
            </tr>
          </thead>
          <tbody>
            {members.map((member) => (
              <tr key={member.email}>
                <th scope="row">{member.email}</th>
                <td>{member.name}</td>
                <td>
                  {isAdmin ? (
                    <select
                      aria-label={`Role of ${member.email}`}
                      value={member.role}
                      onChange={(event) => void changeRole(member, event.currentTarget.value as Role)}
                    >
                      {ROLES.map((r) => (
                        <option key={r} value={r}>
                          {r}
                        </option>
                      ))}
                    </select>
                  ) : (
                    member.role
                  )}
                </td>
                {isAdmin && <td>{twoFactorText(security?.get(member.email))}</td>}
                {isAdmin && (
                  <td>
                    <button
                      type="button"
                      class="danger"
                      aria-label={member.email === me ? `Leave ${org}` : `Remove ${member.email}`}
                      onClick={() => void remove(member)}
                    >
                      {member.email === me ? 'Leave' : 'Remove'}
                    </button>{' '}
                    {member.email !== me && (
                      <button
                        type="button"
                        class="secondary"
                        aria-label={`End sign-ins of ${member.email}`}
                        onClick={() => void endSignIns(member)}
                      >
                        End sign-ins
                      </button>
                    )}
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {isAdmin && (
        <>
          <h2>Invitations</h2>
          {invitations !== null && invitations.length === 0 && <p>No invitation is waiting.</p>}
          {invitations !== null && invitations.length > 0 && (
            <ul>
              {invitations.map((invitation) => (
                <li key={invitation.email}>
                  {invitation.email} as {invitation.role}{' '}
                  <button
                    type="button"
                    class="secondary"
                    aria-label={`Revoke the invitation of ${invitation.email}`}
                    onClick={() => void revoke(invitation)}
                  >
                    Revoke
                  </button>
                </li>
              ))}
            </ul>
          )}
          <form class="inline" onSubmit={(event) => void invite(event)}>
            <label for="invite-email">Email</label>
            <input
              id="invite-email"
              type="email"
              required
              value={email}
              onInput={(e) => setEmail(e.currentTarget.value)}
            />
            <label for="invite-role">Role</label>
            <select
              id="invite-role"
              value={inviteRole}
              onChange={(e) => setInviteRole(e.currentTarget.value as Role)}
            >
              {ROLES.map((r) => (
                <option key={r} value={r}>
                  {r}
                </option>
              ))}
            </select>
            <button type="submit">Invite</button>
          </form>
          <OrgPolicySection org={org} onSaved={() => void load()} />
        </>
      )}
    </>
  );
}
