/**
 * What a simulated device does with a support script (`scripts/run`). NervesHubLink evaluates the text as Elixir,
 * captures what it prints and answers `{"ref", "result": "completed", "output", "return": inspect(value)}`; an
 * exception raised by the script is appended to the output and `return` is `"nil"` (device-protocol.md 4.4).
 *
 * A simulated device runs no Elixir. It evaluates the small part of it that support scripts are made of in demos and
 * tests, so that the answer depends on the script as a real device's would:
 * - literals: strings (`"..."` with `\n`, `\t`, `\"`, `\\`), integers, floats, atoms (`:ok`), `true`, `false`, `nil`;
 * - `IO.puts(x)`, `IO.write(x)`, `IO.inspect(x)`, with or without parentheses;
 * - the device's own facts: `Nerves.Runtime.KV.get("nerves_fw_version")` (and the other `nerves_fw_*` keys),
 *   `Nerves.Runtime.serial_number()`, `NervesHubLink.connected?()`;
 * - statements separated by new lines or `;`, `#` comments.
 * Anything else raises, as an undefined function would on a device: the message goes to the output, `return` is
 * `"nil"`, and the statements after it do not run.
 */

/** What the script can ask of the device. */
export interface ScriptDevice {
  identifier: string;
  /** The active firmware's Nerves KV values (`nerves_fw_version`, ...). */
  kv: Record<string, string>;
}

/** The `scripts/run` answer's fields besides the ref. */
export interface ScriptAnswer {
  result: 'completed';
  output: string;
  return: string;
}

type Value = string | number | boolean | null | { atom: string } | { float: number };

class ScriptError extends Error {}

type Token = { kind: 'string'; value: string } | { kind: 'word' | 'number' | 'atom' | 'punct'; text: string };

const ESCAPES: Record<string, string> = { n: '\n', t: '\t', r: '\r', '"': '"', '\\': '\\', '#': '#' };

/** Splits the text into statements of tokens. */
function tokenize(text: string): Token[][] {
  const statements: Token[][] = [[]];
  let i = 0;
  const current = () => statements[statements.length - 1];
  while (i < text.length) {
    const c = text[i];
    if (c === '\n' || c === ';') {
      if (current().length > 0) statements.push([]);
      i++;
    } else if (c === ' ' || c === '\t' || c === '\r') {
      i++;
    } else if (c === '#') {
      while (i < text.length && text[i] !== '\n') i++;
    } else if (c === '"') {
      let value = '';
      i++;
      while (i < text.length && text[i] !== '"') {
        if (text[i] === '\\' && i + 1 < text.length) {
          value += ESCAPES[text[i + 1]] ?? text[i + 1];
          i += 2;
        } else value += text[i++];
      }
      if (i >= text.length) throw new ScriptError('** (TokenMissingError) missing terminator: "');
      i++;
      current().push({ kind: 'string', value });
    } else {
      const match =
        /^(?:(-?\d+(?:\.\d+)?)|(:[A-Za-z_][\w?!]*)|([A-Za-z_][\w?!]*(?:\.[A-Za-z_][\w?!]*)*)|(.))/.exec(
          text.slice(i),
        )!;
      const [token, number, atom, word] = match;
      if (number !== undefined) current().push({ kind: 'number', text: number });
      else if (atom !== undefined) current().push({ kind: 'atom', text: atom.slice(1) });
      else if (word !== undefined) current().push({ kind: 'word', text: word });
      else current().push({ kind: 'punct', text: token });
      i += token.length;
    }
  }
  return statements.filter((statement) => statement.length > 0);
}

/** Elixir's `inspect/1` of a value. */
export function inspect(value: Value): string {
  if (value === null) return 'nil';
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'object') return 'atom' in value ? `:${value.atom}` : String(value.float);
  return String(value);
}

/** What `IO.puts`/`IO.write` print of a value (Elixir's `to_string/1`). */
function printed(value: Value): string {
  if (value === null) return '';
  if (typeof value === 'object') return 'atom' in value ? value.atom : String(value.float);
  return String(value);
}

const OK: Value = { atom: 'ok' };

class Evaluator {
  output = '';
  private position = 0;

  constructor(
    private readonly device: ScriptDevice,
    private readonly tokens: Token[],
  ) {}

  statement(): Value {
    const value = this.expression();
    if (this.position < this.tokens.length) throw this.undefined();
    return value;
  }

