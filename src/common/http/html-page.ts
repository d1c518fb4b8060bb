import { createHash } from 'node:crypto';

/** The few server-rendered pages (CLI sign-in, invitations): their one stylesheet, inline and allowed by hash. */
export const PAGE_CSS =
  'body{font-family:system-ui,sans-serif;line-height:1.5;margin:0;color:#1b1b1b;background:#f6f7f9}' +
  'main{max-width:32rem;margin:3rem auto;padding:2rem;background:#fff;border:1px solid #d0d4da;border-radius:8px}' +
  'h1{font-size:1.5rem;margin-top:0}label{display:block;font-weight:600;margin-top:1rem}' +
  'input{font:inherit;width:100%;box-sizing:border-box;padding:.5rem;border:1px solid #6b7280;border-radius:4px}' +
  'input:focus,button:focus{outline:3px solid #1d4ed8;outline-offset:2px}' +
  '.hint{display:block;color:#4b5563;font-size:.9rem}' +
  '.alert{border:2px solid #b91c1c;background:#fef2f2;padding:.75rem 1rem;border-radius:4px}' +
  '.actions{margin-top:1.5rem;display:flex;gap:1rem}' +
  'button{font:inherit;padding:.5rem 1.25rem;border-radius:4px;border:1px solid #1d4ed8;background:#1d4ed8;color:#fff;cursor:pointer}' +
  'button.secondary{background:#fff;color:#1d4ed8}';

/** The Content-Security-Policy source of PAGE_CSS. */
export const PAGE_STYLE_SOURCE = `'sha256-${createHash('sha256').update(PAGE_CSS).digest('base64')}'`;

const ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Text for HTML content or a quoted attribute. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

/** A server-rendered page: its HTTP status and its whole HTML. */
export interface HtmlPage {
  status: number;
  html: string;
}

/** A complete page; `body` is already escaped HTML (built with escapeHtml). */
export function htmlPage(status: number, title: string, body: string): HtmlPage {
  return {
    status,
    html:
      '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">' +
      '<meta name="viewport" content="width=device-width, initial-scale=1">' +
      `<meta name="referrer" content="no-referrer"><title>${escapeHtml(title)} · fleethub</title>` +
      `<style>${PAGE_CSS}</style></head><body><main>\n<h1>${escapeHtml(title)}</h1>\n${body}\n</main></body></html>\n`,
  };
}

/** An error summary screen readers announce at once (role="alert"), or nothing. */
export function alertBox(message: string | undefined): string {
  return message ? `<div class="alert" role="alert" id="form-error"><p>${escapeHtml(message)}</p></div>` : '';
}
