import { Terminal } from '@xterm/xterm';
import '@xterm/xterm/css/xterm.css';
import { routeInlineStylesThroughCssom } from './csp-styles';

/** A device's console in the page: what the device prints, and (when allowed) a line typed by the operator. */
export interface ConsoleTerminal {
  write(data: string): void;
  /** Writes a note of the console's own (not the device's), on a line of its own. */
  note(text: string): void;
  focus(): void;
  dispose(): void;
}

/**
 * xterm.js in `element`. Typing edits a line locally (shown as typed, backspace, Ctrl+C clears it); Enter erases the
 * local echo and hands the line to `onLine`, which sends it to the device: its console (a remote IEx) echoes it and
 * answers, and that output comes back through `write`. Without `onLine` the terminal only shows output.
 */
export function openTerminal(
  element: HTMLElement,
  options: { label: string; onLine?: (line: string) => void },
): ConsoleTerminal {
  routeInlineStylesThroughCssom();
  const terminal = new Terminal({
    convertEol: false,
    cursorBlink: false,
    disableStdin: options.onLine === undefined,
    fontFamily: 'ui-monospace, monospace',
    fontSize: 14,
    rows: 16,
    scrollback: 2000,
    theme: { background: '#11161c', foreground: '#e6e9ee', cursor: '#e6e9ee' },
  });
  // Tab moves the focus on (the terminal must not trap the keyboard); the console has no completion to offer.
  terminal.attachCustomKeyEventHandler((event) => event.key !== 'Tab');
  terminal.open(element);
  terminal.textarea?.setAttribute('aria-label', options.label);
  let line = '';
  const erase = (count: number) => terminal.write('\b \b'.repeat(count));
  terminal.onData((data) => {
    if (!options.onLine) return;
    for (const character of data) {
      if (character === '\r' || character === '\n') {
        const sent = line;
        erase(Array.from(line).length);
        line = '';
        options.onLine(sent);
      } else if (character === '\u007f' || character === '\b') {
        if (line === '') continue;
        line = Array.from(line).slice(0, -1).join('');
        erase(1);
      } else if (character === '\u0003') {
        erase(Array.from(line).length);
        line = '';
      } else if (character >= ' ') {
        line += character;
        terminal.write(character);
      }
    }
  });
  return {
    write: (data) => terminal.write(data),
    note: (text) => terminal.write(`\r\n\u001b[33m[${text}]\u001b[0m\r\n`),
    focus: () => terminal.focus(),
    dispose: () => terminal.dispose(),
  };
}
