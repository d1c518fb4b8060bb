import { DomainError } from '../errors/domain-error';

/**
 * Bounds on the shape of JSON that clients and devices send, checked before anything walks it. V8's `JSON.parse`
 * is iterative (a million levels parse), but class-transformer, `JSON.stringify` and our own field checks recurse
 * and overflow the stack a few thousand levels down; class-transformer also costs microseconds per value and time
 * quadratic in an object's key count; and `JSON.parse` itself takes about 90 ms to build 500,000 nested arrays.
 */

/** The largest JSON request body (larger: 413). */
export const MAX_JSON_BODY_BYTES = 1024 * 1024;
/** Objects and arrays inside one another: `{}` is 1 level, `{"a":[]}` is 2. */
export const MAX_JSON_DEPTH = 32;
/** Every object, array, string, number, boolean and null counts, the outermost value included. */
export const MAX_JSON_VALUES = 4096;

export interface JsonShapeLimits {
  maxDepth: number;
  maxValues: number;
}

export type JsonShapeProblem = 'too_deep' | 'too_many_values';

const DEFAULT_LIMITS: JsonShapeLimits = { maxDepth: MAX_JSON_DEPTH, maxValues: MAX_JSON_VALUES };

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;

function isJsonWhitespace(code: number): boolean {
  return code === 0x20 || code === 0x0a || code === 0x0d || code === 0x09;
}

/**
 * The first limit a JSON text breaks, found without parsing it: one pass, no allocation, stopping at the first
 * broken limit. Exact for valid JSON; for anything else the answer does not matter, the parser refuses it anyway.
 * `text` is a string or UTF-8 bytes (every character that matters is ASCII, and no byte of a multi-byte UTF-8
 * sequence is).
 *
 * Values are counted without telling keys from values: the outermost value, then one per comma (each separates
 * two elements or two members) and one per non-empty container (its first element or member).
 */
export function jsonTextProblem(
  text: string | Uint8Array,
  limits: JsonShapeLimits = DEFAULT_LIMITS,
): JsonShapeProblem | null {
  const isString = typeof text === 'string';
  let depth = 0;
  let values = 0;
  let inString = false;
  let justOpened = false;
  for (let i = 0; i < text.length; i++) {
    const code = isString ? text.charCodeAt(i) : text[i];
    if (inString) {
      if (code === BACKSLASH) i++;
      else if (code === QUOTE) inString = false;
      continue;
    }
    if (isJsonWhitespace(code)) continue;
    if (values === 0) values = 1;
    else if (justOpened && code !== CLOSE_OBJECT && code !== CLOSE_ARRAY && ++values > limits.maxValues) {
      return 'too_many_values';
    }
    justOpened = false;
    switch (code) {
      case QUOTE:
        inString = true;
        break;
      case OPEN_OBJECT:
      case OPEN_ARRAY:
        if (++depth > limits.maxDepth) return 'too_deep';
        justOpened = true;
        break;
      case CLOSE_OBJECT:
      case CLOSE_ARRAY:
        depth--;
        break;
      case COMMA:
        if (++values > limits.maxValues) return 'too_many_values';
        break;
    }
  }
  return null;
}

/**
 * The first limit a parsed JSON value breaks, or null. Iterative, and it stops at the first container that breaks
 * a limit, so its work is bounded by `maxValues` (and the members of one object) whatever the value.
 */
export function jsonShapeProblem(
  value: unknown,
  limits: JsonShapeLimits = DEFAULT_LIMITS,
): JsonShapeProblem | null {
  if (typeof value !== 'object' || value === null) return null;
  let values = 1;
  const pending: object[] = [value];
  const depths: number[] = [1];
  while (pending.length > 0) {
    const current = pending.pop()!;
    const depth = depths.pop()!;
    if (depth > limits.maxDepth) return 'too_deep';
    const children: unknown[] = Array.isArray(current)
      ? (current as unknown[])
      : Object.values(current as Record<string, unknown>);
    values += children.length;
    if (values > limits.maxValues) return 'too_many_values';
    for (const child of children) {
      if (typeof child === 'object' && child !== null) {
        pending.push(child);
        depths.push(depth + 1);
      }
    }
  }
  return null;
}

const BODY_SHAPE_MESSAGES: Record<JsonShapeProblem, string> = {
  too_deep: `request body is nested too deeply: at most ${MAX_JSON_DEPTH} levels of objects and arrays`,
  too_many_values:
    `request body has too many values: at most ${MAX_JSON_VALUES} ` +
    '(every object, array, string, number, boolean and null counts)',
};

function bodyError(problem: JsonShapeProblem | null): DomainError | undefined {
  return problem === null ? undefined : DomainError.badRequest(BODY_SHAPE_MESSAGES[problem]);
}

/** The 400 for a request body (its raw UTF-8 bytes, before parsing) over the JSON limits, or undefined. */
export function rawBodyShapeError(bytes: Uint8Array): DomainError | undefined {
  return bodyError(jsonTextProblem(bytes));
}

/** The 400 for a parsed request body over the JSON limits, or undefined. */
export function bodyShapeError(body: unknown): DomainError | undefined {
  return bodyError(jsonShapeProblem(body));
}
