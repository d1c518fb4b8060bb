/**
 * xterm.js writes its run-time styles (its theme, cell sizes, scrollbar) into `<style>` elements it creates, and
 * sets a `style` attribute on some cells; the console's Content-Security-Policy (`style-src 'self'`, no
 * `unsafe-inline`) refuses both. Constructed stylesheets and CSSOM writes are allowed, so, for the pages that load
 * the terminal: a `<style>` element created by script is an inert element whose text goes into a constructed
 * stylesheet adopted by the document, and `setAttribute('style', text)` becomes `style.cssText = text`. Nothing
 * inline reaches the browser's CSP check (the browser test fails on any violation).
 */
let installed = false;

interface Adopted {
  sheet: CSSStyleSheet;
  element: HTMLElement;
  createdAt: number;
}

const adopted: Adopted[] = [];

function adopt(sheet: CSSStyleSheet): void {
  document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
}

/** Drops the sheets of elements removed from the page (a terminal that was disposed). */
function prune(): void {
  const now = Date.now();
  for (let i = adopted.length - 1; i >= 0; i--) {
    const entry = adopted[i];
    if (!entry.element.isConnected && now - entry.createdAt > 5000) {
      adopted.splice(i, 1);
      document.adoptedStyleSheets = document.adoptedStyleSheets.filter((s) => s !== entry.sheet);
    }
  }
}

export function routeInlineStylesThroughCssom(): void {
  if (installed) return;
  installed = true;
  const create = document.createElement.bind(document);
  const replacement = function (tag: string, options?: ElementCreationOptions): HTMLElement {
    if (tag.toLowerCase() !== 'style') return create(tag, options);
    prune();
    const element = create('fleethub-style', options);
    element.hidden = true;
    const sheet = new CSSStyleSheet();
    adopt(sheet);
    adopted.push({ sheet, element, createdAt: Date.now() });
    let text = '';
    const content = {
      get: () => text,
      set: (value: string | null | undefined) => {
        text = value ?? '';
        sheet.replaceSync(text);
      },
    };
    Object.defineProperties(element, {
      textContent: content,
      innerText: content,
      innerHTML: content,
      sheet: { get: () => sheet },
      type: { value: 'text/css', writable: true },
      media: { value: '', writable: true },
    });
    return element;
  };
  document.createElement = replacement;

  const setAttribute = Object.getOwnPropertyDescriptor(Element.prototype, 'setAttribute')!.value as (
    this: Element,
    name: string,
    value: string,
  ) => void;
  Element.prototype.setAttribute = function (this: Element, name: string, value: string) {
    if (name.toLowerCase() === 'style' && this instanceof HTMLElement) {
      this.style.cssText = value;
      return;
    }
    setAttribute.call(this, name, value);
  };
}
