/**
 * Polls `probe` until `ok` accepts its value or `timeoutMs` passes, and answers the last value: the caller's
 * assertion on it then says what was wrong (for state another process or instance writes asynchronously).
 */
export async function eventually<T>(
  probe: () => T | Promise<T>,
  ok: (value: T) => boolean,
  timeoutMs = 10_000,
  intervalMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (ok(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
