/**
 * One simulated device for bench/console.ts's connection changes, in a process of its own: its event loop does
 * nothing else, so the time it notes for its join reply is the reply's arrival, not when a busy harness (driving
 * Chromium) got round to it. Started with `fork` and the device's options as JSON in argv[2]; on each `join`
 * message it connects and answers `{joinedAt}` (epoch ms) once its `device` join was answered; on `leave` it notes
 * the time, closes its socket and answers `{leftAt}`; on `exit` it stops and exits.
 */
import { Simulator, type SimulatorOptions } from '../src/cli/simulator';

const options = JSON.parse(process.argv[2]) as SimulatorOptions;
let simulator: Simulator | null = null;

const send = (message: Record<string, unknown>) => process.send?.(message);

process.on('message', (message: { cmd: 'join' | 'leave' | 'exit' }) => {
  void handle(message.cmd).catch((err: unknown) =>
    send({ error: err instanceof Error ? err.message : String(err) }),
  );
});

async function handle(cmd: 'join' | 'leave' | 'exit'): Promise<void> {
  if (cmd === 'join') {
    const current = new Simulator({ ...options, devices: 1 });
    simulator = current;
    const [device] = current.devices;
    device.onReceive = (topic, event) => {
      if (topic === 'device' && event === 'phx_reply') {
        const joinedAt = Date.now();
        device.onReceive = null;
        send({ joinedAt });
      }
    };
    current.start(0);
  } else if (cmd === 'leave') {
    const leftAt = Date.now();
    await simulator?.stop();
    simulator = null;
    send({ leftAt });
  } else {
    await simulator?.stop();
    process.exit(0);
  }
}
