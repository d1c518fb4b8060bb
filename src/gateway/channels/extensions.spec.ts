import { EventEmitter } from 'node:events';
import { WebSocket } from 'ws';
import type { AppConfig } from '../../config/config';
import type { DeviceRecordsService } from '../../devices/device-records.service';
import type { DeviceReportsService } from '../../telemetry/device-reports.service';
import { Admission } from '../admission';
import { DeviceConnection } from '../device-connection';
import { DeviceConnections } from '../device-connections';
import type { DeviceLinkService } from '../device-link.service';
import type { PhoenixFrame } from '../phoenix-frames';
import { ExtensionsChannel } from './extensions';
import type { LiveEvents } from '../../live/live-events';

/** A socket that keeps what is sent to it. */
class FakeSocket extends EventEmitter {
  readyState: number = WebSocket.OPEN;
  readonly sent: unknown[][] = [];
  send(text: string): void {
    this.sent.push(JSON.parse(text) as unknown[]);
  }
  events(): unknown[] {
    return this.sent.map((frame) => frame[3]);
  }
}

function frame(
  event: string,
  payload: Record<string, unknown> = {},
  ref: string | null = null,
): PhoenixFrame {
  return { joinRef: '3', ref, topic: 'extensions', event, payload };
}

describe('ExtensionsChannel: repeated requests', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  async function joined(product: Record<string, boolean>, geoIntervalMinutes = 0) {
    const devices = {
      extensionSettings: jest.fn(async () => ({ product, device: { geo: true } })),
    } as unknown as DeviceRecordsService;
    const config = {
      telemetry: { retentionDays: 3, healthIntervalMinutes: 60, geoIntervalMinutes },
    } as AppConfig;
    const channel = new ExtensionsChannel(
      new DeviceConnections(),
      {} as DeviceLinkService,
      new Admission(4, { maxHandshakeWaitMs: 60_000 }),
      devices,
      {} as DeviceReportsService,
      {} as LiveEvents,
      config,
    );
    const ws = new FakeSocket();
    const conn = new DeviceConnection(ws as unknown as WebSocket, {
      deviceId: '7',
      identifier: 'd',
      productId: '1',
      orgId: '1',
      registered: false,
    });
    await channel.join(conn, { ...frame('phx_join', { health: '0.0.1', geo: '0.0.1' }, '3') });
    return { channel, conn, ws };
  }

  it('asks for a health report on attach and every interval, until detached', async () => {
    const { channel, conn, ws } = await joined({ health: true, geo: true });
    expect(ws.sent[0]).toEqual([
      '3',
      '3',
      'extensions',
      'phx_reply',
      { status: 'ok', response: ['health', 'geo'] },
    ]);
    await channel.handle(conn, frame('health:attached'));
    await channel.handle(conn, frame('geo:attached'));
    expect(ws.events().slice(1)).toEqual(['health:check', 'geo:location:request']);
    jest.advanceTimersByTime(2 * 60 * 60_000);
    // Geo: once (interval 0); health: every 60 min.
    expect(ws.events().slice(3)).toEqual(['health:check', 'health:check']);
    await channel.handle(conn, frame('health:detached'));
    jest.advanceTimersByTime(2 * 60 * 60_000);
    expect(ws.events()).toHaveLength(5);
  });

  it('repeats the location request when an interval is set, and stops when the socket closes', async () => {
    const { channel, conn, ws } = await joined({ geo: true }, 30);
    expect(ws.sent[0][4]).toEqual({ status: 'ok', response: ['geo'] });
    await channel.handle(conn, frame('geo:attached'));
    jest.advanceTimersByTime(60 * 60_000);
    expect(ws.events().slice(1)).toEqual([
      'geo:location:request',
      'geo:location:request',
      'geo:location:request',
    ]);
    ws.readyState = WebSocket.CLOSED;
    ws.emit('close');
    jest.advanceTimersByTime(60 * 60_000);
    expect(ws.events()).toHaveLength(4);
    expect(jest.getTimerCount()).toBe(0);
  });
});
