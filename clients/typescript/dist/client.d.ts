import { GeneratedClient } from "./generated.js";
import type { CallOptions, Done, RateDecisionView } from "./generated.js";
/**
 * An error answer of the server: `{"error": {"code", "field", "message"}}`.
 * `code` is a stable snake_case name (`invalid_input`, `not_found`,
 * `not_held`, ...), `field` the request field at fault; for an
 * atomic request also `op_index` and `op`, the op that failed.
 */
export declare class ApiError extends Error {
    readonly status: number;
    readonly code: string | null;
    readonly field: string | null;
    readonly op_index: number | null;
    readonly op: string | null;
    constructor(status: number, code: string | null, message: string, field?: string | null, opIndex?: number | null, op?: string | null);
    /** The message part alone (without status and code). */
    get detail(): string;
    static fromBody(status: number, text: string): ApiError;
}
/** One message of a channel's stream: `event` is the SSE event name (`notification`), `payload` the text sent. */
export interface Notification {
    channel: string;
    event: string;
    payload: string;
}
export interface ClientOptions {
    /** The server's bearer token (`alk serve --token`). */
    token?: string;
    /** How long a call may take, in ms, on top of its `wait_ms` (default 30,000). */
    timeoutMs?: number;
}
/**
 * A client of `alk serve`: every operation of the API as a method named
 * after its operationId (path values positional, then one object with the
 * query and body fields, then `{ signal }`), plus `listen`, `result`,
 * `notify` and `rate_acquire`. A 4xx/5xx answer rejects with `ApiError`.
 *
 * ```js
 * const client = new Client("http://127.0.0.1:7878", { token: "..." });
 * await client.enqueue("emails", { payload: { to: "a@example.com" } });
 * ```
 */
export declare class Client extends GeneratedClient {
    readonly url: string;
    readonly token: string | undefined;
    readonly timeoutMs: number;
    constructor(url?: string, options?: ClientOptions | string);
    private headers;
    protected request<T>(method: string, path: string, query: object | undefined, body: unknown, options?: CallOptions): Promise<T>;
    /**
     * A job's saved result (acked with `result`), waiting up to `waitMs` for
     * it: the answer's `result` field. Rejects with ApiError 404 `not_found`
     * when none came within the wait; the whole answer is `get_result`.
     */
    result(jobId: number, waitMs?: number, options?: CallOptions): Promise<unknown>;
    /** Send `payload` (text) to whoever listens on `channel` now (`notify_channel`). */
    notify(channel: string, payload?: string, options?: CallOptions): Promise<Done>;
    /** Take one admission of the store-wide rate limit `name` (`limit` per `per_ms` window) (`acquire_rate`). */
    rate_acquire(name: string, limit: number, per_ms: number, options?: CallOptions): Promise<RateDecisionView>;
    /**
     * Listen on `channel`: notifications sent from now on, as a `Listener`
     * (async-iterable; `next()` reads one; `close()` ends it). The connection
     * is open, and listening, once the promise resolves.
     */
    listen(channel: string, options?: CallOptions): Promise<Listener>;
    /** `listen`, under the operation's own name (`GET /api/v1/channels/{channel}/listen`). */
    listen_channel(channel: string, options?: CallOptions): Promise<Listener>;
}
/** An open `GET /api/v1/channels/{channel}/listen` (server-sent events). */
export declare class Listener implements AsyncIterable<Notification> {
    private controller;
    readonly channel: string;
    private reader;
    private decoder;
    private buffer;
    private closed;
    constructor(channel: string, body: ReadableStream<Uint8Array>, controller: AbortController);
    /** The next notification, or undefined once the stream has ended or was closed. */
    next(): Promise<Notification | undefined>;
    private line;
    /** Stop listening: a pending `next()` resolves to undefined. */
    close(): void;
    [Symbol.asyncIterator](): AsyncIterator<Notification>;
}
