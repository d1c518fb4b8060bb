import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';

/** Refuses an upgrade with a plain HTTP response (with `Date`, so devices can correct their clock). */
export function refuseUpgrade(
  socket: Duplex,
  status: number,
  body = '',
  headers: Record<string, string> = {},
): void {
  if (socket.destroyed) return;
  const lines = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}`,
    `Date: ${new Date().toUTCString()}`,
    'Connection: close',
    `Content-Length: ${Buffer.byteLength(body)}`,
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ];
  if (body !== '') lines.push('Content-Type: text/plain; charset=utf-8');
  socket.once('finish', () => socket.destroy());
  socket.end(`${lines.join('\r\n')}\r\n\r\n${body}`);
}

/** A socket error destroys the socket (a shared listener: a closure would keep its request alive). */
export function destroyOnError(this: Duplex): void {
  this.destroy();
}
