// A consumer-group member over the HTTP API: join, claim events of the
// buckets it holds, handle them in order per bucket, checkpoint under the
// lease epoch, leave.
import { ApiError } from "./client.js";
import { defaultName, sleep, transient } from "./worker.js";
/**
 * One member of consumer group `group` reading `stream`. `run()` joins,
 * then loops: claim (which heartbeats and waits up to `waitMs`), call
 * `handler(event)` on each event in offset order within each bucket, and
 * checkpoint each bucket's last handled offset under its epoch. A
 * checkpoint refused with 409 `not_held` (fenced: the bucket went to another
 * member under a newer epoch, which re-reads from the last checkpoint) drops the rest of that bucket's
 * events; so does a heartbeat (every `ttlMs / 3` while handlers run) that
 * no longer lists the bucket. A handler that throws stops its bucket for
 * this round: the event comes again on a later claim. A claim that fails
 * for a passing reason (network, 5xx) is tried again after a second.
 * `run()` leaves the group when stopped and resolves with the number of
 * events handled.
 */
export class GroupMember {
    client;
    group;
    stream;
    handler;
    options;
    member;
    membership;
    handled = 0;
    leases = new Map(); // bucket -> epoch
    lastContact = 0;
    stopper = new AbortController();
    constructor(client, group, stream, handler, options = {}) {
        this.client = client;
        this.group = group;
        this.stream = stream;
        this.handler = handler;
        this.options = options;
        this.member = options.member ?? defaultName();
        options.signal?.addEventListener("abort", () => this.stop(), { once: true });
        if (options.signal?.aborted)
            this.stop();
    }
    get stopped() {
        return this.stopper.signal.aborted;
    }
    stop() {
        this.stopper.abort();
    }
    get ttlMs() {
        return this.options.ttlMs ?? 30_000;
    }
    /** Join (also done by `run()`). */
    async join() {
        const m = await this.client.join_group(this.group, {
            stream: this.stream,
            member: this.member,
            buckets: this.options.buckets,
            ttl_ms: this.ttlMs,
        });
        this.heard(m.leases);
        this.member = m.member;
        this.membership = m;
        return m;
    }
    /** Leave: every lease is released at once. */
    leave() {
        return this.client.leave_group(this.group, this.member);
    }
    async run() {
        await this.join();
        const every = this.ttlMs / 3;
        const beats = setInterval(() => void this.beat(every), Math.min(every, 1000));
        try {
            while (!this.stopped) {
                let got;
                try {
                    got = await this.client.member_claim(this.group, this.member, { limit: this.options.limit ?? 100, wait_ms: this.options.waitMs ?? 5000, ttl_ms: this.ttlMs }, { signal: this.stopper.signal });
                }
                catch (e) {
                    if (this.stopped)
                        break;
                    if (!transient(e))
                        throw e;
                    console.error(`alkstore group member ${this.member}: claim failed (${e}); again in 1 s`);
                    await sleep(1000, this.stopper.signal);
                    continue;
                }
                this.heard(got.leases);
                if (await this.handle(got.events))
                    await sleep(this.options.retryDelayMs ?? 1000, this.stopper.signal);
            }
        }
        finally {
            clearInterval(beats);
            await this.leave().catch(() => undefined);
        }
        return this.handled;
    }
    /** Handle one claim's events; true when a handler failed. */
    async handle(events) {
        const byBucket = new Map();
        for (const ev of [...events].sort((a, b) => a.offset - b.offset)) {
            const list = byBucket.get(ev.bucket) ?? [];
            list.push(ev);
            byBucket.set(ev.bucket, list);
        }
        let failed = false;
        const every = this.ttlMs / 3;
        for (const [bucket, evs] of byBucket) {
            const epoch = evs[0].epoch;
            let last;
            let since = Date.now();
            for (const ev of evs) {
                if (this.stopped || this.leases.get(bucket) !== epoch)
                    break;
                try {
                    await this.handler(ev);
                }
                catch (e) {
                    (this.options.onError ?? printError)(ev, e);
                    failed = true;
                    break;
                }
                last = ev.offset;
                this.handled += 1;
                if (Date.now() - since >= every) {
                    // a long batch: save progress
                    if (!(await this.checkpoint(bucket, epoch, last))) {
                        last = undefined;
                        break;
                    }
                    since = Date.now();
                }
            }
            if (last !== undefined)
                await this.checkpoint(bucket, epoch, last);
            if (this.stopped)
                break;
        }
        return failed;
    }
    /** Save the bucket's checkpoint; false when fenced (no longer ours). */
    async checkpoint(bucket, epoch, offset) {
        try {
            await this.client.member_checkpoint(this.group, this.member, { bucket, epoch, offset });
            return true;
        }
        catch (e) {
            if (e instanceof ApiError && e.status === 409 && (e.code === "not_held" || e.code === "fenced")) {
                if (this.leases.get(bucket) === epoch)
                    this.leases.delete(bucket);
                return false;
            }
            throw e;
        }
    }
    heard(leases) {
        this.leases = new Map(leases.map((l) => [l.bucket, l.epoch]));
        this.lastContact = Date.now();
    }
    async beat(every) {
        if (this.stopped || Date.now() - this.lastContact < every)
            return;
        this.lastContact = Date.now(); // one beat at a time
        try {
            const m = await this.client.member_heartbeat(this.group, this.member, { ttl_ms: this.ttlMs });
            if (!this.stopped) {
                this.heard(m.leases);
                this.membership = m;
            }
        }
        catch {
            // the next claim or beat tries again
        }
    }
}
function printError(event, error) {
    console.error(`alkstore group handler failed on offset ${event.offset}: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`);
}
