import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { type AddressInfo, connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConnectionDrain, IDLE_SILENCE_MS, IDLE_SWEEP_MS } from './connection-drain';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A raw connection to the server: what it received, and whether it ended with a reset. */
function open(
  port: number,
): Promise<{ socket: Socket; received: () => string; closed: Promise<string | null> }> {
  const socket = connect(port, '127.0.0.1');
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
  const closed = new Promise<string | null>((resolve) => {
    let error: string | null = null;
    socket.on('error', (err: NodeJS.ErrnoException) => (error = err.code ?? err.message));
    socket.once('close', () => resolve(error));
  });
  return new Promise((resolve, reject) => {
    socket.once('connect', () => resolve({ socket, received: () => received, closed }));
    socket.once('error', reject);
  });
}

describe('ConnectionDrain', () => {
  let server: Server;
  let drain: ConnectionDrain;
  let port: number;

  beforeEach(async () => {
    server = createServer((req, res) => {
      drain.track(req, res);
      res.end('ok');
    });
    drain = new ConnectionDrain(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });

  afterEach(() => {
    drain.stop();
    server.closeAllConnections();
    if (server.listening) server.close();
  });

  it('answers a keep-alive connection whose next request comes while the listener closes, and closes it after', async () => {
    const connection = await open(port);
    connection.socket.write('GET / HTTP/1.1\r\nHost: fleethub\r\n\r\n');
    await sleep(50);
    expect(connection.received()).toMatch(/Connection: keep-alive/);
    drain.start();
    const closing = drain.closeListener();
    // Between two requests: Node's server.close() would reset it, and the request on its way with it.
    await sleep(IDLE_SWEEP_MS / 2);
    const before = connection.received().length;
    connection.socket.write('GET / HTTP/1.1\r\nHost: fleethub\r\n\r\n');
    expect(await connection.closed).toBeNull();
    expect(connection.received().slice(before)).toMatch(
      /^HTTP\/1\.1 200 OK\r\n[\s\S]*Connection: close\r\n[\s\S]*ok$/,
    );
    await closing;
    expect(server.listening).toBe(false);
  });

  it('keeps a keep-alive connection whose client pauses between requests for less than the silence', async () => {
    const connection = await open(port);
    connection.socket.write('GET / HTTP/1.1\r\nHost: fleethub\r\n\r\n');
    await sleep(50);
    drain.start();
    // A client slowed down by its own load: three sweeps pass between its two requests.
    await sleep(3 * IDLE_SWEEP_MS + IDLE_SWEEP_MS / 2);
    expect(connection.socket.destroyed).toBe(false);
    const before = connection.received().length;
    connection.socket.write('GET / HTTP/1.1\r\nHost: fleethub\r\n\r\n');
    expect(await connection.closed).toBeNull();
    expect(connection.received().slice(before)).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*Connection: close\r\n/);
  });

  it('closes a keep-alive connection silent for IDLE_SILENCE_MS, and a new one that sends nothing', async () => {
    const kept = await open(port);
    kept.socket.write('GET / HTTP/1.1\r\nHost: fleethub\r\n\r\n');
    await sleep(50);
    expect(kept.received()).toMatch(/Connection: keep-alive/);
    const silent = await open(port);
    await sleep(10);
    const startedAt = Date.now();
    drain.start();
    const closing = drain.closeListener();
    await Promise.all([kept.closed, silent.closed]);
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(IDLE_SILENCE_MS);
    expect(Date.now() - startedAt).toBeLessThan(IDLE_SILENCE_MS + 5 * IDLE_SWEEP_MS);
    await closing;
  });

  it('leaves an upgraded socket to its own handler, and destroys an upgrade nobody handles', async () => {
    const upgrade =
      'GET /socket HTTP/1.1\r\nHost: fleethub\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n';
    const unhandled = await open(port);
    unhandled.socket.write(upgrade);
    expect(await unhandled.closed).toBeNull();
    expect(unhandled.received()).toBe('');

    // A handler as the device gateway's: it answers 101, then reads the socket until its end.
    server.on('upgrade', (_req, socket: Socket) => {
      socket.write('HTTP/1.1 101 Switching Protocols\r\n\r\n');
      socket.on('end', () => socket.destroy()).resume();
    });
    // A request first, then the upgrade on the same connection (a balancer reuses its connections).
    const upgraded = await open(port);
    upgraded.socket.write('GET / HTTP/1.1\r\nHost: fleethub\r\n\r\n');
    await sleep(50);
    upgraded.socket.write(upgrade);
    await sleep(50);
    drain.start();
    const closing = drain.closeListener();
    await sleep(IDLE_SILENCE_MS + 3 * IDLE_SWEEP_MS);
    // Silent for longer than the silence, and still open: not the sweep's.
    expect(upgraded.socket.destroyed).toBe(false);
    expect(upgraded.received()).toMatch(/HTTP\/1\.1 101 Switching Protocols\r\n\r\n$/);
    upgraded.socket.destroy();
    await closing;
  });

  it('does not close the listener on connections the kernel has accepted and the process has not yet taken', async () => {
    // A client process connects and sends its requests while this event loop is blocked: they wait in the
    // listener's backlog, as they do behind a balancer when the process is busy. Closing the listener now would
    // reset every one of them.
    const dir = mkdtempSync(join(tmpdir(), 'drain-backlog-'));
    const sent = join(dir, 'sent');
    const clients = 20;
    const client = spawn(
      process.execPath,
      [
        '-e',
        `const net = require('node:net'); const fs = require('node:fs');
         const results = []; let connected = 0;
         for (let i = 0; i < ${clients}; i++) {
           const s = net.connect(${port}, '127.0.0.1');
           let data = '';
           s.on('connect', () => {
             s.write('GET / HTTP/1.1\\r\\nHost: fleethub\\r\\n\\r\\n');
             if (++connected === ${clients}) setTimeout(() => fs.writeFileSync(${JSON.stringify(sent)}, ''), 50);
           });
           s.on('data', (d) => (data += d));
           s.on('error', (e) => (data += ' ERROR ' + e.code));
           s.on('close', () => {
             results.push(data.startsWith('HTTP/1.1 200') && !data.includes('ERROR') ? 'answered' : data || 'nothing');
             if (results.length === ${clients}) process.stdout.write(JSON.stringify(results));
           });
         }`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let output = '';
    client.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise((resolve) => client.once('exit', resolve));
    try {
      const blockedUntil = Date.now() + 10_000;
      while (!existsSync(sent) && Date.now() < blockedUntil) {
        // Blocked on purpose: no accept() while the client connects and writes.
      }
      expect(existsSync(sent)).toBe(true);
      drain.start();
      await drain.closeListener();
      await exited;
      expect(JSON.parse(output)).toEqual(Array.from({ length: clients }, () => 'answered'));
    } finally {
      client.kill();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
