import type { TestApp } from './test-app';

/** Serves a test app on a free port of 127.0.0.1 (for clients that need a real URL) and returns its base URL. */
export async function listenOnLoopback(t: TestApp): Promise<{ url: string; port: number }> {
  await t.app.listen(0, '127.0.0.1');
  const { port } = t.app.getHttpServer().address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, port };
}
