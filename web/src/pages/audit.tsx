import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../api/client';
import type { components } from '../api/schema';
import { ErrorAlert } from '../components/alert';
import { navigate, seg } from '../router';

type Entry = components['schemas']['AuditLogView'];
type Pagination = components['schemas']['PaginationView'];

const actorOf = (entry: Entry) => entry.actor.email ?? entry.actor.identifier ?? entry.actor.type;

/** What was done in the organization, newest first, by whom (admin); the same list as CSV. */
export function AuditLog({ org, search }: { org: string; search: URLSearchParams }) {
  const [entries, setEntries] = useState<Entry[] | null>(null);
  const [pagination, setPagination] = useState<Pagination | null>(null);
  const [error, setError] = useState<string | null>(null);
  const page = Math.max(1, Number(search.get('page')) || 1);
  const base = `/orgs/${seg(org)}/audit`;

  useEffect(() => {
    setError(null);
    let newest = true;
    void api
      .GET('/api/orgs/{org_name}/audit_logs', {
        params: { path: { org_name: org }, query: { 'pagination[page]': page, 'pagination[page_size]': 50 } },
      })
      .then(({ data, error: failure, response }) => {
        if (!newest) return;
        if (data) {
          setEntries(data.data);
          setPagination(data.pagination ?? null);
        } else setError(errorText(failure, response.status));
      });
    return () => {
      newest = false;
    };
  }, [org, page]);

  return (
    <>
      <h1>Audit log</h1>
      <p>
        <a href={`/api/orgs/${seg(org)}/audit_logs.csv`} download>
          Export as CSV
        </a>
      </p>
      <ErrorAlert message={error} />
      {pagination !== null && (
        <p role="status" class="count">
          {pagination.total_entries.toLocaleString()} entries, page {pagination.page_number} of{' '}
          {Math.max(1, pagination.total_pages)}
        </p>
      )}
      {entries !== null && entries.length > 0 && (
        <table>
          <caption class="visually-hidden">Audit log of {org}</caption>
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Who</th>
              <th scope="col">Action</th>
              <th scope="col">Target</th>
              <th scope="col">Details</th>
            </tr>
          </thead>
          <tbody>
            {entries.map((entry) => (
              <tr key={entry.id}>
                <td>{new Date(entry.inserted_at).toLocaleString()}</td>
                <td>{actorOf(entry)}</td>
                <th scope="row">{entry.action}</th>
                <td>
                  {entry.target_type} {entry.target_id}
                </td>
                <td class="mono">
                  {Object.keys(entry.details).length > 0 ? JSON.stringify(entry.details) : ''}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {pagination !== null && pagination.total_pages > 1 && (
        <nav class="pager" aria-label="Pages">
          <button
            type="button"
            class="secondary"
            disabled={page <= 1}
            onClick={() => navigate(`${base}?page=${page - 1}`)}
          >
            Newer
          </button>
          <button
            type="button"
            class="secondary"
            disabled={page >= pagination.total_pages}
            onClick={() => navigate(`${base}?page=${page + 1}`)}
          >
            Older
          </button>
        </nav>
      )}
    </>
  );
}
