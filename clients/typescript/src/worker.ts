// A job worker loop over the HTTP API: claim (long-poll), run the handler,
// settle; heartbeat long-running jobs while the handler runs.

import { ApiError } from "./client.js";
import type { Client } from "./client.js";
import type { ClaimedJob } from "./generated.js";

/** Throw from a handler to fail the job for good: it goes to the dead letters at once, no retry. */
export class Fail extends Error {
  constructor(message = "Fail") {
    super(message);
    this.name = "Fail";
  }
}

/** The handler's return value (unless undefined or null) is saved as the job's result. */
export type JobHandler = (job: ClaimedJob) => unknown;

export interface WorkerOptions {
  /** The worker's name in its claims (default: node-<pid>-<random>). */
  name?: string;
  /** Jobs claimed at a time (default 1); they run one after another. */
  batch?: number;
  /** How long a claim waits for jobs, in ms (default 5,000). */
  waitMs?: number;
  /** Retry after this many ms instead of the queue's backoff. */
  retryDelayMs?: number;
  /** Heartbeat a running job this often (default: a third of the claim's time left). */
  heartbeatEveryMs?: number;
  /** Stop once this many jobs were run. */
  maxJobs?: number;
  /** Aborting it stops the worker (a waiting claim at once). */
  signal?: AbortSignal;
}

export interface WorkerCounts {
  acked: number;
  retried: number;
  failed: number;
  /** Settled after the claim had lapsed (another worker may run it). */
  lost: number;
}

/**
 * Work `queue`: claim up to `batch` jobs at a time (waiting up to `waitMs`),
 * and call `handler(job)` on each, one at a time. It returns (or resolves):
 * the job is acked, with the value as its `result` unless undefined/null.
 * It throws `Fail`: the job fails for good (dead letter). It throws
 * anything else: the job is retried with the error's text. While a handler
 * runs, its job is heartbeated before the claim expires. `run()` resolves
 * with the counts once `stop()` is called or `signal` aborts (claimed jobs
 * not yet run are released back to the queue), or after `maxJobs`. A
 * claim that fails for a passing reason (the server unreachable, a 5xx)
 * is tried again after a second; any other error (a 4xx `ApiError`, a
 * failed ack) rejects it, after the same release.
 */
export class Worker {
  readonly name: string;
  readonly counts: WorkerCounts = { acked: 0, retried: 0, failed: 0, lost: 0 };
  private stopper = new AbortController();

  constructor(
    readonly client: Client,
    readonly queue: string,
    readonly handler: JobHandler,
    readonly options: WorkerOptions = {},
  ) {
    this.name = options.name ?? defaultName();
    options.signal?.addEventListener("abort", () => this.stop(), { once: true });
    if (options.signal?.aborted) this.stop();
  }

  get stopped(): boolean {
    return this.stopper.signal.aborted;
  }

  stop(): void {
    this.stopper.abort();
  }

  async run(): Promise<WorkerCounts> {
    const { batch = 1, waitMs = 5000, maxJobs } = this.options;
    let done = 0;
    let pending: ClaimedJob[] = [];
    try {
      while (!this.stopped && (maxJobs === undefined || done < maxJobs)) {
        const limit = maxJobs === undefined ? batch : Math.min(batch, maxJobs - done);
        try {
          pending = (
            await this.client.claim(
              this.queue,
              { worker: this.name, limit, wait_ms: waitMs },
              { signal: this.stopper.signal },
            )
          ).jobs;
        } catch (e) {
          if (this.stopped) break;
          if (!transient(e)) throw e;
          console.error(`alkstore worker ${this.name}: claim failed (${describe(e)}); again in 1 s`);
          await sleep(1000, this.stopper.signal);
          continue;
        }
        while (pending.length && !this.stopped) {
          await this.runOne(pending[0]);
          pending.shift();
          done += 1;
        }
      }
    } finally {
      for (const job of pending) {
        await this.client.release_job(job.id, { worker: this.name, token: job.token }).catch(() => undefined);
      }
    }
    return { ...this.counts };
  }

  private async runOne(job: ClaimedJob): Promise<void> {
    const ref = { worker: this.name, token: job.token };
    const beats = this.heartbeat(job);
    let outcome: "acked" | "retried" | "failed";
    let value: unknown;
    let error: unknown;
    try {
      value = await this.handler(job);
      if (value !== undefined && value !== null) JSON.stringify(value); // a result must be JSON: else the job is retried, saying why
      outcome = "acked";
    } catch (e) {
      error = e;
      outcome = e instanceof Fail ? "failed" : "retried";
    } finally {
      beats.stop();
    }
    let held: boolean;
    if (outcome === "acked") {
      const result = value === undefined || value === null ? undefined : value;
      held = (await this.client.ack(job.id, { ...ref, result })).done;
    } else if (outcome === "failed") {
      held = (await this.client.fail(job.id, { ...ref, error: (error as Error).message || "Fail" })).done;
    } else {
      const r = await this.client.retry(job.id, { ...ref, error: describe(error), delay_ms: this.options.retryDelayMs });
      held = r.outcome !== "not_held";
    }
    this.counts[held ? outcome : "lost"] += 1;
  }

  /** Heartbeat `job` until stopped: each beat scheduled from the last claim expiry. */
  private heartbeat(job: ClaimedJob): { stop(): void } {
    let timer: ReturnType<typeof setTimeout> | undefined;
    let stopped = false;
    const every = (expiresAt: number) =>
      this.options.heartbeatEveryMs ?? Math.max(500, ((expiresAt - Date.now() / 1000) * 1000) / 3);
    const schedule = (ms: number) => {
      if (!stopped) timer = setTimeout(beat, ms);
    };
    const beat = async () => {
      try {
        const r = await this.client.heartbeat(job.id, { worker: this.name, token: job.token });
        if (r.held && r.claim_expires_at != null) schedule(every(r.claim_expires_at));
      } catch {
        schedule(500); // try again soon
      }
    };
    schedule(every(job.claim_expires_at));
    return {
      stop() {
        stopped = true;
        clearTimeout(timer);
      },
    };
  }
}

/** node-<pid>-<random>: unique per process and helper. */
export function defaultName(): string {
  const pid = (globalThis as { process?: { pid?: number } }).process?.pid ?? 0;
  return `node-${pid}-${Math.random().toString(36).slice(2, 8)}`;
}

/** An error worth trying again after a while: the network (fetch's TypeError, a timeout), or a 5xx answer. */
export function transient(e: unknown): boolean {
  if (e instanceof ApiError) return e.status >= 500;
  return e instanceof TypeError || (e instanceof Error && e.name === "TimeoutError");
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(t);
      resolve();
    }, { once: true });
  });
}

function describe(e: unknown): string {
  if (e instanceof Error) return `${e.name}: ${e.message}`;
  return String(e);
}

/** `new Worker(client, queue, handler, options).run()`. */
export function work(client: Client, queue: string, handler: JobHandler, options: WorkerOptions = {}): Promise<WorkerCounts> {
  return new Worker(client, queue, handler, options).run();
}
