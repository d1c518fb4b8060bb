/**
 * A firmware file that is not well-formed (an fwup archive, AtomVM packbeam or ESP-IDF image). `message` is a short
 * predicate about the file, written to be shown to the uploader as is (for example in
 * `{"errors":{"firmware":["has no meta.conf"]}}`).
 */
export class FirmwareFormatError extends Error {
  override readonly name = 'FirmwareFormatError';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}
