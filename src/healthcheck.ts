/**
 * The container's HEALTHCHECK (`node dist/src/healthcheck.js`; slim images have no curl): exit 0 when
 * `GET http://127.0.0.1:$PORT/readyz` answers 200 within 4 s, else 1. Reads only PORT, like the image sets it.
 */
export async function isReady(port: string, timeoutMs = 4000): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(timeoutMs) });
    await res.body?.cancel();
    return res.status === 200;
  } catch {
    return false;
  }
}

if (require.main === module) {
  void isReady(process.env.PORT || '4000').then((ready) => process.exit(ready ? 0 : 1));
}