  private expression(): Value {
    const token = this.tokens[this.position++];
    if (token === undefined) throw new ScriptError('** (SyntaxError) unexpected end of expression');
    switch (token.kind) {
      case 'string':
        return token.value;
      case 'number':
        return token.text.includes('.') ? { float: Number(token.text) } : Number(token.text);
      case 'atom':
        return { atom: token.text };
      case 'word':
        if (token.text === 'true') return true;
        if (token.text === 'false') return false;
        if (token.text === 'nil') return null;
        return this.call(token.text);
      case 'punct':
        throw new ScriptError(`** (SyntaxError) unexpected token: ${token.text}`);
    }
  }

  /** A call's arguments, in parentheses or (one argument) without. */
  private arguments(): Value[] {
    const next = this.tokens[this.position];
    if (next?.kind === 'punct' && next.text === '(') {
      this.position++;
      const args: Value[] = [];
      for (;;) {
        const peek = this.tokens[this.position];
        if (peek?.kind === 'punct' && peek.text === ')') {
          this.position++;
          return args;
        }
        if (args.length > 0) {
          if (!(peek?.kind === 'punct' && peek.text === ',')) throw this.undefined();
          this.position++;
        }
        args.push(this.expression());
      }
    }
    return next === undefined ? [] : [this.expression()];
  }

  private call(name: string): Value {
    const args = this.arguments();
    const one = (): Value => {
      if (args.length !== 1) throw this.undefined(`${name}/${args.length}`);
      return args[0];
    };
    switch (name) {
      case 'IO.puts':
        this.output += `${printed(one())}\n`;
        return OK;
      case 'IO.write':
        this.output += printed(one());
        return OK;
      case 'IO.inspect': {
        const value = one();
        this.output += `${inspect(value)}\n`;
        return value;
      }
      case 'Nerves.Runtime.KV.get': {
        const key = one();
        return typeof key === 'string' ? (this.device.kv[key] ?? null) : null;
      }
      case 'Nerves.Runtime.serial_number':
        if (args.length !== 0) throw this.undefined(`${name}/${args.length}`);
        return this.device.identifier;
      case 'NervesHubLink.connected?':
        if (args.length !== 0) throw this.undefined(`${name}/${args.length}`);
        return true;
      default:
        throw this.undefined(`${name}/${args.length}`);
    }
  }

  private undefined(what = 'this expression'): ScriptError {
    return new ScriptError(`** (UndefinedFunctionError) the simulated device cannot evaluate ${what}`);
  }
}

/** Evaluates the text: what it printed, and its last value (inspected) or the error that stopped it. */
function evaluate(
  device: ScriptDevice,
  text: string,
): { output: string; value: string } | { output: string; error: string } {
  let output = '';
  let value: Value = null;
  try {
    for (const statement of tokenize(text)) {
      const evaluator = new Evaluator(device, statement);
      try {
        value = evaluator.statement();
      } finally {
        output += evaluator.output;
      }
    }
  } catch (err) {
    if (!(err instanceof ScriptError)) throw err;
    return { output, error: err.message };
  }
  return { output, value: inspect(value) };
}

/** Runs a support script on a simulated device: NervesHubLink's answer for the same script, as far as it goes. */
export function runSimulatedScript(device: ScriptDevice, text: string): ScriptAnswer {
  const result = evaluate(device, text);
  return 'error' in result
    ? { result: 'completed', output: `${result.output}${result.error}\n`, return: 'nil' }
    : { result: 'completed', output: result.output, return: result.value };
}

/**
 * A simulated device's remote IEx (the `console` channel), as NervesHubLink's looks from the console: a prompt
 * `iex(N)> `; each character typed is echoed (a backspace, DEL, erases one); a carriage return evaluates the line
 * with the evaluator above and prints what it printed, then its value (or the error), then the next prompt. Lines
 * end in `\r\n` (a terminal's). Answers the output to send back for each input.
 */
export class SimulatedConsole {
  private line = '';
  private count = 1;

  constructor(private readonly device: () => ScriptDevice) {}

  /** What IEx prints when the console starts. */
  get prompt(): string {
    return `iex(${this.count})> `;
  }

  input(data: string): string {
    let out = '';
    for (const character of data) {
      if (character === '\r' || character === '\n') {
        out += `\r\n${this.enter()}`;
      } else if (character === '\u007f' || character === '\b') {
        if (this.line === '') continue;
        this.line = Array.from(this.line).slice(0, -1).join('');
        out += '\b \b';
      } else if (character >= ' ') {
        this.line += character;
        out += character;
      }
    }
    return out;
  }

  private enter(): string {
    const line = this.line;
    this.line = '';
    if (line.trim() === '') return this.prompt;
    const result = evaluate(this.device(), line);
    this.count++;
    const printed = result.output.replace(/\r?\n/g, '\r\n');
    const shown = 'error' in result ? result.error : result.value;
    return `${printed}${shown}\r\n${this.prompt}`;
  }
}
