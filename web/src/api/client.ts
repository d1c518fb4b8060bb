import createClient, { type Middleware } from 'openapi-fetch';
import type { paths } from './schema';

/** The CSRF token of the signed-in session: sent with every request that changes something. */
let csrfToken: string | null = null;
/** Called when the server no longer knows the session (expired, signed out elsewhere). */
let onSignedOut: () => void = () => undefined;

export function setCsrfToken(token: string | null): void {
  csrfToken = token;
}

/** The session's CSRF token, for a request made without the client (a file upload that reports its progress). */
export function currentCsrfToken(): string | null {
  return csrfToken;
}

export function whenSignedOut(callback: () => void): void {
  onSignedOut = callback;
}

const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

const session: Middleware = {
  onRequest({ request }) {
    if (!READS.has(request.method) && csrfToken !== null) request.headers.set('X-CSRF-Token', csrfToken);
    return request;
  },
  onResponse({ request, response }) {
    if (response.status === 401 && !request.url.endsWith('/api/session')) onSignedOut();
    return response;
  },
};

/** fleethub's API, typed from its own OpenAPI document (generated at build time into schema.d.ts). */
export const api = createClient<paths>({ baseUrl: '', credentials: 'same-origin' });
api.use(session);

/**
 * The contract's error bodies, as words for a person; `labels` names a page's fields as its form does (e.g.
 * `verification_cert` → "Verification certificate"), other fields are named as the API names them.
 */
export function errorText(error: unknown, status?: number, labels: Record<string, string> = {}): string {
  if (typeof error === 'object' && error !== null) {
    const body = error as { error?: unknown; errors?: unknown };
    if (body.error === 'unauthorized') return 'You are signed out, or your credentials are wrong.';
    if (body.error === 'forbidden') return 'This token may only read.';
    if (typeof body.errors === 'object' && body.errors !== null) {
      const errors = body.errors as Record<string, unknown>;
      if (typeof errors.detail === 'string') return sentence(errors.detail);
      return Object.entries(errors)
        .map(
          ([field, messages]) =>
            `${labels[field] ?? field.replaceAll('_', ' ')} ${Array.isArray(messages) ? messages.join(', ') : ''}`,
        )
        .map(sentence)
        .join(' ');
    }
  }
  return status === undefined ? 'The server could not be reached.' : `The server answered ${status}.`;
}

function sentence(text: string): string {
  const trimmed = text.trim();
  const capital = trimmed.charAt(0).toUpperCase() + trimmed.slice(1);
  return /[.!?]$/.test(capital) ? capital : `${capital}.`;
}
