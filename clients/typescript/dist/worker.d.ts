import type { Client } from "./client.js";
import type { ClaimedJob } from "./generated.js";
/** Throw from a handler to fail the job for good: it goes to the dead letters at once, no retry. */
export declare class Fail extends Error {
    constructor(message?: string);
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
export declare class Worker {
    readonly client: Client;
    readonly queue: string;
    readonly handler: JobHandler;
    readonly options: WorkerOptions;
    readonly name: string;
    readonly counts: WorkerCounts;
    private stopper;
    constructor(client: Client, queue: string, handler: JobHandler, options?: WorkerOptions);
    get stopped(): boolean;
    stop(): void;
    run(): Promise<WorkerCounts>;
    private runOne;
    /** Heartbeat `job` until stopped: each beat scheduled from the last claim expiry. */
    private heartbeat;
}
/** node-<pid>-<random>: unique per process and helper. */
export declare function defaultName(): string;
/** An error worth trying again after a while: the network (fetch's TypeError, a timeout), or a 5xx answer. */
export declare function transient(e: unknown): boolean;
/** Resolves after `ms`, or at once when `signal` aborts. */
export declare function sleep(ms: number, signal: AbortSignal): Promise<void>;
/** `new Worker(client, queue, handler, options).run()`. */
export declare function work(client: Client, queue: string, handler: JobHandler, options?: WorkerOptions): Promise<WorkerCounts>;
