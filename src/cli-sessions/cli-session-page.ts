import { alertBox, escapeHtml, type HtmlPage, htmlPage } from '../common/http/html-page';
import type { CliSessionPageModel, FormProblem } from './cli-sessions.service';

const PROBLEMS: Readonly<Record<FormProblem, [status: number, message: string]>> = {
  csrf: [403, 'This form has expired or was sent from another site. Check the details and send it again.'],
  code: [422, 'The confirmation code does not match the one the command-line tool shows.'],
  credentials: [422, 'The email or password is incorrect.'],
  rate_limited: [429, 'Too many sign-in attempts. Wait a minute, then try again.'],
  incomplete: [422, 'Fill in the confirmation code, your email and your password.'],
  two_factor: [
    422,
    'Your account uses two-factor sign-in: type a current code from your authenticator app, or a backup code.',
  ],
};

function formPage(model: Extract<CliSessionPageModel, { kind: 'form' }>, csrfToken: string): HtmlPage {
  const [status, message] = model.problem ? PROBLEMS[model.problem] : [200, undefined];
  const left =
    model.attemptsLeft !== undefined && model.problem !== 'csrf'
      ? ` ${model.attemptsLeft} attempt${model.attemptsLeft === 1 ? '' : 's'} left.`
      : '';
  const codeInvalid = model.problem === 'code' ? ' aria-invalid="true"' : '';
  const credentialsInvalid = model.problem === 'credentials' ? ' aria-invalid="true"' : '';
  const twoFactorInvalid = model.problem === 'two_factor' ? ' aria-invalid="true"' : '';
  const described = model.problem ? 'form-error ' : '';
  return htmlPage(
    status,
    'Approve a command-line sign-in',
    `<p>A command-line tool (such as NervesHub's <code>nh</code>) asked to sign in to fleethub as you. ` +
      'Approve only if you started it yourself: type the confirmation code it shows, then your email and password.</p>\n' +
      alertBox(message && message + left) +
      `<form method="post" action="/auth/cli/${escapeHtml(model.token)}">\n` +
      `<input type="hidden" name="_csrf_token" value="${escapeHtml(csrfToken)}">\n` +
      '<label for="confirmation_code">Confirmation code</label>' +
      `<span class="hint" id="code-hint">The 6 digits the command-line tool shows</span>` +
      `<input id="confirmation_code" name="confirmation_code" inputmode="numeric" autocomplete="one-time-code" ` +
      `maxlength="6" required aria-describedby="${described}code-hint"${codeInvalid}>\n` +
      '<label for="email">Email</label>' +
      `<input id="email" name="email" type="email" autocomplete="username" required value="${escapeHtml(model.email ?? '')}"${credentialsInvalid}>\n` +
      '<label for="password">Password</label>' +
      `<input id="password" name="password" type="password" autocomplete="current-password" required${credentialsInvalid}>\n` +
      '<label for="two_factor_code">Two-factor code</label>' +
      `<span class="hint" id="two-factor-hint">Only if your account uses two-factor sign-in: a code from your app or a backup code</span>` +
      `<input id="two_factor_code" name="two_factor_code" autocomplete="one-time-code" maxlength="64" ` +
      `aria-describedby="two-factor-hint"${twoFactorInvalid}>\n` +
      '<div class="actions"><button type="submit" name="decision" value="approve">Approve sign-in</button>' +
      '<button type="submit" name="decision" value="deny" class="secondary" formnovalidate>Deny</button></div>\n' +
      '</form>',
  );
}

/** The HTML of the CLI sign-in page in the state the service answered. */
export function cliSessionPage(model: CliSessionPageModel, csrfToken: string): HtmlPage {
  switch (model.kind) {
    case 'form':
      return formPage(model, csrfToken);
    case 'approved':
      return htmlPage(
        200,
        'Sign-in approved',
        '<p role="status">The command-line tool is signed in. You can close this window and return to it.</p>',
      );
    case 'denied':
      return htmlPage(
        200,
        'Sign-in denied',
        '<p role="status">The command-line tool was not signed in. You can close this window.</p>',
      );
    case 'invalid':
      return htmlPage(
        404,
        'This sign-in link is not valid',
        '<p>It may have expired, been used already, or been mistyped. Start the sign-in again from the ' +
          'command-line tool.</p>',
      );
  }
}
