import { jsonTextProblem } from '../common/validation/json-limits';

/**
 * Phoenix channel V2 JSON framing: every frame is a text frame holding `[join_ref, ref, topic, event, payload]`.
 * Pure functions, so that every malformed input is rejected here (never thrown past the socket handler).
 */

export interface PhoenixFrame {
  joinRef: string | null;
  ref: string | null;
  topic: string;
  event: string;
  payload: Record<string, unknown>;
}

/** The heartbeat and join replies: the only replies a device accepts (see device-protocol.md 1.4). */
export const OK_EMPTY = { status: 'ok', response: {} } as const;

const MAX_REF_LENGTH = 64;
const MAX_NAME_LENGTH = 255;

function isRef(value: unknown): value is string | null {
  // Old Slipstream releases send numbers; accept them by their decimal text.
  return (
    value === null ||
    value === undefined ||
    (typeof value === 'string' && value.length <= MAX_REF_LENGTH) ||
    (typeof value === 'number' && Number.isSafeInteger(value))
  );
}

function refText(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  return typeof value === 'number' ? value.toString(10) : (value as string);
}

function isName(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= MAX_NAME_LENGTH;
}

/**
 * Decodes one text frame. Returns null for anything that is not a well-formed V2 frame (not JSON, not a
 * 5-element array, refs or names of the wrong type, nested deeper or holding more values than the JSON limits
 * allow). A payload that is not an object becomes `{}`.
 */
export function decodeFrame(data: string): PhoenixFrame | null {
  // Before parsing: JSON.parse builds any depth, but what walks a payload later (iroh details checks,
  // JSON.stringify) recurses.
  if (jsonTextProblem(data) !== null) return null;
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    return null;
  }
  if (!Array.isArray(value) || value.length !== 5) return null;
  const [joinRef, ref, topic, event, payload] = value as unknown[];
  if (!isRef(joinRef) || !isRef(ref) || !isName(topic) || !isName(event)) return null;
  const body =
    typeof payload === 'object' && payload !== null && !Array.isArray(payload)
      ? (payload as Record<string, unknown>)
      : {};
  return { joinRef: refText(joinRef), ref: refText(ref), topic, event, payload: body };
}

export function encodeFrame(
  joinRef: string | null,
  ref: string | null,
  topic: string,
  event: string,
  payload: unknown,
): string {
  return JSON.stringify([joinRef, ref, topic, event, payload]);
}

/** A server push: `ref` is always null, so the device treats it as a message, never a reply. */
export function encodePush(joinRef: string | null, topic: string, event: string, payload: unknown): string {
  return encodeFrame(joinRef, null, topic, event, payload);
}

export function encodeReply(frame: PhoenixFrame, status: 'ok' | 'error', response: unknown): string {
  return encodeFrame(frame.joinRef, frame.ref, frame.topic, 'phx_reply', { status, response });
}

/** Splits text into Unicode code points (a surrogate pair stays whole). */
export function codePoints(text: string): string[] {
  return Array.from(text);
}
