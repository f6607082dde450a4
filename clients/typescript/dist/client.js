// The HTTP client: transport, errors, and the calls that are not plain JSON
// (the notification stream). Node 20's fetch only.
import { GeneratedClient, seg } from "./generated.js";
/**
 * An error answer of the server: `{"error": {"code", "field", "message"}}`.
 * `code` is a stable snake_case name (`invalid_input`, `not_found`,
 * `not_held`, ...), `field` the request field at fault; for an
 * atomic request also `op_index` and `op`, the op that failed.
 */
export class ApiError extends Error {
    status;
    code;
    field;
    op_index;
    op;
    constructor(status, code, message, field = null, opIndex = null, op = null) {
        super(`${status} ${code}${field ? ` (${field})` : ""}: ${message}`);
        this.name = "ApiError";
        this.status = status;
        this.code = code;
        this.field = field;
        this.op_index = opIndex;
        this.op = op;
    }
    /** The message part alone (without status and code). */
    get detail() {
        return this.message.slice(this.message.indexOf(": ") + 2);
    }
    static fromBody(status, text) {
        try {
            const e = JSON.parse(text)?.error;
            if (e && typeof e === "object") {
                return new ApiError(status, e.code ?? null, e.message ?? "", e.field ?? null, e.op_index ?? null, e.op ?? null);
            }
        }
        catch {
            // not JSON: a proxy's page, say
        }
        return new ApiError(status, null, text.trim() || `HTTP ${status}`);
    }
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
export class Client extends GeneratedClient {
    url;
    token;
    timeoutMs;
    constructor(url = "http://127.0.0.1:7878", options = {}) {
        super();
        const o = typeof options === "string" ? { token: options } : options;
        this.url = url.replace(/\/+$/, "");
        this.token = o.token || undefined;
        this.timeoutMs = o.timeoutMs ?? 30_000;
    }
    headers(accept, json) {
        const h = { accept };
        if (json)
            h["content-type"] = "application/json";
        if (this.token)
            h.authorization = `Bearer ${this.token}`;
        return h;
    }
    async request(method, path, query, body, options = {}) {
        const waitMs = Number((query?.wait_ms ?? body?.wait_ms) || 0);
        const timeout = AbortSignal.timeout(this.timeoutMs + waitMs);
        const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
        const res = await fetch(this.url + path + queryString(query), {
            method,
            headers: this.headers("application/json", body !== undefined),
            body: body === undefined ? undefined : JSON.stringify(body),
            signal,
        });
        const text = await res.text();
        if (!res.ok)
            throw ApiError.fromBody(res.status, text);
        return (text ? JSON.parse(text) : undefined);
    }
    /**
     * A job's saved result (acked with `result`), waiting up to `waitMs` for
     * it: the answer's `result` field. Rejects with ApiError 404 `not_found`
     * when none came within the wait; the whole answer is `get_result`.
     */
    async result(jobId, waitMs, options) {
        return (await this.get_result(jobId, { wait_ms: waitMs }, options)).result;
    }
    /** Send `payload` (text) to whoever listens on `channel` now (`notify_channel`). */
    notify(channel, payload = "", options) {
        return this.notify_channel(channel, { payload }, options);
    }
    /** Take one admission of the store-wide rate limit `name` (`limit` per `per_ms` window) (`acquire_rate`). */
    rate_acquire(name, limit, per_ms, options) {
        return this.acquire_rate(name, { limit, per_ms }, options);
    }
    /**
     * Listen on `channel`: notifications sent from now on, as a `Listener`
     * (async-iterable; `next()` reads one; `close()` ends it). The connection
     * is open, and listening, once the promise resolves.
     */
    async listen(channel, options = {}) {
        const controller = new AbortController();
        const signal = options.signal ? AbortSignal.any([options.signal, controller.signal]) : controller.signal;
        const res = await fetch(`${this.url}/api/v1/channels/${seg(channel)}/listen`, {
            headers: this.headers("text/event-stream", false),
            signal,
        });
        if (!res.ok || !res.body)
            throw ApiError.fromBody(res.status, await res.text());
        return new Listener(channel, res.body, controller);
    }
    /** `listen`, under the operation's own name (`GET /api/v1/channels/{channel}/listen`). */
    listen_channel(channel, options = {}) {
        return this.listen(channel, options);
    }
}
function queryString(query) {
    if (!query)
        return "";
    const parts = [];
    for (const [k, v] of Object.entries(query)) {
        if (v === undefined || v === null)
            continue;
        parts.push(`${seg(k)}=${seg(String(v))}`);
    }
    return parts.length ? `?${parts.join("&")}` : "";
}
/** An open `GET /api/v1/channels/{channel}/listen` (server-sent events). */
export class Listener {
    controller;
    channel;
    reader;
    decoder = new TextDecoder();
    buffer = "";
    closed = false;
    constructor(channel, body, controller) {
        this.controller = controller;
        this.channel = channel;
        this.reader = body.getReader();
    }
    /** The next notification, or undefined once the stream has ended or was closed. */
    async next() {
        let event = null;
        const data = [];
        for (;;) {
            const line = await this.line();
            if (line === undefined)
                return undefined;
            if (line === "") {
                if (event === "error") {
                    this.close();
                    throw new Error(`listening on ${JSON.stringify(this.channel)} ended: ${data.join("\n")}`);
                }
                if (data.length)
                    return { channel: this.channel, event: event ?? "message", payload: data.join("\n") };
                event = null;
                continue;
            }
            if (line.startsWith(":"))
                continue; // a comment: the keepalive
            const colon = line.indexOf(":");
            const name = colon < 0 ? line : line.slice(0, colon);
            let value = colon < 0 ? "" : line.slice(colon + 1);
            if (value.startsWith(" "))
                value = value.slice(1);
            if (name === "event")
                event = value;
            else if (name === "data")
                data.push(value);
        }
    }
    async line() {
        for (;;) {
            const nl = this.buffer.indexOf("\n");
            if (nl >= 0) {
                const line = this.buffer.slice(0, nl);
                this.buffer = this.buffer.slice(nl + 1);
                return line.endsWith("\r") ? line.slice(0, -1) : line;
            }
            if (this.closed)
                return undefined;
            let chunk;
            try {
                chunk = await this.reader.read();
            }
            catch (e) {
                if (this.closed)
                    return undefined;
                throw e;
            }
            if (chunk.done) {
                this.closed = true;
                return undefined;
            }
            this.buffer += this.decoder.decode(chunk.value, { stream: true });
        }
    }
    /** Stop listening: a pending `next()` resolves to undefined. */
    close() {
        if (this.closed)
            return;
        this.closed = true;
        this.controller.abort();
    }
    [Symbol.asyncIterator]() {
        return {
            next: async () => {
                const n = await this.next();
                return n ? { value: n, done: false } : { value: undefined, done: true };
            },
            return: async () => {
                this.close();
                return { value: undefined, done: true };
            },
        };
    }
}
