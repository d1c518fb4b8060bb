import { createServer, connect, type Socket } from 'node:net';
import { alertRecord, ClientCertificateGate, type GateDecision, TlsAlert } from './client-certificate-gate';

/** A TLS record. */
const record = (type: number, fragment: Buffer) =>
  Buffer.concat([Buffer.from([type, 3, 3, fragment.length >> 8, fragment.length & 0xff]), fragment]);
const uint24 = (n: number) => Buffer.from([n >> 16, (n >> 8) & 0xff, n & 0xff]);
const message = (type: number, body: Buffer) =>
  Buffer.concat([Buffer.from([type]), uint24(body.length), body]);
const certificateBody = (ders: Buffer[]) => {
  const list = Buffer.concat(ders.map((der) => Buffer.concat([uint24(der.length), der])));
  return Buffer.concat([uint24(list.length), list]);
};

/**
 * A gate on the server end of a loopback connection: what the device side sends is written as given (chunk by chunk),
 * and the test sees what the gate passed to the TLS side, what the device got back, and what the judge was shown.
 */
async function through(chunks: Buffer[], decision: GateDecision) {
  const judged: Buffer[][] = [];
  const passed: Buffer[] = [];
  const server = createServer();
  const accepted = new Promise<Socket>((resolve) => server.once('connection', resolve));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const device = connect((server.address() as { port: number }).port, '127.0.0.1');
  const socket = await accepted;
  const gate = new ClientCertificateGate(socket, async (certificates) => {
    judged.push(certificates);
    return decision;
  });
  gate.on('data', (chunk: Buffer) => passed.push(chunk));
  gate.on('error', () => undefined);
  const received: Buffer[] = [];
  device.on('data', (chunk: Buffer) => received.push(chunk));
  const ended = new Promise<void>((resolve) => device.once('end', resolve));
  for (const chunk of chunks) {
    device.write(chunk);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  await new Promise((resolve) => setTimeout(resolve, 30));
  device.end();
  await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, 500))]);
  device.destroy();
  server.close();
  return { judged, passed: Buffer.concat(passed), received: Buffer.concat(received) };
}

describe('ClientCertificateGate', () => {
  const certA = Buffer.from('certificate A');
  const certB = Buffer.from('the one after it');
  const hello = record(22, message(1, Buffer.alloc(40, 1)));
  const flight = Buffer.concat([
    record(22, message(11, certificateBody([certA, certB]))),
    record(22, message(16, Buffer.alloc(33, 2))),
    record(20, Buffer.from([1])),
    record(22, Buffer.alloc(40, 3)),
  ]);

  it('judges the Certificate message before any of it reaches TLS; passed, every byte goes on in order', async () => {
    const bytes = Buffer.concat([hello, flight]);
    // Split inside a record header, inside a handshake message, and between records.
    const out = await through([bytes.subarray(0, 3), bytes.subarray(3, 50), bytes.subarray(50)], 'pass');
    expect(out.judged).toEqual([[certA, certB]]);
    expect(out.passed).toEqual(bytes);
  });

  it('a Certificate message spread over two records, and two messages in one record', async () => {
    const certificate = message(11, certificateBody([certA]));
    const bytes = Buffer.concat([
      record(22, Buffer.concat([message(1, Buffer.alloc(10)), certificate.subarray(0, 6)])),
      record(22, certificate.subarray(6)),
    ]);
    const out = await through([bytes], 'pass');
    expect(out.judged).toEqual([[certA]]);
    expect(out.passed).toEqual(bytes);
  });

  it('refused: the device gets the alert as a plaintext record, and TLS never sees the certificate', async () => {
    const out = await through([hello, flight], TlsAlert.UnknownCa);
    expect(out.received).toEqual(alertRecord(TlsAlert.UnknownCa));
    expect(out.received).toEqual(Buffer.from([21, 3, 3, 0, 2, 2, 48]));
    expect(out.passed).toEqual(hello);
  });

  it('an empty certificate list is judged as none', async () => {
    const out = await through([hello, record(22, message(11, uint24(0)))], TlsAlert.HandshakeFailure);
    expect(out.judged).toEqual([[]]);
    expect(out.received).toEqual(alertRecord(TlsAlert.HandshakeFailure));
  });

  it('TLS 1.3 (ChangeCipherSpec, then encrypted records) or bytes that are not TLS: nothing judged, everything passes', async () => {
    const tls13 = Buffer.concat([hello, record(20, Buffer.from([1])), record(23, Buffer.alloc(60, 4))]);
    const out = await through([tls13], TlsAlert.UnknownCa);
    expect(out.judged).toEqual([]);
    expect(out.passed).toEqual(tls13);
    const http = Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    expect((await through([http], TlsAlert.UnknownCa)).passed).toEqual(http);
  });
});
