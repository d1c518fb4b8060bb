import { Injectable } from '@nestjs/common';
import type { DeviceConnection } from '../device-connection';
import { encodeReply, OK_EMPTY, type PhoenixFrame } from '../phoenix-frames';
import { ConsoleChannel } from './console';
import { DeviceChannel } from './device';
import { ExtensionsChannel } from './extensions';

/** Routes a connection's frames: heartbeats, joins and leaves, then each channel's events to its handler. */
@Injectable()
export class ChannelRouter {
  constructor(
    private readonly device: DeviceChannel,
    private readonly console: ConsoleChannel,
    private readonly extensions: ExtensionsChannel,
  ) {}

  async dispatch(conn: DeviceConnection, frame: PhoenixFrame): Promise<void> {
    // Heartbeats take their turn too: when one is answered, every frame before it has been handled.
    if (frame.topic === 'phoenix') {
      if (frame.event === 'heartbeat') conn.send(encodeReply(frame, 'ok', OK_EMPTY.response));
      return;
    }
    if (frame.event === 'phx_join') return this.join(conn, frame);
    if (!conn.topics.has(frame.topic)) return; // never answer a push on a topic that is not joined
    if (frame.event === 'phx_leave') {
      conn.topics.delete(frame.topic);
      conn.send(encodeReply(frame, 'ok', {}));
      return;
    }
    switch (frame.topic) {
      case 'device':
        return this.device.handle(conn, frame);
      case 'console':
        return this.console.handle(conn, frame);
      case 'extensions':
        return this.extensions.handle(conn, frame);
    }
  }

  private async join(conn: DeviceConnection, frame: PhoenixFrame): Promise<void> {
    switch (frame.topic) {
      case 'device':
        return this.device.join(conn, frame);
      case 'console':
        return this.console.join(conn, frame);
      case 'extensions':
        return this.extensions.join(conn, frame);
      default:
        conn.send(encodeReply(frame, 'error', { reason: 'unmatched topic' }));
    }
  }
}
