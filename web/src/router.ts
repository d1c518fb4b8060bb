import { useEffect, useState } from 'preact/hooks';

const NAVIGATED = 'fleethub:navigated';

/** Goes to a console path without reloading the page (History API). */
export function navigate(path: string, replace = false): void {
  if (replace) history.replaceState(null, '', path);
  else history.pushState(null, '', path);
  window.dispatchEvent(new Event(NAVIGATED));
}

/** The current path and query, following navigation and the browser's back and forward buttons. */
export function useLocation(): { path: string; search: URLSearchParams } {
  const read = () => ({ path: location.pathname, search: new URLSearchParams(location.search) });
  const [current, setCurrent] = useState(read);
  useEffect(() => {
    const update = () => setCurrent(read());
    window.addEventListener('popstate', update);
    window.addEventListener(NAVIGATED, update);
    return () => {
      window.removeEventListener('popstate', update);
      window.removeEventListener(NAVIGATED, update);
    };
  }, []);
  return current;
}

/** Matches `path` against a pattern such as `/orgs/:org/products/:product`; the decoded parameters, or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const want = pattern.split('/');
  const got = path.replace(/\/$/, '').split('/');
  if (want.length !== got.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    if (want[i].startsWith(':')) {
      if (got[i] === '') return null;
      try {
        params[want[i].slice(1)] = decodeURIComponent(got[i]);
      } catch {
        return null;
      }
    } else if (want[i] !== got[i]) return null;
  }
  return params;
}

/** A path segment, encoded. */
export const seg = (value: string): string => encodeURIComponent(value);

/**
 * Goes to a server-paged list (`base`) with these URL parameters changed (empty: removed); any change other than the
 * page itself starts again at page 1.
 */
export function navigateWithParams(
  base: string,
  search: URLSearchParams,
  changes: Record<string, string>,
): void {
  const next = new URLSearchParams(search);
  for (const [name, value] of Object.entries(changes)) {
    if (value === '') next.delete(name);
    else next.set(name, value);
  }
  if (!('page' in changes)) next.delete('page');
  const query = next.toString();
  navigate(query === '' ? base : `${base}?${query}`);
}
