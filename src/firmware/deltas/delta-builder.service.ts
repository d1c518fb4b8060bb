import { randomBytes, randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { finished } from 'node:stream/promises';
import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { FirmwareFileRemover } from '../storage/firmware-file-remover';
import { FirmwareStorage } from '../storage/firmware-storage';
import { buildDelta, DeltaBuildError } from './build-delta';
import { FirmwareDeltaRecords } from './firmware-delta-records.service';
import { type ClaimedDelta, FirmwareDeltasRepository } from './firmware-deltas.repository';
import { Xdelta3 } from './xdelta3';

/** How the builder works; tests shorten the times and swap the program. */
export interface DeltaBuilderOptions {
  /** How often each instance looks for pending deltas (requests made here wake it at once). */
  pollMs: number;
  /** A build's lease; renewed while it runs, taken over by another builder when it runs out. */
  leaseSec: number;
  /** The first retry's delay; doubled for each further one. */
  retryBaseSec: number;
  /** Builds of one pair, at most (NervesHub's `max_attempts: 3`). */
  maxAttempts: number;
  /** The xdelta3 program. */
  xdelta3: string;
}

export const DELTA_BUILDER_OPTIONS = Symbol('DELTA_BUILDER_OPTIONS');
export const DEFAULT_DELTA_BUILDER_OPTIONS: DeltaBuilderOptions = {
  pollMs: 5000,
  leaseSec: 960,
  retryBaseSec: 30,
  maxAttempts: 3,
  xdelta3: 'xdelta3',
};

/**
 * Builds the requested fwup deltas in the background, one at a time per instance (xdelta3 takes a core): claims a
 * pending pair in PostgreSQL (FOR UPDATE SKIP LOCKED, under a lease, so that instances never build the same pair
 * and a dead builder's pair is taken over), fetches both files from the firmware storage, builds the delta,
 * stores it beside the firmware and records it ready, or records the failure: retried with a growing delay up to
 * `maxAttempts` builds, at once final when the pair can never give a delta. Without xdelta3 it says so once and
 * builds nothing: devices get full files.
 */
@Injectable()
export class DeltaBuilder implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(DeltaBuilder.name);
  private readonly xdelta3: Xdelta3;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;
  /** Stops a build in progress when the instance stops (its pair goes back to pending). */
  private readonly stopping = new AbortController();
  private unsubscribe: (() => void) | null = null;
  /** Whether xdelta3 runs here (checked at start). */
  available = false;

  constructor(
    private readonly deltas: FirmwareDeltasRepository,
    private readonly records: FirmwareDeltaRecords,
    private readonly storage: FirmwareStorage,
    private readonly files: FirmwareFileRemover,
    @Inject(DELTA_BUILDER_OPTIONS) private readonly options: DeltaBuilderOptions,
  ) {
    this.xdelta3 = new Xdelta3(options.xdelta3);
  }

  async onApplicationBootstrap(): Promise<void> {
    this.available = await this.xdelta3.available();
    if (!this.available) {
      this.logger.warn(
        `${this.options.xdelta3} (Debian package xdelta3) cannot be run: no fwup delta is built on this instance ` +
          'and devices get full firmware files unless another instance builds them',
      );
      return;
    }
    this.unsubscribe = this.records.onRequested(() => void this.poke());
    this.timer = setInterval(() => void this.poke(), this.options.pollMs);
    this.timer.unref();
    void this.poke();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    if (this.timer) clearInterval(this.timer);
    this.stopping.abort();
    await this.running;
  }

  /** Builds what is due, now (a run already going makes one more pass after it). Resolves when done. */
  poke(): Promise<void> {
    if (this.stopped || !this.available) return Promise.resolve();
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = this.drain().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private async drain(): Promise<void> {
    do {
      this.again = false;
      try {
        const abandoned = await this.deltas.failAbandoned(this.options.maxAttempts);
        if (abandoned > 0) this.logger.warn(`${abandoned} delta build(s) abandoned after their last attempt`);
        for (;;) {
          if (this.stopped) return;
          const token = randomUUID();
          const job = await this.deltas.claimNext(token, this.options.leaseSec, this.options.maxAttempts);
          if (!job) break;
          await this.build(job, token);
        }
      } catch (err) {
        this.logger.warn({ err }, 'delta builder pass failed');
      }
    } while (this.again && !this.stopped);
  }

  /** A stored file copied to local disk (both stores: the local one's sender resolves before the flush). */
  private async fetch(key: string, path: string): Promise<void> {
    const out = createWriteStream(path);
    await (await this.storage.read(key)).sendTo(out);
    await finished(out);
  }

  private async build(job: ClaimedDelta, token: string): Promise<void> {
    const started = Date.now();
    let workDir: string | null = null;
    const renew = setInterval(
      () =>
        void this.deltas
          .renewLease(job.id, token, this.options.leaseSec)
          .catch((err: unknown) => this.logger.warn({ err, delta: job.id }, 'delta lease not renewed')),
      (this.options.leaseSec * 1000) / 3,
    );
    renew.unref();
    try {
      workDir = `${await this.storage.temporaryPath()}.delta`;
      await mkdir(workDir, { recursive: true });
      const sourcePath = join(workDir, 'source.fw');
      const targetPath = join(workDir, 'target.fw');
      await this.fetch(job.source_key, sourcePath);
      await this.fetch(job.target_key, targetPath);
      const built = await buildDelta(
        this.xdelta3,
        sourcePath,
        targetPath,
        join(workDir, 'build'),
        this.stopping.signal,
      );
      const storageKey = `${job.product_id}/deltas/${job.source_uuid}_${job.target_uuid}-${randomBytes(6).toString('hex')}.fw`;
      await this.storage.adopt(storageKey, built.path);
      const recorded = await this.deltas
        .markReady(job.id, token, { ...built, buildMs: Date.now() - started, storageKey })
        .catch(async (err: unknown) => {
          await this.files.discard(storageKey);
          throw err;
        });
      if (!recorded) {
        // Its firmware was deleted meanwhile (or the lease was lost): the file belongs to no row.
        await this.files.discard(storageKey);
        return;
      }
      this.logger.log(
        `delta ${job.source_uuid} -> ${job.target_uuid}: ${built.size} bytes instead of ${built.targetSize} ` +
          `(${built.encoded.join(', ')}) in ${Date.now() - started} ms`,
      );
    } catch (err) {
      if (this.stopped) {
        await this.deltas.release(job.id, token).catch(() => undefined);
        return;
      }
      const permanent = err instanceof DeltaBuildError && err.permanent;
      const message = err instanceof Error ? err.message : String(err);
      const delaySec = this.options.retryBaseSec * 2 ** Math.max(0, job.attempts - 1);
      const state = await this.deltas.markFailed(
        job.id,
        token,
        message,
        !permanent,
        this.options.maxAttempts,
        delaySec,
      );
      this.logger.warn(
        `delta ${job.source_uuid} -> ${job.target_uuid} attempt ${job.attempts} failed` +
          `${state === 'pending' ? ` (retried in ${delaySec} s)` : ''}: ${message}`,
      );
    } finally {
      clearInterval(renew);
      if (workDir) await rm(workDir, { recursive: true, force: true });
    }
  }
}
