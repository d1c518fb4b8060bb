import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../api/client';
import type { components } from '../api/schema';
import { ActionsHeader } from '../components/actions-header';
import { ErrorAlert, Status } from '../components/alert';
import { ProductNav } from '../components/product-nav';
import { allows, type Role } from '../session';

type Script = components['schemas']['ScriptView'];

/** The product's support scripts: listed, created and edited (manage), and sent to a device with its output shown. */
export function Scripts({ org, product, role }: { org: string; product: string; role: Role | undefined }) {
  const canManage = allows(role, 'manage');
  const path = { org_name: org, product_name: product };
  const [scripts, setScripts] = useState<Script[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [status, setStatus] = useState<string | null>(null);
  const [editing, setEditing] = useState<Script | null>(null);
  const [name, setName] = useState('');
  const [tags, setTags] = useState('');
  const [text, setText] = useState('');
  const [target, setTarget] = useState('');
  const [runScript, setRunScript] = useState('');
  const [output, setOutput] = useState<string | null>(null);
  const [running, setRunning] = useState(false);

  const load = async () => {
    const {
      data,
      error: failure,
      response,
    } = await api.GET('/api/orgs/{org_name}/products/{product_name}/scripts', {
      params: { path, query: { 'pagination[page_size]': 100 } },
    });
    if (data) setScripts(data.data);
    else setError(errorText(failure, response.status));
  };
  useEffect(() => {
    setScripts(null);
    void load();
  }, [org, product]);

  const edit = (script: Script | null) => {
    setEditing(script);
    setName(script?.name ?? '');
    setTags(script?.tags ?? '');
    setText(script?.text ?? '');
  };

  const save = async (event: Event) => {
    event.preventDefault();
    setError(null);
    setStatus(null);
    const body = { name, tags, text };
    const { error: failure, response } =
      editing === null
        ? await api.POST('/api/orgs/{org_name}/products/{product_name}/scripts', { params: { path }, body })
        : await api.PATCH('/api/orgs/{org_name}/products/{product_name}/scripts/{id}', {
            params: { path: { ...path, id: editing.id } },
            body,
          });
    if (!response.ok) {
      setError(errorText(failure, response.status));
      return;
    }
    setStatus(editing === null ? `Script ${name} created.` : `Script ${name} saved.`);
    edit(null);
    await load();
  };

  const run = async (event: Event) => {
    event.preventDefault();
    setError(null);
    setOutput(null);
    setRunning(true);
    const {
      data,
      error: failure,
      response,
    } = await api.POST(
      '/api/orgs/{org_name}/products/{product_name}/devices/{identifier}/scripts/{name_or_id}',
      { params: { path: { ...path, identifier: target.trim(), name_or_id: runScript } }, parseAs: 'text' },
    );
    setRunning(false);
    if (response.ok) setOutput(data ?? '');
    else setError(errorText(typeof failure === 'string' ? parseJson(failure) : failure, response.status));
  };

  return (
    <>
      <h1>{product}</h1>
      <ProductNav org={org} product={product} current="scripts" />
      <ErrorAlert message={error} />
      <Status message={status} />
      {scripts !== null && scripts.length === 0 && <p>No support scripts yet.</p>}
      {scripts !== null && scripts.length > 0 && (
        <table>
          <caption class="visually-hidden">Support scripts of {product}</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Tags</th>
              <th scope="col">Created by</th>
              {canManage && <ActionsHeader />}
            </tr>
          </thead>
          <tbody>
            {scripts.map((script) => (
              <tr key={script.id}>
                <th scope="row">{script.name}</th>
                <td>{script.tags || '—'}</td>
                <td>{script.created_by?.name ?? '—'}</td>
                {canManage && (
                  <td>
                    <button type="button" class="secondary" onClick={() => edit(script)}>
                      Edit {script.name}
                    </button>
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {canManage && (
        <form onSubmit={(event) => void save(event)}>
          <fieldset>
            <legend>{editing === null ? 'New script' : `Edit ${editing.name}`}</legend>
            <label for="script-name">Name</label>
            <input
              id="script-name"
              required
              maxLength={255}
              value={name}
              onInput={(e) => setName(e.currentTarget.value)}
            />
            <label for="script-tags">Tags (comma-separated)</label>
            <input id="script-tags" value={tags} onInput={(e) => setTags(e.currentTarget.value)} />
            <label for="script-text">Elixir code</label>
            <textarea
              id="script-text"
              required
              rows={6}
              class="mono"
              value={text}
              onInput={(e) => setText(e.currentTarget.value)}
            />
            <div class="actions">
              <button type="submit">{editing === null ? 'Create script' : 'Save script'}</button>
              {editing !== null && (
                <button type="button" class="secondary" onClick={() => edit(null)}>
                  Cancel
                </button>
              )}
            </div>
          </fieldset>
        </form>
      )}
      {scripts !== null && scripts.length > 0 && (
        <form onSubmit={(event) => void run(event)}>
          <fieldset>
            <legend>Send a script to a device</legend>
            <label for="run-device">Device identifier</label>
            <input
              id="run-device"
              required
              value={target}
              onInput={(e) => setTarget(e.currentTarget.value)}
            />
            <label for="run-script">Script</label>
            <select
              id="run-script"
              required
              value={runScript}
              onChange={(e) => setRunScript(e.currentTarget.value)}
            >
              <option value="">choose a script</option>
              {scripts.map((script) => (
                <option key={script.id} value={script.id}>
                  {script.name}
                </option>
              ))}
            </select>
            <button type="submit" disabled={running}>
              {running ? 'Waiting for the device…' : 'Send script'}
            </button>
          </fieldset>
        </form>
      )}
      {output !== null && (
        <section aria-label="Script output">
          <h2>Output</h2>
          <pre class="output">{output}</pre>
        </section>
      )}
    </>
  );
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
