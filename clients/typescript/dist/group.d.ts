import type { Client } from "./client.js";
import type { GroupEventView, Membership } from "./generated.js";
export type EventHandler = (event: GroupEventView) => unknown;
export interface GroupMemberOptions {
    /** This member's id (default: node-<pid>-<random>); unique per running process. */
    member?: string;
    /** The group's bucket count, used when this join creates the group. */
    buckets?: number;
    /** Lease time in ms (default 30,000): heartbeats go every third of it. */
    ttlMs?: number;
    /** Events per claim (default 100). */
    limit?: number;
    /** How long a claim waits for events, in ms (default 5,000). */
    waitMs?: number;
    /** After a handler failed, claim again after this many ms (default 1,000). */
    retryDelayMs?: number;
    /** Told about a handler's failure (default: a line on stderr). */
    onError?: (event: GroupEventView, error: unknown) => void;
    /** Aborting it stops the member, which leaves the group. */
    signal?: AbortSignal;
}
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
export declare class GroupMember {
    readonly client: Client;
    readonly group: string;
    readonly stream: string;
    readonly handler: EventHandler;
    readonly options: GroupMemberOptions;
    member: string;
    membership: Membership | undefined;
    handled: number;
    private leases;
    private lastContact;
    private stopper;
    constructor(client: Client, group: string, stream: string, handler: EventHandler, options?: GroupMemberOptions);
    get stopped(): boolean;
    stop(): void;
    private get ttlMs();
    /** Join (also done by `run()`). */
    join(): Promise<Membership>;
    /** Leave: every lease is released at once. */
    leave(): Promise<import("./generated.js").Left>;
    run(): Promise<number>;
    /** Handle one claim's events; true when a handler failed. */
    private handle;
    /** Save the bucket's checkpoint; false when fenced (no longer ours). */
    private checkpoint;
    private heard;
    private beat;
}
