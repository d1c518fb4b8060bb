import { Injectable } from '@nestjs/common';
import { WebSocket } from 'ws';
import { LiveEvents } from '../../live/live-events';
import { ConsoleOutputService } from '../console-output.service';
import type { DeviceConnection } from '../device-connection';
import { DeviceConnections } from '../device-connections';
import { codePoints, encodeReply, type PhoenixFrame } from '../phoenix-frames';
import { ScriptRunner } from '../script-runner';

/** The `console` channel: what the device prints (`up`) is kept; console code goes down as `dn` frames. */
@Injectable()
export class ConsoleChannel {
  constructor(
    private readonly connections: DeviceConnections,
    private readonly output: ConsoleOutputService,
    private readonly scripts: ScriptRunner,
    private readonly live: LiveEvents,
  ) {}

  join(conn: DeviceConnection, frame: PhoenixFrame): void {
    conn.topics.set('console', frame.joinRef);
    conn.send(encodeReply(frame, 'ok', {}));
  }

  /** An event on the joined channel. */
  handle(conn: DeviceConnection, frame: PhoenixFrame): void {
    if (frame.event === 'up' && typeof frame.payload.data === 'string') {
      const data = frame.payload.data.replace(/\0/g, '');
      this.output.append(conn.deviceId, data);
      this.live.deviceConsole(conn.device, data);
      this.scripts.consoleOutput(conn, frame.payload.data);
    }
  }

  /**
   * Types the code into the device's console when this instance holds a console-joined socket of it: one `dn`
   * frame per code point, then a carriage return. False when it does not.
   */
  sendHere(deviceId: string, code: string): boolean {
    const conn = this.connections.of(deviceId);
    if (!conn || !conn.topics.has('console') || conn.ws.readyState !== WebSocket.OPEN) return false;
    for (const character of codePoints(code)) conn.push('console', 'dn', { data: character });
    conn.push('console', 'dn', { data: '\r' });
    return true;
  }
}
