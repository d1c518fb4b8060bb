import { type ChildProcess, fork } from 'node:child_process';
import { join } from 'node:path';
import type { ReceiverCommand, ReceiverMessage } from './webhook-receivers';

type Counts = Extract<ReceiverMessage, { type: 'counts' }>;
type Stats = Extract<ReceiverMessage, { type: 'stats' }>;

/**
 * The benchmarks' side of the webhook receivers (bench/webhook-receivers.ts, a child process): ready → secrets →
 * count / collect → stop, one answer per question, in order.
 */
export class Receivers {
  private readonly waiting: ((m: ReceiverMessage) => void)[] = [];
  private constructor(readonly child: ChildProcess) {
    child.on('message', (m: ReceiverMessage) => this.waiting.shift()?.(m));
  }
  static async start(
    healthy: number,
  ): Promise<{ receivers: Receivers; ports: number[]; neverAnswering: number }> {
    const child = fork(join(__dirname, 'webhook-receivers.js'), [`--healthy=${healthy}`], {
      stdio: 'inherit',
    });
    const receivers = new Receivers(child);
    const ready = await receivers.next();
    if (ready.type !== 'ready') throw new Error(`receivers: ${ready.type}`);
    return { receivers, ports: ready.ports, neverAnswering: ready.never_answering_port };
  }
  private next(): Promise<ReceiverMessage> {
    return new Promise((resolve) => this.waiting.push(resolve));
  }
  send(command: ReceiverCommand): void {
    this.child.send(command);
  }
  async counts(): Promise<Counts> {
    const reply = this.next();
    this.send({ type: 'count' });
    return (await reply) as Counts;
  }
  async collect(since: number): Promise<Stats> {
    const reply = this.next();
    this.send({ type: 'collect', since });
    return (await reply) as Stats;
  }
}
