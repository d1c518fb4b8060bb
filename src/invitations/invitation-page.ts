import { alertBox, escapeHtml, type HtmlPage, htmlPage } from '../common/http/html-page';
import type { InvitationPageModel, InvitationProblem } from './invitations.service';

const PROBLEMS: Readonly<Record<InvitationProblem, [status: number, message: string]>> = {
  csrf: [403, 'This form has expired or was sent from another site. Check the details and send it again.'],
  credentials: [422, 'The password is incorrect.'],
  rate_limited: [429, 'Too many attempts. Wait a minute, then try again.'],
  fields: [422, 'Some fields need correcting: see the messages below each one.'],
  password_mismatch: [422, 'The two passwords differ.'],
};

const FIELD_LABELS: Readonly<Record<string, string>> = {
  name: 'Full name',
  username: 'Username',
  password: 'Password',
  email: 'Email',
};

function input(id: string, attributes: string, errors: readonly string[] | undefined, hint?: string): string {
  const hintId = hint ? `${id}-hint` : '';
  const errorId = errors?.length ? `${id}-error` : '';
  const described = [hintId, errorId].filter(Boolean).join(' ');
  return (
    `<label for="${id}">${escapeHtml(FIELD_LABELS[id] ?? 'Repeat the password')}</label>` +
    (hint ? `<span class="hint" id="${hintId}">${escapeHtml(hint)}</span>` : '') +
    (errorId ? `<span class="hint" id="${errorId}">${escapeHtml(errors!.join('; '))}</span>` : '') +
    `<input id="${id}" name="${id}" ${attributes}${described ? ` aria-describedby="${described}"` : ''}` +
    `${errorId ? ' aria-invalid="true"' : ''}>\n`
  );
}

function formPage(model: Extract<InvitationPageModel, { kind: 'form' }>, csrfToken: string): HtmlPage {
  const [status, message] = model.problem ? PROBLEMS[model.problem] : [200, undefined];
  const errors = model.fieldErrors ?? {};
  const values = model.values ?? { name: '', username: '' };
  const leftover = Object.entries(errors)
    .filter(([key]) => !['name', 'username', 'password'].includes(key))
    .map(([key, list]) => `${FIELD_LABELS[key] ?? key}: ${list.join('; ')}`);
  const fields = model.hasAccount
    ? '<p>This email has an account already: enter its password to join.</p>\n' +
      input('password', 'type="password" autocomplete="current-password" required', undefined)
    : input('name', `autocomplete="name" value="${escapeHtml(values.name)}"`, errors.name) +
      input(
        'username',
        `autocomplete="username" required value="${escapeHtml(values.username)}"`,
        errors.username,
        'Letters, digits, "_", "." or "-"',
      ) +
      input(
        'password',
        'type="password" autocomplete="new-password" required',
        errors.password,
        'At least 8 characters',
      ) +
      input(
        'password_confirmation',
        'type="password" autocomplete="new-password" required',
        model.problem === 'password_mismatch' ? ['differs from the password'] : undefined,
      );
  return htmlPage(
    status,
    `Join ${model.orgName} on fleethub`,
    `<p>You were invited to the organization <strong>${escapeHtml(model.orgName)}</strong> as ` +
      `<strong>${escapeHtml(model.role)}</strong>, for <strong>${escapeHtml(model.email)}</strong>.</p>\n` +
      alertBox(message && [message, ...leftover].join(' ')) +
      `<form method="post" action="/invitations/${escapeHtml(model.token)}">\n` +
      `<input type="hidden" name="_csrf_token" value="${escapeHtml(csrfToken)}">\n` +
      fields +
      `<div class="actions"><button type="submit">${model.hasAccount ? 'Join' : 'Create my account and join'}</button></div>\n` +
      '</form>',
  );
}

/** The HTML of the invitation page in the state the service answered. */
export function invitationPage(model: InvitationPageModel, csrfToken: string): HtmlPage {
  switch (model.kind) {
    case 'form':
      return formPage(model, csrfToken);
    case 'accepted':
      return htmlPage(
        200,
        `Welcome to ${model.orgName}`,
        `<p role="status">You are a member of ${escapeHtml(model.orgName)}. Sign in as ` +
          `${escapeHtml(model.email)} with the API (<code>POST /api/users/auth</code>) or a command-line tool.</p>`,
      );
    case 'invalid':
      return htmlPage(
        404,
        'This invitation is not valid',
        '<p>It may have expired, been used or withdrawn, or been mistyped. Ask an admin of the organization for a new one.</p>',
      );
  }
}
