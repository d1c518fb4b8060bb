import { Injectable } from '@nestjs/common';
import { InstanceBus, MAX_BUS_PAYLOAD_BYTES } from '../database/instance-bus/instance-bus';
import type { DeviceCommand } from '../devices/device-console';

/**
 * What instances tell each other about devices. Only ids and short commands travel (PostgreSQL caps a NOTIFY
 * payload at 8000 bytes); the receiver loads the rest from the database.
 */
export type DeviceBusMessage =
  /**
   * Each of these devices has a newer socket on the publishing instance (the envelope's `deviceId` is empty):
   * every other instance closes its sockets of them.
   */
  | { kind: 'closes'; devices: string[] }
  /** The device's pending update changed: the instance holding its socket pushes it. */
  | { kind: 'update' }
  /**
   * The deployment orchestrator claimed updates for these devices (the envelope's `deviceId` is empty): the
   * instance holding each socket pushes the update unless it was already sent.
   */
  | { kind: 'updates'; devices: string[] }
  /**
   * These devices' pending updates changed (a bulk upgrade; the envelope's `deviceId` is empty): the instance
   * holding each socket pushes the update.
   */
  | { kind: 'pending'; devices: string[] }
  /** These devices must connect again (a bulk move; the envelope's `deviceId` is empty): their sockets close. */
  | { kind: 'reconnects'; devices: string[] }
  /** One chunk of console code for the instance `to`; `part` counts from 0 to `parts - 1`. */
  | { kind: 'console'; to: string; request: string; part: number; parts: number; data: string }
  /** The answer to a console request: whether the code reached a console-joined socket. */
  | { kind: 'console-ack'; to: string; request: string; ok: boolean }
  /** A device command for the instance `to`, which holds the device's socket. */
  | { kind: 'command'; to: string; request: string; command: DeviceCommand }
  /** The answer to a command: whether the socket took it. */
  | { kind: 'command-ack'; to: string; request: string; ok: boolean }
  /** One part of a support script for the instance `to`, to run with the device's answer awaited `timeoutMs`. */
  | {
      kind: 'script';
      to: string;
      request: string;
      part: number;
      parts: number;
      data: string;
      timeoutMs: number;
    }
  /** One part of a script's output; `ok` false: the device could not run it or did not answer (no output). */
  | {
      kind: 'script-output';
      to: string;
      request: string;
      part: number;
      parts: number;
      data: string;
      ok: boolean;
    };

export interface DeviceBusEnvelope {
  /** The instance that published the message. */
  from: string;
  deviceId: string;
  message: DeviceBusMessage;
}

export type DeviceBusHandler = (envelope: DeviceBusEnvelope) => void;

/**
 * Fan-out between server instances, addressed by device id: senders never need to know which instance holds a
 * socket. PostgreSQL LISTEN/NOTIFY implements it here; a broker (Redis, NATS) can implement it for very large
 * fleets.
 */
export abstract class DeviceBus {
  /** This process's gateway instance id (a fresh uuid per process). */
  abstract readonly instanceId: string;
  /** Delivers the message to every instance (this one included). */
  abstract publish(deviceId: string, message: DeviceBusMessage): Promise<void>;
  abstract onMessage(handler: DeviceBusHandler): void;
}

export const BUS_CHANNEL = 'fleethub_device_bus';

export function encodeEnvelope(envelope: DeviceBusEnvelope): string {
  const text = JSON.stringify(envelope);
  if (Buffer.byteLength(text) > MAX_BUS_PAYLOAD_BYTES) {
    throw new Error(`device bus message too large (${Buffer.byteLength(text)} bytes)`);
  }
  return text;
}

/** Parses a received payload; null for anything that is not an envelope (never throws). */
export function decodeEnvelope(text: string): DeviceBusEnvelope | null {
  try {
    const value = JSON.parse(text) as Partial<DeviceBusEnvelope>;
    if (
      typeof value !== 'object' ||
      value === null ||
      typeof value.from !== 'string' ||
      typeof value.deviceId !== 'string' ||
      typeof value.message !== 'object' ||
      value.message === null ||
      typeof (value.message as { kind?: unknown }).kind !== 'string'
    ) {
      return null;
    }
    return value as DeviceBusEnvelope;
  } catch {
    return null;
  }
}

/** The device bus on the process's InstanceBus (one LISTEN connection shared with the other features). */
@Injectable()
export class PgDeviceBus extends DeviceBus {
  private readonly handlers: DeviceBusHandler[] = [];

  constructor(private readonly bus: InstanceBus) {
    super();
    bus.subscribe(BUS_CHANNEL, (payload) => {
      const envelope = decodeEnvelope(payload);
      if (!envelope) return;
      for (const handler of this.handlers) handler(envelope);
    });
  }

  get instanceId(): string {
    return this.bus.instanceId;
  }

  onMessage(handler: DeviceBusHandler): void {
    this.handlers.push(handler);
  }

  async publish(deviceId: string, message: DeviceBusMessage): Promise<void> {
    await this.bus.publish(BUS_CHANNEL, encodeEnvelope({ from: this.instanceId, deviceId, message }));
  }
}
