/** Options every call takes. */
export interface CallOptions {
    /** Aborts the request (a long poll too). */
    signal?: AbortSignal;
}
/**
 * A path value as one URL path segment: every reserved character (and space, `%`, non-ASCII)
 * percent-encoded. A name that is exactly `.` or `..` cannot be sent: fetch resolves it (even
 * percent-encoded) as a relative path segment, so it throws a RangeError instead.
 */
export declare function seg(value: string | number): string;
/** Claims to ack in one transaction. */
export interface AckBatchRequest {
    /** 1 to 1,000 claims. */
    claims: Array<ClaimItem>;
}
/**
 * Per claim, in request order: whether it was acked (false: no longer
 * held).
 */
export interface AckBatchResponse {
    /** One per claim. */
    done: Array<boolean>;
}
/** Ack a claimed job: the body of `POST /api/v1/jobs/{id}/ack`, with `id`. A claim no longer held fails the request (409). */
export interface AckOp {
    /** Job id (the path's `{id}` of the single call). */
    id: number;
    /** The op's kind. */
    op: "ack";
    /** The claim's token. */
    token: number;
    /** The worker named in the claim. */
    worker: string;
}
/** The claim to ack, and what the job produced. */
export interface AckRequest {
    /**
     * The job's result, any JSON: saved (kept a day) before the ack, for
     * `GET /api/v1/jobs/{id}/result`. A later attempt's result replaces it.
     */
    result?: unknown;
    /** The claim's token. */
    token: number;
    /** The worker named in the claim. */
    worker: string;
}
/** Take or renew a lock for a while. */
export interface AcquireRequest {
    /** Who holds it. */
    owner: string;
    /**
     * How long the hold lasts unless renewed, in ms (the store's clock;
     * 1 ms to a day).
     */
    ttl_ms: number;
}
/** One write: the body of the single call it stands for, that call's path values as fields, and an `op` tag. */
export type AtomicOp = EnqueueOp | EnqueueBatchOp | PublishOp | AckOp | RetryOp | FailOp | SnoozeOp | OffsetCommitOp | GroupCheckpointOp | NotifyOp | LockFenceOp | ScheduleSetOp | ScheduleRemoveOp | SchedulePauseOp | ScheduleResumeOp;
/** Writes to run in order in one transaction, all or none. */
export interface AtomicRequest {
    /**
     * 1 to 100 ops, run in this order. Together they may write at most
     * 1,000 rows (each job of an enqueue and each event of a publish
     * counts one, every other op one).
     */
    ops: Array<AtomicOp>;
}
/** Every op's result, in request order. */
export interface AtomicResponse {
    /**
     * One per op, tagged with its `op`, shaped as the single call's
     * response.
     */
    results: Array<AtomicResult>;
}
/** One op's result, tagged with its `op`. */
export type AtomicResult = (EnqueuedJob & {
    op: "enqueue";
}) | (EnqueuedJobs & {
    op: "enqueue_batch";
}) | (Published & {
    op: "publish";
}) | (Done & {
    op: "ack";
}) | (RetryResponse & {
    op: "retry";
}) | (Done & {
    op: "fail";
}) | (Snoozed & {
    op: "snooze";
}) | (OffsetView & {
    op: "offset_commit";
}) | (CheckpointView & {
    op: "group_checkpoint";
}) | {
    op: "notify";
} | {
    op: "lock_fence";
} | (ScheduleView & {
    op: "schedule_set";
}) | (Removed & {
    op: "schedule_remove";
}) | (ScheduleView & {
    op: "schedule_pause";
}) | (ScheduleView & {
    op: "schedule_resume";
});
/** One failed attempt. */
export interface AttemptErrorView {
    /** When it failed (unix seconds). */
    at: number;
    /** The attempt's number. */
    attempt: number;
    /** What the handler reported. */
    error: string;
}
/** One bucket's lease and progress. */
export interface BucketView {
    /** The bucket, from 0. */
    bucket: number;
    /** The last offset handled in the bucket. */
    checkpoint: number;
    /** Claims so far: grows on every change of owner. */
    epoch: number;
    /** Lapsed by the database's clock: the bucket is up for grabs. */
    expired: boolean;
    /** When the lease lapses (unix ms). */
    expires_at_ms?: number | null;
    /** Events of the bucket after its checkpoint. */
    lag: number;
    /** Its holder (null: never taken, or released). */
    owner?: string | null;
}
/** An action on chosen jobs. */
export interface BulkRequest {
    /**
     * `retry` (dead letters run again as fresh jobs; waiting jobs run
     * now), `run_now` (scheduled and retryable jobs run now), `cancel`
     * (pending jobs go to the dead letters as cancelled; running ones are
     * asked to stop) or `delete` (pending jobs and dead letters go for
     * good).
     */
    action: string;
    /** 1 to 1,000 job ids. Give these or `matching`, not both. */
    ids?: Array<number> | null;
    matching?: JobFilter | null;
}
/** What a bulk action did. */
export interface BulkResult {
    /** Jobs it changed (for `cancel`: cancelled at once). */
    changed: number;
    /** With `matching`: the jobs found and acted on. */
    matched?: number | null;
    /**
     * With `matching`: more jobs may match after this id; pass it as
     * `matching.after_id` to go on. Absent when every job was read.
     */
    next_after_id?: number | null;
    /** For `cancel`: running jobs asked to stop. */
    requested: number;
}
/** What a cancel did. */
export interface CancelResponse {
    /**
     * `cancelled` (it was waiting: now dead as cancelled), `requested` (it
     * is running: its worker is told) or `not_found`.
     */
    outcome: string;
}
/** Whether a pause or resume changed anything. */
export interface Changed {
    /** False when the queue was already so. */
    changed: boolean;
}
/** A notification to send. */
export interface ChannelNotifyRequest {
    /** Text, at most 7,000 bytes, no NUL. */
    payload?: string;
}
/** A group bucket's checkpoint. */
export interface CheckpointView {
    /** The checkpoint saved after the op (never lower than before). */
    checkpoint: number;
}
/** One claim of a batch ack. */
export interface ClaimItem {
    /** Job id. */
    id: number;
    /** The claim's token. */
    token: number;
    /** The worker named in the claim. */
    worker: string;
}
/** The claim a settle or heartbeat acts on. */
export interface ClaimRef {
    /** The claim's token. */
    token: number;
    /** The worker named in the claim. */
    worker: string;
}
/** Claim up to `limit` jobs, waiting up to `wait_ms` for the first. */
export interface ClaimRequest {
    /** 1 to 1,000 (default 1). */
    limit?: number | null;
    /**
     * 0 to 30,000 ms (default 0: answer at once). The wait ends as soon as
     * a job is enqueued, in this process or another.
     */
    wait_ms?: number | null;
    /** Who claims: named in the claim, and needed to settle it. */
    worker: string;
}
/**
 * A claimed job: run it, then ack, retry or fail it with `worker` and
 * `token`, and heartbeat it before `claim_expires_at` if it runs long.
 */
export interface ClaimedJob {
    /** This attempt's number, from 1. */
    attempt: number;
    /** When the claim lapses unless renewed (unix seconds). */
    claim_expires_at: number;
    /** When it was enqueued (unix seconds). */
    created_at: number;
    /** Job id. */
    id: number;
    /** Attempts allowed. */
    max_attempts: number;
    /** Its metadata, as enqueued (an empty object when none). */
    meta: Record<string, unknown>;
    /**
     * The payload as enqueued (null when it is not JSON; see
     * `payload_base64`).
     */
    payload: unknown;
    /**
     * The payload's bytes in base64, when they are not JSON (a job
     * enqueued by a program that stores raw bytes).
     */
    payload_base64?: string | null;
    /** Priority. */
    priority: number;
    /** Its queue. */
    queue: string;
    /** When the job became due (unix seconds). */
    run_at: number;
    /** Its tags, as enqueued. */
    tags: Array<string>;
    /** This claim's token: settle and heartbeat with it. */
    token: number;
    /** Its unique key. */
    unique_key?: string | null;
}
/** Claimed jobs (empty when none came within the wait). */
export interface ClaimedJobs {
    /** In claim order: priority, then due time. */
    jobs: Array<ClaimedJob>;
}
/** An offset to save. */
export interface CommitRequest {
    /**
     * The offset the caller last read as saved (0 when none was): when
     * given, the commit is a compare-and-set and moves the offset only
     * from exactly this one; else it fails with 409 `not_held` and
     * nothing is written (another instance of the consumer moved it).
     */
    expected?: number | null;
    /**
     * The last offset handled. A commit below the saved one is ignored
     * (offsets never move back); one past the head is refused.
     */
    offset: number;
}
/** A consumer and how far behind it is. */
export interface ConsumerView {
    /** Its name. */
    consumer: string;
    /** Events after it. */
    lag: number;
    /** Its saved offset. */
    offset: number;
    /** When it last committed (unix seconds). */
    updated_at: number;
}
/** How many jobs a call changed. */
export interface Count {
    /** The number changed. */
    count: number;
}
/** Which dead letters to requeue or purge. */
export interface DeadSelectRequest {
    /** Only these ids (default: every dead letter of the queue). */
    ids?: Array<number> | null;
}
/** One queue's counts at one moment. */
export interface DepthSampleView {
    /** When (unix seconds). */
    at: number;
    /** Dead letters. */
    dead: number;
    /** Claimed. */
    processing: number;
    /** Queue name. */
    queue: string;
    /** Waiting and due. */
    ready: number;
    /** Waiting, due later. */
    scheduled: number;
}
/** Queue depth over time. */
export interface DepthView {
    /**
     * Oldest first, then by queue: one per queue each time the
     * maintenance sweep ran (once a minute by default).
     */
    samples: Array<DepthSampleView>;
}
/**
 * Whether the call changed the job: false when the claim was no longer
 * held (it lapsed and the job went back, or another worker has it).
 */
export interface Done {
    /** True when it took effect. */
    done: boolean;
}
/** Enqueue several jobs: the body of `POST /api/v1/queues/{queue}/jobs/batch`, with `queue`. */
export interface EnqueueBatchOp {
    /** 1 to 1,000 jobs. */
    jobs: Array<EnqueueRequest>;
    /** The op's kind. */
    op: "enqueue_batch";
    /** Queue name (the path's `{queue}` of the single call): 1 to 200 bytes of UTF-8, no NUL. */
    queue: string;
}
/** Several jobs to enqueue in one transaction. */
export interface EnqueueBatchRequest {
    /** 1 to 1,000 jobs. */
    jobs: Array<EnqueueRequest>;
}
/** Enqueue a job: the body of `POST /api/v1/queues/{queue}/jobs`, with `queue`. Claimable once the request commits. */
export interface EnqueueOp {
    /**
     * Run no earlier than this many milliseconds from now (whole seconds:
     * due times are kept in seconds).
     */
    delay_ms?: number | null;
    /**
     * Dead as `expired` when not started this many milliseconds after due
     * (at least 1,000).
     */
    expires_in_ms?: number | null;
    /**
     * Attempts allowed before the job is dead (default: the queue's, which
     * is this schema's `default` unless the program that owns the store
     * configured the queue otherwise).
     */
    max_attempts?: number | null;
    /**
     * Facts about the job kept beside its payload and shown with it (who
     * asked, a trace id): a JSON object of at most 8,192 bytes.
     */
    meta?: Record<string, unknown>;
    /** The op's kind. */
    op: "enqueue";
    /** Any JSON value; the handler gets it back as enqueued. */
    payload: unknown;
    /** Higher runs first (default 0). */
    priority?: number;
    /** Queue name (the path's `{queue}` of the single call): 1 to 200 bytes of UTF-8, no NUL. */
    queue: string;
    /** Run no earlier than this unix time in seconds (wins over `delay_ms`). */
    run_at?: number | null;
    /**
     * Labels to find the job by (`GET /api/v1/jobs?tag=`): at most 20,
     * each 1 to 200 bytes; repeats are kept once.
     */
    tags?: Array<Tag>;
    /**
     * At most one live job per queue with this key: a second enqueue
     * returns the first one's id with `duplicate: true`.
     */
    unique_key?: string | null;
}
/** One job to enqueue. */
export interface EnqueueRequest {
    /**
     * Run no earlier than this many milliseconds from now (whole seconds:
     * due times are kept in seconds).
     */
    delay_ms?: number | null;
    /**
     * Dead as `expired` when not started this many milliseconds after due
     * (at least 1,000).
     */
    expires_in_ms?: number | null;
    /**
     * Attempts allowed before the job is dead (default: the queue's, which
     * is this schema's `default` unless the program that owns the store
     * configured the queue otherwise).
     */
    max_attempts?: number | null;
    /**
     * Facts about the job kept beside its payload and shown with it (who
     * asked, a trace id): a JSON object of at most 8,192 bytes.
     */
    meta?: Record<string, unknown>;
    /** Any JSON value; the handler gets it back as enqueued. */
    payload: unknown;
    /** Higher runs first (default 0). */
    priority?: number;
    /** Run no earlier than this unix time in seconds (wins over `delay_ms`). */
    run_at?: number | null;
    /**
     * Labels to find the job by (`GET /api/v1/jobs?tag=`): at most 20,
     * each 1 to 200 bytes; repeats are kept once.
     */
    tags?: Array<Tag>;
    /**
     * At most one live job per queue with this key: a second enqueue
     * returns the first one's id with `duplicate: true`.
     */
    unique_key?: string | null;
}
/** An enqueued job. */
export interface EnqueuedJob {
    /** True when a live job with the same unique key was there already. */
    duplicate: boolean;
    /** Its id (the existing job's, for a duplicate). */
    id: number;
}
/** The jobs of a batch enqueue, in request order. */
export interface EnqueuedJobs {
    /** One per job asked. */
    jobs: Array<EnqueuedJob>;
}
/** The body of every error response. */
export interface ErrorBody {
    /** What went wrong. */
    error: ErrorDetail;
}
/**
 * What went wrong, for programs (`code`, `field`) and for people
 * (`message`).
 */
export interface ErrorDetail {
    /**
     * A stable snake_case name: `invalid_input`, `payload_too_large`,
     * `not_found`, `unauthorized`, `forbidden`, `busy`, `conflict`,
     * `not_held` (a claim, lease or lock is no longer the caller's),
     * `group_mismatch` (409: a consumer group exists with another stream
     * or bucket count), `method_not_allowed`, `rolled_back`,
     * `storage_full` (507: the database's disk is full), `unavailable`,
     * `internal`.
     */
    code: string;
    /** The request field at fault, when one is. */
    field?: string | null;
    /** A sentence saying what is wrong. */
    message: string;
    /**
     * For an atomic request: the failing op's kind (its `op` tag, when it
     * had a known one).
     */
    op?: string | null;
    /**
     * For an atomic request (`POST /api/v1/atomic`): the index in `ops`
     * of the op that failed (from 0). Nothing of the request was written.
     */
    op_index?: number | null;
}
/** Events after an offset. */
export interface EventPage {
    /** In offset order; newest first for a read with `before`. */
    events: Array<EventView>;
    /**
     * Pass as `after` to read on (the highest offset read, or `after`
     * again when none came).
     */
    next_after: number;
    /**
     * For a read with `before`: pass as the next `before` to page further
     * back (the lowest offset read); absent once the page came back short,
     * at the start of the stream.
     */
    next_before?: number | null;
}
/** A stored event. */
export interface EventView {
    /** When it was published (unix seconds). */
    created_at: number;
    /** Its key. */
    key?: string | null;
    /** Its offset (grows with every event of the store). */
    offset: number;
    /** The payload (null when not JSON; see `payload_base64`). */
    payload: unknown;
    /** The payload's bytes in base64, when they are not JSON. */
    payload_base64?: string | null;
}
/** Fail a claimed job for good: the body of `POST /api/v1/jobs/{id}/fail`, with `id`. A claim no longer held fails the request (409). */
export interface FailOp {
    /** Why (kept on the dead letter). */
    error: string;
    /** Job id (the path's `{id}` of the single call). */
    id: number;
    /** The op's kind. */
    op: "fail";
    /** The claim's token. */
    token: number;
    /** The worker named in the claim. */
    worker: string;
}
/** A permanent failure: the job goes to the dead letters now. */
export interface FailRequest {
    /** Why (kept on the dead letter). */
    error: string;
    /** The claim's token. */
    token: number;
    /** The worker named in the claim. */
    worker: string;
}
/** A grant, or why not. */
export interface GrantView {
    /** When the hold lapses (unix ms). */
    expires_at_ms?: number | null;
    /** True when the caller holds the lock now. */
    held: boolean;
    /** The grant's fencing token (pass it to whatever the lock guards). */
    token?: number | null;
}
/** Move a consumer group bucket's checkpoint under the lease epoch the worker holds; the lease cannot be taken over before the request commits. A lease no longer held under `epoch` fails the request (409). */
export interface GroupCheckpointOp {
    /** The bucket, from 0. */
    bucket: number;
    /** The epoch the lease was claimed under. */
    epoch: number;
    /** The group. */
    group: string;
    /**
     * The last offset handled in the bucket (checkpoints never move
     * back: a lower one leaves it where it is).
     */
    offset: number;
    /** The op's kind. */
    op: "group_checkpoint";
    /** The worker holding the bucket's lease. */
    worker: string;
}
/** A page of a group's dead letters. */
export interface GroupDeadPage {
    /** Lowest offsets first. */
    dead: Array<GroupDeadView>;
    /** Pass as `after` for the next page (absent on the last). */
    next_after?: number | null;
}
/** Which of a group's dead letters to requeue or purge. */
export interface GroupDeadSelectRequest {
    /**
     * Only these offsets, at most 1,000 (absent: every dead letter of the
     * group; an empty list: none).
     */
    offsets?: Array<number> | null;
}
/** An event a group's handler gave up on. */
export interface GroupDeadView {
    /** How many times the handler ran. */
    attempts: number;
    /** Its bucket. */
    bucket: number;
    /** When it was published (unix seconds). */
    created_at: number;
    /** The handler's last error. */
    error: string;
    /** When it was given up on (unix seconds). */
    failed_at: number;
    /** Its key. */
    key?: string | null;
    /** The event's offset (its id in the group's dead letters). */
    offset: number;
    /** The payload (null when not JSON; see `payload_base64`). */
    payload: unknown;
    /** The payload's bytes in base64, when they are not JSON. */
    payload_base64?: string | null;
    /** Asked to run again and not yet taken by its bucket's holder. */
    requeued: boolean;
    /** Its stream. */
    stream: string;
}
/** An event of a held bucket. */
export interface GroupEventView {
    /** Its bucket. */
    bucket: number;
    /** When it was published (unix seconds). */
    created_at: number;
    /** The bucket's lease epoch: checkpoint under it. */
    epoch: number;
    /** Its key (all events of a key are in one bucket, in order). */
    key?: string | null;
    /** Its offset. */
    offset: number;
    /** The payload (null when not JSON; see `payload_base64`). */
    payload: unknown;
    /** The payload's bytes in base64, when they are not JSON. */
    payload_base64?: string | null;
}
/** A group's lease history. */
export interface GroupHandoffsView {
    /** Newest first (a week is kept). */
    handoffs: Array<HandoffView>;
    /** Every handoff by cause. */
    totals: HandoffTotals;
}
/** Every group. */
export interface GroupList {
    /** By name. */
    groups: Array<GroupView>;
}
/** A group's buckets. */
export interface GroupStatusView {
    /** Every bucket, by number. */
    buckets: Array<BucketView>;
    /** The group. */
    group: string;
    /** The stream it reads. */
    stream: string;
}
/** A group in a listing. */
export interface GroupView {
    /** Its bucket count. */
    buckets: number;
    /** Its dead letters (events its handler gave up on). */
    dead: number;
    /** The group. */
    group: string;
    /** Distinct workers holding an unexpired lease. */
    live_owners: number;
    /** Live members, with or without buckets. */
    live_workers: number;
    /** The stream it reads. */
    stream: string;
}
/** Handoffs counted by cause since the group was created. */
export interface HandoffTotals {
    /** First leases. */
    first: number;
    /** Lapses: failovers. */
    lapse: number;
    /** Leaves. */
    leave: number;
    /** Rebalances. */
    rebalance: number;
}
/** One change of a bucket's holder. */
export interface HandoffView {
    /** When (unix ms). */
    at_ms: number;
    /** The bucket. */
    bucket: number;
    /**
     * `first`, `rebalance` (given back to make room for a member that
     * joined), `leave` (its holder left) or `lapse` (its holder's lease
     * ran out: a failover).
     */
    cause: string;
    /** The new lease's epoch. */
    epoch: number;
    /** Who held it before (null for a first lease). */
    from_worker?: string | null;
    /** Who holds it now. */
    to_worker: string;
}
/** A heartbeat's lease time. */
export interface HeartbeatRequest {
    /** How long the leases last from now (1 to 600,000 ms; default 30,000). */
    ttl_ms?: number | null;
}
/** A heartbeat's answer. */
export interface HeartbeatResponse {
    /** The claim's new expiry (unix seconds) when held. */
    claim_expires_at?: number | null;
    /** False when the claim is no longer held: stop working on the job. */
    held: boolean;
}
/** Jobs per state, as operators know them. */
export interface JobCounts {
    /** Dead letters that were cancelled. */
    cancelled: number;
    /** Acked and kept. */
    completed: number;
    /** Dead letters (the cancelled ones included). */
    dead: number;
    /** Past their expiry, about to be dead. */
    expired: number;
    /** Waiting and due now. */
    pending: number;
    /** Waiting out a retry's backoff. */
    retryable: number;
    /** Claimed by a worker (lapsed claims included). */
    running: number;
    /** Waiting for their first run, due later. */
    scheduled: number;
}
/** Which jobs: the filters a search and a bulk action share. */
export interface JobFilter {
    /** Start after this id. */
    after_id?: number | null;
    /**
     * Most jobs to return (a search: default 100) or act on (a bulk
     * action: default 1,000): 1 to 1,000.
     */
    limit?: number | null;
    /** Only this queue. */
    queue?: string | null;
    /**
     * `pending` (due now), `scheduled`, `retryable`, `running`,
     * `completed`, `dead` or `cancelled` (default: every live job).
     */
    state?: string | null;
    /** Only jobs carrying this tag. */
    tag?: string | null;
    /**
     * Only jobs whose payload has this value at this path:
     * `$.customer_id = 42`, `$.order.kind = "refund"`, `$.items[0] = 3`.
     */
    where?: string | null;
}
/** A page of jobs. */
export interface JobPage {
    /** Lowest ids first. */
    jobs: Array<JobView>;
    /** Pass as `after_id` for the next page (absent on the last). */
    next_after_id?: number | null;
}
/** Everything known about a job, live or dead. */
export interface JobView {
    /** Attempts started. */
    attempts: number;
    /** A running job whose cancellation was requested. */
    cancel_requested: boolean;
    /**
     * When the claim lapses (unix seconds): processing jobs only (a dead,
     * completed or waiting job holds no claim).
     */
    claim_expires_at?: number | null;
    /** When it was enqueued (unix seconds). */
    created_at: number;
    /** Why it died: `failed`, `exhausted`, `expired` or `cancelled`. */
    dead_reason?: string | null;
    /** When it died, or was acked (completed jobs), in unix seconds. */
    died_at?: number | null;
    /** Each failed attempt's error, oldest first. */
    errors: Array<AttemptErrorView>;
    /** When a pending job expires (unix seconds). */
    expires_at?: number | null;
    /**
     * Job id: unique and growing, not dense. On SQLite each process takes
     * ids in blocks of 1,024, so jobs enqueued by different processes jump
     * by up to 1,024.
     */
    id: number;
    /** The last error recorded. */
    last_error?: string | null;
    /** Attempts allowed. */
    max_attempts: number;
    /** Its metadata (an empty object when none). */
    meta: Record<string, unknown>;
    /** The payload (null when not JSON; see `payload_base64`). */
    payload: unknown;
    /** The payload's bytes in base64, when they are not JSON. */
    payload_base64?: string | null;
    /** Priority. */
    priority: number;
    /** Its queue. */
    queue: string;
    /** When it is (or was) due (unix seconds). */
    run_at: number;
    /**
     * As shown: `pending` (due now), `retryable` (waiting out a retry's
     * backoff after a failed attempt), `scheduled` (first run due later),
     * `processing`, `dead` or `completed`.
     */
    state: string;
    /** Its tags. */
    tags: Array<string>;
    /** Its unique key. */
    unique_key?: string | null;
    /** The last worker to claim it. */
    worker?: string | null;
}
/** Join a group as a member. */
export interface JoinRequest {
    /**
     * The group's bucket count, used when this join creates the group
     * (1 to 4,096; default: the group's own, or 16 for a new group). A
     * count other than an existing group's is refused (409).
     */
    buckets?: number | null;
    /**
     * This member's id: unique per running process (default: one is
     * made up). A restarted process should join under a new id, so it
     * never inherits its dead self's leases.
     */
    member?: string | null;
    /**
     * The stream the group reads (it must be the group's stream when the
     * group exists).
     */
    stream: string;
    /**
     * How long the member's leases last unless renewed (1 to 600,000 ms;
     * default 30,000). Heartbeat (or claim) at least every third of it.
     */
    ttl_ms?: number | null;
}
/** A bucket the member holds. */
export interface LeaseView {
    /** The bucket, from 0. */
    bucket: number;
    /** The last offset handled in the bucket (0: none yet). */
    checkpoint: number;
    /** The lease's epoch: checkpoint under it. */
    epoch: number;
    /** When the lease lapses unless renewed (unix ms, the database's clock). */
    expires_at_ms: number;
}
/** How many leases a leave released. */
export interface Left {
    /** Leases released. */
    released: number;
}
/** Fence the request with a lock: refused (409) unless `token` is still the holder's, and the lock cannot pass on before the request commits, so its writes never land after the lock moved. */
export interface LockFenceOp {
    /** The lock. */
    name: string;
    /** The op's kind. */
    op: "lock_fence";
    /** The fencing token its acquire returned. */
    token: number;
}
/** Every lock. */
export interface LockList {
    /** By name. */
    locks: Array<LockView>;
}
/** A lock and its holder. */
export interface LockView {
    /** When it was granted (unix ms). */
    acquired_at_ms: number;
    /** When the hold lapses (unix ms). */
    expires_at_ms: number;
    /** Its name. */
    name: string;
    /** Its holder (null once released). */
    owner?: string | null;
    /** The fencing token of the last grant: grows with every grant. */
    token: number;
}
/** A checkpoint under a lease. */
export interface MemberCheckpointRequest {
    /** The bucket. */
    bucket: number;
    /** The epoch its events were claimed under (each event carries it). */
    epoch: number;
    /**
     * The last offset handled in the bucket (a lower one than saved
     * leaves the checkpoint where it is).
     */
    offset: number;
}
/** The events of the member's buckets after their checkpoints. */
export interface MemberClaim {
    /** In offset order (so in order within each bucket and key). */
    events: Array<GroupEventView>;
    /** The buckets held now (after the claim's heartbeat). */
    leases: Array<LeaseView>;
}
/** What a claim asks for. */
export interface MemberClaimRequest {
    /** Most events to return (1 to 1,000; default 100). */
    limit?: number | null;
    /** The leases' time from now (1 to 600,000 ms; default 30,000). */
    ttl_ms?: number | null;
    /** Wait up to this many ms (0 to 30,000; default 0) for the first event. */
    wait_ms?: number | null;
}
/** A member's standing in its group after a join or heartbeat. */
export interface Membership {
    /** The group's bucket count. */
    buckets: number;
    /** The group. */
    group: string;
    /** The buckets held now, by number. */
    leases: Array<LeaseView>;
    /** Live members, this one included. */
    live_members: number;
    /** This member's id: name it in every later call. */
    member: string;
    /** The stream it reads. */
    stream: string;
    /** The leases' time: heartbeat or claim well within it. */
    ttl_ms: number;
}
/** Send a notification; listeners get it when the request commits (never if it fails). */
export interface NotifyOp {
    /** The channel. */
    channel: string;
    /** The op's kind. */
    op: "notify";
    /** Text, at most 7,000 bytes, no NUL. */
    payload?: string;
}
/** Commit a consumer's offset: the body of `PUT /api/v1/streams/{stream}/consumers/{consumer}`, with `stream` and `consumer`. With `expected`, the offset moves only from exactly that one, and stays so until the request commits: one that moved fails the request (409), so another instance of the consumer cannot also commit its writes for the same events. */
export interface OffsetCommitOp {
    /** Consumer name (the path's `{consumer}` of the single call): 1 to 200 bytes of UTF-8, no NUL. */
    consumer: string;
    /**
     * The offset the caller last read as saved (0 when none was): when
     * given, the commit is a compare-and-set and moves the offset only
     * from exactly this one; else it fails with 409 `not_held` and
     * nothing is written (another instance of the consumer moved it).
     */
    expected?: number | null;
    /**
     * The last offset handled. A commit below the saved one is ignored
     * (offsets never move back); one past the head is refused.
     */
    offset: number;
    /** The op's kind. */
    op: "offset_commit";
    /** Stream name (the path's `{stream}` of the single call): 1 to 200 bytes of UTF-8, no NUL. */
    stream: string;
}
/** A consumer's saved offset. */
export interface OffsetView {
    /** The last offset it handled (null: it never committed). */
    offset?: number | null;
}
/** Every registered process. */
export interface ProcessList {
    /** By kind, then id. */
    processes: Array<ProcessView>;
}
/** A registered process. */
export interface ProcessView {
    /** Beat within its expiry; dead processes are listed for an hour. */
    alive: boolean;
    /** How many things it may run at once: handler slots, or buckets. */
    concurrency: number;
    /** When it is taken for dead without another heartbeat (unix ms). */
    expires_at_ms: number;
    /** Its last heartbeat (unix ms). */
    heartbeat_at_ms: number;
    /** Its host. */
    host: string;
    /** Its id (unique per process run). */
    id: string;
    /** `worker`, `group`, `subscriber` or `scheduler`. */
    kind: string;
    /** What an operator asked: `run`, `quiet` or `stop`. */
    order: string;
    /** Its process id on the host. */
    pid: number;
    /**
     * What it works: queues (worker), `group/stream` (group member),
     * `stream/consumer` (subscriber).
     */
    roles: Array<string>;
    /** How many it ran at its last heartbeat: jobs, or buckets held. */
    running: number;
    /** When it started (unix ms). */
    started_at_ms: number;
    /** The version it runs. */
    version: string;
}
/** One event to publish. */
export interface PublishEvent {
    /**
     * Orders and partitions: a consumer group hands all events of one key
     * to one member, in order.
     */
    key?: string | null;
    /** Any JSON value. */
    payload: unknown;
}
/** Publish events: the body of `POST /api/v1/streams/{stream}/events`, with `stream`. Readable once the request commits. */
export interface PublishOp {
    /** 1 to 1,000 events. */
    events: Array<PublishEvent>;
    /** The op's kind. */
    op: "publish";
    /** Stream name (the path's `{stream}` of the single call): 1 to 200 bytes of UTF-8, no NUL. */
    stream: string;
}
/** Events to append, all or none. */
export interface PublishRequest {
    /** 1 to 1,000 events. */
    events: Array<PublishEvent>;
}
/** The published events' offsets, in request order. */
export interface Published {
    /** One per event. */
    offsets: Array<number>;
}
/** Every queue with its counts. */
export interface QueueList {
    /** By name. */
    queues: Array<QueueView>;
}
/** One queue's finished jobs since the store began counting. */
export interface QueueTotalsView {
    /** Jobs acked. */
    completed: number;
    /** Attempts that ended in a retry or a failure. */
    failed: number;
    /** Queue name. */
    queue: string;
}
/** A queue's counts. */
export interface QueueView {
    /** Of `dead`: cancelled. */
    cancelled: number;
    /** Acked and kept. */
    completed: number;
    /** Dead letters. */
    dead: number;
    /** Past their expiry, about to be dead. */
    expired: number;
    /** Claimed, claim lapsed (the worker died or hangs). */
    expired_claims: number;
    /** Age in seconds of the oldest ready job. */
    oldest_ready_age_s?: number | null;
    /** Paused: nothing is claimed from it. */
    paused: boolean;
    /** Claimed, claim valid. */
    processing: number;
    /** Queue name. */
    queue: string;
    /** Waiting and due now. */
    ready: number;
    /** Of `scheduled`: waiting out a retry's backoff. */
    retryable: number;
    /** Waiting, due later (the retryable ones included). */
    scheduled: number;
}
/** The limit to admit a call under. */
export interface RateAcquireRequest {
    /** Admissions per window (1 to 1,000,000,000). */
    limit: number;
    /** The window's length in ms (1 ms to 1 day). Use one window per name. */
    per_ms: number;
}
/** Whether the call was admitted. */
export interface RateDecisionView {
    /** Admitted: go ahead. Else wait until `reset_at_ms`. */
    admitted: boolean;
    /** Admissions left in the current window after this call. */
    remaining: number;
    /** When the current window ends (unix ms, the store's clock). */
    reset_at_ms: number;
}
/** Release a held lock. */
export interface ReleaseRequest {
    /** Who holds it. */
    owner: string;
    /** The token of the grant. */
    token: number;
}
/** Whether a release took effect. */
export interface ReleasedView {
    /** False when the caller no longer held it. */
    released: boolean;
}
/** Whether a removal found the schedule. */
export interface Removed {
    /** False when there was no such schedule. */
    removed: boolean;
}
/** Renew a held lock. */
export interface RenewRequest {
    /** Who holds it. */
    owner: string;
    /** The token of the grant. */
    token: number;
    /** The new hold, in ms from now (1 ms to a day). */
    ttl_ms: number;
}
/** A job's saved result. */
export interface ResultView {
    /** When it is dropped (unix ms). */
    expires_at_ms: number;
    /** The job. */
    job_id: number;
    /** The result (null when not JSON; see `result_base64`). */
    result: unknown;
    /**
     * The result's bytes in base64, when they are not JSON (saved by a
     * program that stores raw bytes).
     */
    result_base64?: string | null;
    /** When it was saved (unix ms). */
    saved_at_ms: number;
}
/** Retry a claimed job later: the body of `POST /api/v1/jobs/{id}/retry`, with `id`. A claim no longer held fails the request (409). */
export interface RetryOp {
    /** Retry after this many milliseconds instead of the queue's backoff. */
    delay_ms?: number | null;
    /** What went wrong (kept on the job). */
    error: string;
    /** Job id (the path's `{id}` of the single call). */
    id: number;
    /** The op's kind. */
    op: "retry";
    /** The claim's token. */
    token: number;
    /** The worker named in the claim. */
    worker: string;
}
/**
 * A failed attempt: retried after a backoff (or `delay_ms`), or dead once
 * out of attempts.
 */
export interface RetryRequest {
    /** Retry after this many milliseconds instead of the queue's backoff. */
    delay_ms?: number | null;
    /** What went wrong (kept on the job). */
    error: string;
    /** The claim's token. */
    token: number;
    /** The worker named in the claim. */
    worker: string;
}
/** What a retry did. */
export interface RetryResponse {
    /**
     * `scheduled`, `dead` (out of attempts), `cancelled` (its cancel was
     * requested while it ran) or `not_held`.
     */
    outcome: string;
    /** When it runs again (unix seconds), for `scheduled`. */
    run_at?: number | null;
}
/** A job a schedule enqueued. */
export interface ScheduleFireView {
    /** The boundary fired (unix ms); for a manual run, when it was asked. */
    boundary_ms: number;
    /** When it was enqueued (unix ms). */
    fired_at_ms: number;
    /**
     * The job's id (it may have finished since: a finished job is kept
     * only on queues that keep completed jobs).
     */
    job_id: number;
    /** Asked for by an operator, not a boundary. */
    manual: boolean;
    /** The queue. */
    queue: string;
    /** The schedule. */
    schedule: string;
}
/** A schedule's last fires. */
export interface ScheduleFires {
    /** Newest first. */
    fires: Array<ScheduleFireView>;
}
/** Every schedule. */
export interface ScheduleList {
    /** By name. */
    schedules: Array<ScheduleView>;
}
/** Pause a schedule (`POST /api/v1/schedules/{name}/pause`), with `name`. No such schedule fails the request (404). */
export interface SchedulePauseOp {
    /** Schedule name (the path's `{name}` of the single call): 1 to 200 bytes of UTF-8, no NUL. */
    name: string;
    /** The op's kind. */
    op: "schedule_pause";
}
/** Remove a schedule (`DELETE /api/v1/schedules/{name}`), with `name`. */
export interface ScheduleRemoveOp {
    /** Schedule name (the path's `{name}` of the single call): 1 to 200 bytes of UTF-8, no NUL. */
    name: string;
    /** The op's kind. */
    op: "schedule_remove";
}
/** A schedule to create or change. */
export interface ScheduleRequest {
    /**
     * Missed boundaries to fire after downtime, oldest first (default 1,
     * at most 1,000).
     */
    max_catch_up?: number | null;
    /** Each job's payload (default null). */
    payload?: unknown;
    /**
     * Each job's payload as bytes in base64, for a payload that is not
     * JSON (as a schedule's `payload_base64` shows it); instead of
     * `payload`.
     */
    payload_base64?: string | null;
    /** Each job's priority (default 0). */
    priority?: number;
    /** Where its jobs go. */
    queue: string;
    /** `@every <n><s|m|h|d>` or a 5- or 6-field cron pattern. */
    spec: string;
    /** An IANA zone for cron patterns (default UTC). */
    tz?: string | null;
}
/** Resume a schedule (`POST /api/v1/schedules/{name}/resume`), with `name`. No such schedule fails the request (404). */
export interface ScheduleResumeOp {
    /** Schedule name (the path's `{name}` of the single call): 1 to 200 bytes of UTF-8, no NUL. */
    name: string;
    /** The op's kind. */
    op: "schedule_resume";
}
/** Create or change a schedule: the body of `PUT /api/v1/schedules/{name}`, with `name`. */
export interface ScheduleSetOp {
    /**
     * Missed boundaries to fire after downtime, oldest first (default 1,
     * at most 1,000).
     */
    max_catch_up?: number | null;
    /** Schedule name (the path's `{name}` of the single call): 1 to 200 bytes of UTF-8, no NUL. */
    name: string;
    /** The op's kind. */
    op: "schedule_set";
    /** Each job's payload (default null). */
    payload?: unknown;
    /**
     * Each job's payload as bytes in base64, for a payload that is not
     * JSON (as a schedule's `payload_base64` shows it); instead of
     * `payload`.
     */
    payload_base64?: string | null;
    /** Each job's priority (default 0). */
    priority?: number;
    /** Where its jobs go. */
    queue: string;
    /** `@every <n><s|m|h|d>` or a 5- or 6-field cron pattern. */
    spec: string;
    /** An IANA zone for cron patterns (default UTC). */
    tz?: string | null;
}
/** A schedule. */
export interface ScheduleView {
    /** The last boundary fired (unix ms). */
    last_boundary_ms?: number | null;
    /** Missed boundaries fired at most, oldest first. */
    max_catch_up: number;
    /** Its name. */
    name: string;
    /**
     * Its next boundary (unix ms; kept while paused, and not fired until
     * resumed: a resume moves it to the next boundary after then).
     */
    next_fire_at_ms?: number | null;
    /** Paused: fires nothing until resumed. */
    paused: boolean;
    /** Each job's payload (null when not JSON; see `payload_base64`). */
    payload: unknown;
    /** The payload's bytes in base64, when they are not JSON. */
    payload_base64?: string | null;
    /** Each job's priority. */
    priority: number;
    /** Where its jobs go. */
    queue: string;
    /** `@every 30s` or a 5- or 6-field cron pattern. */
    spec: string;
    /** The IANA zone cron patterns are read in (null: UTC). */
    tz?: string | null;
}
/** Snooze a claimed job: it runs again after `delay_ms` without using an attempt. A claim no longer held fails the request (409). */
export interface SnoozeOp {
    /**
     * Run again after this many milliseconds (whole seconds: due times
     * are kept in seconds).
     */
    delay_ms: number;
    /** Job id (the path's `{id}` of the single call). */
    id: number;
    /** The op's kind. */
    op: "snooze";
    /** The claim's token. */
    token: number;
    /** The worker named in the claim. */
    worker: string;
}
/** When a snoozed job runs again. */
export interface Snoozed {
    /** When it is due (unix seconds). */
    run_at: number;
}
/** The store this server serves. */
export interface StoreInfo {
    /** `sqlite` or `postgres`. */
    engine: string;
    /**
     * Where it is: the store URL with any password masked, or the
     * SQLite file's path.
     */
    location: string;
    /** The PostgreSQL schema (null on SQLite). */
    schema?: string | null;
    /** The alkstore version serving it. */
    version: string;
}
/** Every stream. */
export interface StreamList {
    /** By name. */
    streams: Array<StreamView>;
}
/** A stream: its head, size and consumers. */
export interface StreamView {
    /** Every consumer with a saved offset, by name. */
    consumers: Array<ConsumerView>;
    /** Events stored. */
    events: number;
    /** The last offset (null when empty). */
    head?: number | null;
    /** Its name. */
    stream: string;
}
/** A job's tag: 1 to 200 bytes of UTF-8, no NUL. */
export type Tag = string;
/** Jobs of one queue finished within one bucket. */
export interface ThroughputBucketView {
    /** Jobs acked. */
    completed: number;
    /** Attempts that ended in a retry or a failure. */
    failed: number;
    /** Queue name. */
    queue: string;
    /**
     * The bucket's span in seconds: 10 within the last hour, 300 before
     * (older buckets are folded coarser, and kept a week).
     */
    span_s: number;
    /** The bucket's start (unix seconds, a multiple of `span_s`). */
    start: number;
}
/** Recent buckets and all-time totals. */
export interface ThroughputView {
    /**
     * Seconds per bucket within the last hour (each bucket says its own
     * span: older ones are coarser).
     */
    bucket_s: number;
    /**
     * Buckets within the window, oldest first, then by queue; a bucket in
     * which nothing finished is absent.
     */
    buckets: Array<ThroughputBucketView>;
    /**
     * The store's clock (unix seconds): the newest bucket may still be
     * filling.
     */
    now: number;
    /** Every selected queue's totals, by name. */
    totals: Array<QueueTotalsView>;
}
/** The query parameters of `depth`. */
export interface DepthQuery {
    /** Only this queue (default: every queue). */
    queue?: string;
    /** Seconds back from now, 1 to 604,800 (a week; default 86,400). */
    window_s?: number;
}
/** The query parameters of `group_dead_list`. */
export interface GroupDeadListQuery {
    /** Start after this offset (default 0). */
    after?: number;
    /** 1 to 1,000 (default 100). */
    limit?: number;
}
/** The query parameters of `group_handoffs`. */
export interface GroupHandoffsQuery {
    /** 1 to 1,000 (default 100). */
    limit?: number;
}
/** The query parameters of `search_jobs`. */
export interface SearchJobsQuery {
    /**
     * `pending` (due now), `scheduled`, `retryable`, `running`,
     * `completed`, `dead` or `cancelled` (default: every live job).
     */
    state?: string;
    /** Only this queue. */
    queue?: string;
    /** Only jobs carrying this tag. */
    tag?: string;
    /**
     * Only jobs whose payload has this value at this path:
     * `$.customer_id = 42`, `$.order.kind = "refund"`, `$.items[0] = 3`.
     */
    where?: string;
    /** Start after this id. */
    after_id?: number;
    /**
     * Most jobs to return (a search: default 100) or act on (a bulk
     * action: default 1,000): 1 to 1,000.
     */
    limit?: number;
}
/** The query parameters of `job_counts`. */
export interface JobCountsQuery {
    /** Only this queue (default: every queue). */
    queue?: string;
}
/** The query parameters of `get_result`. */
export interface GetResultQuery {
    /**
     * Wait up to this many ms (0 to 30,000, default 0) for the result to
     * be saved.
     */
    wait_ms?: number;
}
/** The query parameters of `dead_list`. */
export interface DeadListQuery {
    /** Only dead letters carrying this tag. */
    tag?: string;
    /** Start after this id. */
    after_id?: number;
    /** 1 to 1,000 (default 100). */
    limit?: number;
}
/** The query parameters of `list_jobs`. */
export interface ListJobsQuery {
    /**
     * Only this state: `pending` (waiting: also the jobs shown
     * `retryable` or `scheduled`), `processing` or `completed` (job
     * listing only).
     */
    state?: string;
    /** Only jobs carrying this tag. */
    tag?: string;
    /** Start after this id. */
    after_id?: number;
    /** 1 to 1,000 (default 100). */
    limit?: number;
}
/** The query parameters of `schedule_fires`. */
export interface ScheduleFiresQuery {
    /** 1 to 50 (default 20). */
    limit?: number;
}
/** The query parameters of `read`. */
export interface ReadQuery {
    /** Read after this offset (default 0: from the start). */
    after?: number;
    /** 1 to 1,000 (default 100). */
    limit?: number;
    /** Wait up to this many ms (0 to 30,000, default 0) for the first event. */
    wait_ms?: number;
    /**
     * Read backwards: the events before this offset, newest first (to page
     * back from the head, pass a number above it, such as
     * 9223372036854775807). Does not wait.
     */
    before?: number;
}
/** The query parameters of `throughput`. */
export interface ThroughputQuery {
    /** Only this queue (default: every queue). */
    queue?: string;
    /**
     * Seconds back from now, 1 to 604,800 (a week; default 300). Within
     * the last hour buckets are 10 s; before it, 5 minutes.
     */
    window_s?: number;
}
/** Every JSON operation of the API; `Client` supplies `request` and the hand-written helpers. */
export declare abstract class GeneratedClient {
    protected abstract request<T>(method: string, path: string, query: object | undefined, body: unknown, options?: CallOptions): Promise<T>;
    /**
     * Run writes atomically.
     *
     * Run 1 to 100 ops (at most 1,000 rows written in all) in order in one
     * transaction: all commit together or none does. Each op is the body of
     * the single call it stands for (same fields, same payload encoding),
     * with that call's path values as fields and an `op` tag: `enqueue`,
     * `enqueue_batch`, `publish`, `ack`, `retry`, `fail`, `snooze`,
     * `offset_commit`, `group_checkpoint`, `notify`, `lock_fence`,
     * `schedule_set`, `schedule_remove`, `schedule_pause`,
     * `schedule_resume`. The settles (`ack`, `retry`, `fail`, `snooze`) need
     * the claim to be held still, `group_checkpoint` the lease under its
     * epoch, `lock_fence` the lock under its token, each until the commit:
     * otherwise the request fails with 409 `not_held`. Any failure rolls the
     * whole request back and the error names the op (`op_index` from 0, `op`,
     * `field` as `ops[i].field`). Jobs and events committed here wake waiting
     * claims and reads at once, and notifications go out at commit.
     *
     * `POST /api/v1/atomic`
     * @param args the JSON body
     * @returns AtomicResponse (200: Every op ran and all committed together: one result per op, in request order)
     */
    atomic(args: AtomicRequest, options?: CallOptions): Promise<AtomicResponse>;
    /**
     * Notify a channel.
     *
     * Send `payload` to everyone listening on the channel now (in this
     * process or another, over HTTP or in Rust).
     *
     * `POST /api/v1/channels/{channel}/notify`
     * @param channel Channel name
     * @param args the JSON body
     * @returns Done (200: Sent)
     */
    notify_channel(channel: string, args?: ChannelNotifyRequest, options?: CallOptions): Promise<Done>;
    /**
     * Read queue depth over time.
     *
     * Each queue's ready, scheduled, processing and dead counts, sampled by
     * the store's maintenance sweep each time it runs (once a minute by
     * default, by whichever worker holds it) and kept a week, so a chart
     * opened now shows the past day.
     *
     * `GET /api/v1/depth`
     * @param args query parameters
     * @returns DepthView (200: Depth samples over the window)
     */
    depth(args?: DepthQuery, options?: CallOptions): Promise<DepthView>;
    /**
     * List every consumer group.
     *
     * Every consumer group with its stream, bucket count, live owners and
     * workers, and its dead letters.
     *
     * `GET /api/v1/groups`
     * @returns GroupList (200: Every consumer group)
     */
    list_groups(options?: CallOptions): Promise<GroupList>;
    /**
     * Get a group's buckets.
     *
     * Each bucket's owner, epoch, lease expiry, checkpoint and lag: who owns
     * which share of the stream.
     *
     * `GET /api/v1/groups/{group}`
     * @param group Group name
     * @returns GroupStatusView (200: Each bucket's owner, epoch, lease and lag)
     */
    group_status(group: string, options?: CallOptions): Promise<GroupStatusView>;
    /**
     * List a group's dead letters.
     *
     * A page of the events the group's handler gave up on, lowest offsets
     * first, each with its last error, attempts and whether it is requeued.
     *
     * `GET /api/v1/groups/{group}/dead`
     * @param group Group name
     * @param args query parameters
     * @returns GroupDeadPage (200: A page of the group's dead letters)
     */
    group_dead_list(group: string, args?: GroupDeadListQuery, options?: CallOptions): Promise<GroupDeadPage>;
    /**
     * Purge a group's dead letters.
     *
     * Delete the chosen dead letters (default: all of the group's) for good.
     * Their events stay in the stream; the group's checkpoints do not move.
     *
     * `POST /api/v1/groups/{group}/dead/purge`
     * @param group Group name
     * @param args the JSON body
     * @returns Count (200: Deleted for good)
     */
    group_dead_purge(group: string, args?: GroupDeadSelectRequest, options?: CallOptions): Promise<Count>;
    /**
     * Requeue a group's dead letters.
     *
     * Ask for the chosen dead letters (default: all of the group's) to run
     * again: the worker holding each one's bucket takes it within a poll
     * interval and deletes it when its handler succeeds (a failure records the
     * new error and leaves it dead).
     *
     * `POST /api/v1/groups/{group}/dead/requeue`
     * @param group Group name
     * @param args the JSON body
     * @returns Count (200: How many were marked to run again)
     */
    group_dead_requeue(group: string, args?: GroupDeadSelectRequest, options?: CallOptions): Promise<Count>;
    /**
     * List a group's handoffs.
     *
     * Who took which bucket from whom, and why: a first lease, a rebalance,
     * a leave, or a lapse (a failover), newest first; and every handoff
     * counted by cause, so failovers show apart from rebalances.
     *
     * `GET /api/v1/groups/{group}/handoffs`
     * @param group Group name
     * @param args query parameters
     * @returns GroupHandoffsView (200: The group's lease history)
     */
    group_handoffs(group: string, args?: GroupHandoffsQuery, options?: CallOptions): Promise<GroupHandoffsView>;
    /**
     * Join a consumer group.
     *
     * Become a member of `group` (created on `stream` with `buckets` buckets
     * when it does not exist) and take this member's fair share of the
     * buckets that are free. Then claim events, handle them, checkpoint each
     * bucket, and heartbeat (a claim heartbeats too) well within `ttl_ms`.
     *
     * `POST /api/v1/groups/{group}/members`
     * @param group Group name
     * @param args the JSON body
     * @returns Membership (200: Joined: the member's id and leases)
     */
    join_group(group: string, args: JoinRequest, options?: CallOptions): Promise<Membership>;
    /**
     * Leave a consumer group.
     *
     * Release every lease the member holds and its membership at once, so the
     * other members take its buckets at their next heartbeat instead of
     * after its lease time.
     *
     * `DELETE /api/v1/groups/{group}/members/{member}`
     * @param group Group name
     * @param member The member's id
     * @returns Left (200: Left)
     */
    leave_group(group: string, member: string, options?: CallOptions): Promise<Left>;
    /**
     * Checkpoint a bucket.
     *
     * Save the last offset handled in a bucket, under the epoch its events
     * were claimed with. Refused with 409 `not_held` when the member no
     * longer holds the bucket under that epoch (its lease lapsed or was given
     * back): the bucket's new holder handles those events from the last
     * checkpoint.
     *
     * `POST /api/v1/groups/{group}/members/{member}/checkpoint`
     * @param group Group name
     * @param member The member's id
     * @param args the JSON body
     * @returns CheckpointView (200: The bucket's checkpoint now)
     */
    member_checkpoint(group: string, member: string, args: MemberCheckpointRequest, options?: CallOptions): Promise<CheckpointView>;
    /**
     * Claim a member's events.
     *
     * Heartbeat (as the heartbeat call does), then return the events of every
     * bucket held after its checkpoint, in offset order, each with its
     * bucket's epoch; wait up to `wait_ms` for the first. Until a bucket's
     * checkpoint moves, its events come again: handle them in order, then
     * checkpoint each bucket's last offset handled, then claim again. The
     * wait is cut to a third of `ttl_ms`, so a loop of claims keeps the
     * leases renewed.
     *
     * `POST /api/v1/groups/{group}/members/{member}/claim`
     * @param group Group name
     * @param member The member's id
     * @param args the JSON body
     * @returns MemberClaim (200: The leases held and their events (none when none came within the wait))
     */
    member_claim(group: string, member: string, args?: MemberClaimRequest, options?: CallOptions): Promise<MemberClaim>;
    /**
     * Heartbeat a group member.
     *
     * Renew every lease the member holds, take buckets up to its fair share,
     * and give back those beyond it when members joined (a checkpoint under a
     * bucket given back is then refused, and its next holder reads on from
     * the last checkpoint). A member that misses its heartbeats past `ttl_ms`
     * loses its buckets to the others.
     *
     * `POST /api/v1/groups/{group}/members/{member}/heartbeat`
     * @param group Group name
     * @param member The member's id
     * @param args the JSON body
     * @returns Membership (200: The member's leases now)
     */
    member_heartbeat(group: string, member: string, args?: HeartbeatRequest, options?: CallOptions): Promise<Membership>;
    /**
     * Search jobs.
     *
     * Jobs of every queue (or one) in a state as operators know it, and
     * optionally with a tag or a payload field equal to a value, lowest ids
     * first. Reads at most 10,000 jobs per request: a short page with
     * `next_after_id` set means read on from there.
     *
     * `GET /api/v1/jobs`
     * @param args query parameters
     * @returns JobPage (200: A page of the jobs found)
     */
    search_jobs(args?: SearchJobsQuery, options?: CallOptions): Promise<JobPage>;
    /**
     * Ack several jobs at once.
     *
     * Ack 1 to 1,000 claims in one transaction; one flag per claim in request
     * order (false: no longer held).
     *
     * `POST /api/v1/jobs/ack`
     * @param args the JSON body
     * @returns AckBatchResponse (200: Each claim acked, or not held)
     */
    ack_batch(args: AckBatchRequest, options?: CallOptions): Promise<AckBatchResponse>;
    /**
     * Act on many jobs.
     *
     * Retry, run now, cancel or delete the chosen jobs (`ids`), or the jobs a
     * search finds (`matching`), whatever their queues: each job is acted on
     * as its state allows, and the others are left alone (counted out of
     * `changed`).
     *
     * `POST /api/v1/jobs/bulk`
     * @param args the JSON body
     * @returns BulkResult (200: What changed)
     */
    bulk_jobs(args: BulkRequest, options?: CallOptions): Promise<BulkResult>;
    /**
     * Count jobs per state.
     *
     * Every queue's jobs (or one queue's) counted per state as operators know
     * them: pending, scheduled, retryable, running, dead (and of those
     * cancelled), completed.
     *
     * `GET /api/v1/jobs/counts`
     * @param args query parameters
     * @returns JobCounts (200: Jobs per state)
     */
    job_counts(args?: JobCountsQuery, options?: CallOptions): Promise<JobCounts>;
    /**
     * Get a job.
     *
     * Everything known about a live, dead or kept completed job. A finished job
     * is deleted when acked unless its queue keeps completed jobs, so an id
     * acked a moment ago may be 404.
     *
     * `GET /api/v1/jobs/{id}`
     * @param id Job id
     * @returns JobView (200: The job)
     */
    get_job(id: number, options?: CallOptions): Promise<JobView>;
    /**
     * Ack a job: it is done.
     *
     * Finish the claimed job: it is deleted, or kept as `completed` when its
     * queue keeps completed jobs. With `result`, the result is saved first
     * (kept a day, read with `GET /api/v1/jobs/{id}/result`). `done: false`
     * when the claim was no longer held (nothing is saved then).
     *
     * `POST /api/v1/jobs/{id}/ack`
     * @param id Job id
     * @param args the JSON body
     * @returns Done (200: Acked, or not held)
     */
    ack(id: number, args: AckRequest, options?: CallOptions): Promise<Done>;
    /**
     * Cancel a job.
     *
     * A waiting job is dead as `cancelled` at once; for a running one the
     * cancellation is requested, and its worker is told.
     *
     * `POST /api/v1/jobs/{id}/cancel`
     * @param id Job id
     * @returns CancelResponse (200: What the cancel did)
     */
    cancel(id: number, options?: CallOptions): Promise<CancelResponse>;
    /**
     * Fail a job for good.
     *
     * A permanent failure: the job goes to the queue's dead letters now, with
     * the error, whatever attempts it had left.
     *
     * `POST /api/v1/jobs/{id}/fail`
     * @param id Job id
     * @param args the JSON body
     * @returns Done (200: Dead now, or not held)
     */
    fail(id: number, args: FailRequest, options?: CallOptions): Promise<Done>;
    /**
     * Renew a job's claim.
     *
     * Push the claim's expiry a visibility timeout ahead. `held: false` means
     * the claim lapsed or was taken: stop working on the job.
     *
     * `POST /api/v1/jobs/{id}/heartbeat`
     * @param id Job id
     * @param args the JSON body
     * @returns HeartbeatResponse (200: The claim renewed, or not held)
     */
    heartbeat(id: number, args: ClaimRef, options?: CallOptions): Promise<HeartbeatResponse>;
    /**
     * Hand a job back.
     *
     * Give the claimed job back to the queue at once without using an attempt (a
     * worker shutting down).
     *
     * `POST /api/v1/jobs/{id}/release`
     * @param id Job id
     * @param args the JSON body
     * @returns Done (200: Handed back without using an attempt, or not held)
     */
    release_job(id: number, args: ClaimRef, options?: CallOptions): Promise<Done>;
    /**
     * Get a job's result.
     *
     * The value its worker saved (an ack with `result`, or a Rust handler's
     * return value), kept a day; waits up to `wait_ms` for it to be saved,
     * and answers as soon as it is (in this process or another).
     *
     * `GET /api/v1/jobs/{id}/result`
     * @param id Job id
     * @param args query parameters
     * @returns ResultView (200: The result)
     */
    get_result(id: number, args?: GetResultQuery, options?: CallOptions): Promise<ResultView>;
    /**
     * Retry a job later.
     *
     * A failed attempt: the job runs again after the queue's exponential backoff
     * (or `delay_ms`), shown as `retryable` meanwhile; out of attempts it is
     * dead as `exhausted`.
     *
     * `POST /api/v1/jobs/{id}/retry`
     * @param id Job id
     * @param args the JSON body
     * @returns RetryResponse (200: What the retry did)
     */
    retry(id: number, args: RetryRequest, options?: CallOptions): Promise<RetryResponse>;
    /**
     * List every lock.
     *
     * Every lock with its holder, fencing token and expiry.
     *
     * `GET /api/v1/locks`
     * @returns LockList (200: Every lock and its holder)
     */
    list_locks(options?: CallOptions): Promise<LockList>;
    /**
     * Acquire a lock.
     *
     * Take the lock for `ttl_ms` if it is free or lapsed; the grant's fencing
     * token grows on every change of holder.
     *
     * `POST /api/v1/locks/{name}/acquire`
     * @param name Lock name
     * @param args the JSON body
     * @returns GrantView (200: Granted, or held by another)
     */
    acquire_lock(name: string, args: AcquireRequest, options?: CallOptions): Promise<GrantView>;
    /**
     * Release a lock.
     *
     * Free the lock if the caller still holds it under the token.
     *
     * `POST /api/v1/locks/{name}/release`
     * @param name Lock name
     * @param args the JSON body
     * @returns ReleasedView (200: Released, or no longer held)
     */
    release_lock(name: string, args: ReleaseRequest, options?: CallOptions): Promise<ReleasedView>;
    /**
     * Renew a lock.
     *
     * Extend the holder's lease by `ttl_ms`; `held: false` when it is no longer
     * the holder.
     *
     * `POST /api/v1/locks/{name}/renew`
     * @param name Lock name
     * @param args the JSON body
     * @returns GrantView (200: Renewed, or no longer held)
     */
    renew_lock(name: string, args: RenewRequest, options?: CallOptions): Promise<GrantView>;
    /**
     * List the running processes.
     *
     * Every worker, group member, subscriber and scheduler registered in the
     * store: host, pid, version, what it works, slots, what it runs now, its
     * last heartbeat, whether it is alive (dead ones are listed for an hour)
     * and any order left for it.
     *
     * `GET /api/v1/processes`
     * @returns ProcessList (200: Every registered process)
     */
    list_processes(options?: CallOptions): Promise<ProcessList>;
    /**
     * Quiet a process.
     *
     * Ask the process to claim nothing new: a worker finishes the jobs it
     * runs and idles until stopped; a group member, subscriber or scheduler
     * stops. Acted on at its next heartbeat (within seconds).
     *
     * `POST /api/v1/processes/{id}/quiet`
     * @param id Process id
     * @returns Done (200: Ordered)
     */
    quiet_process(id: string, options?: CallOptions): Promise<Done>;
    /**
     * Stop a process.
     *
     * Ask the process to shut down gracefully, as at SIGTERM (running jobs
     * get its shutdown timeout, then go back to their queue). Acted on at its
     * next heartbeat.
     *
     * `POST /api/v1/processes/{id}/stop`
     * @param id Process id
     * @returns Done (200: Ordered)
     */
    stop_process(id: string, options?: CallOptions): Promise<Done>;
    /**
     * List every queue with its counts.
     *
     * Every queue that has live, dead or kept completed jobs, or finished jobs
     * within the last hour, with its counts by state and whether it is paused.
     *
     * `GET /api/v1/queues`
     * @returns QueueList (200: Every queue with its counts)
     */
    list_queues(options?: CallOptions): Promise<QueueList>;
    /**
     * Get one queue's counts.
     *
     * The queue's counts by state and whether it is paused. Queues appear with
     * their first job: a name nothing was ever enqueued on (and that is not
     * paused) is 404 `not_found` ("no such queue yet"); a drained queue stays
     * while the store's throughput totals count what it finished.
     *
     * `GET /api/v1/queues/{queue}`
     * @param queue Queue name
     * @returns QueueView (200: The queue's counts)
     */
    queue_stats(queue: string, options?: CallOptions): Promise<QueueView>;
    /**
     * Claim jobs to run.
     *
     * Claim up to `limit` due jobs of the queue, by priority then due time,
     * waiting up to `wait_ms` for the first. Each claimed job carries a `token`:
     * settle it (ack, retry, fail, release) with the worker's name and that
     * token, and heartbeat it before `claim_expires_at` if it runs long.
     *
     * `POST /api/v1/queues/{queue}/claim`
     * @param queue Queue name
     * @param args the JSON body
     * @returns ClaimedJobs (200: Claimed jobs (maybe none))
     */
    claim(queue: string, args: ClaimRequest, options?: CallOptions): Promise<ClaimedJobs>;
    /**
     * List a queue's dead letters.
     *
     * A page of the jobs that failed for good, ran out of attempts, expired or
     * were cancelled, lowest ids first, with why and when they died.
     *
     * `GET /api/v1/queues/{queue}/dead`
     * @param queue Queue name
     * @param args query parameters
     * @returns JobPage (200: A page of the queue's dead letters)
     */
    dead_list(queue: string, args?: DeadListQuery, options?: CallOptions): Promise<JobPage>;
    /**
     * Purge a queue's dead letters.
     *
     * Delete the chosen dead letters (default: all of the queue's) for good.
     *
     * `POST /api/v1/queues/{queue}/dead/purge`
     * @param queue Queue name
     * @param args the JSON body
     * @returns Count (200: Deleted for good)
     */
    dead_purge(queue: string, args?: DeadSelectRequest, options?: CallOptions): Promise<Count>;
    /**
     * Requeue a queue's dead letters.
     *
     * Run the chosen dead letters (default: all of the queue's) again as fresh
     * jobs, with their attempts reset.
     *
     * `POST /api/v1/queues/{queue}/dead/requeue`
     * @param queue Queue name
     * @param args the JSON body
     * @returns Count (200: Requeued as fresh jobs)
     */
    dead_requeue(queue: string, args?: DeadSelectRequest, options?: CallOptions): Promise<Count>;
    /**
     * List a queue's jobs.
     *
     * A page of the queue's live (and kept completed) jobs, lowest ids first.
     * `state` is as shown: `pending` (due now), `retryable` (waiting out a
     * retry's backoff), `scheduled` (first run due later), `processing` or
     * `completed`; the `pending` filter returns all three waiting kinds. Dead
     * letters are listed at `/dead`.
     *
     * `GET /api/v1/queues/{queue}/jobs`
     * @param queue Queue name
     * @param args query parameters
     * @returns JobPage (200: A page of the queue's live (or kept) jobs)
     */
    list_jobs(queue: string, args?: ListJobsQuery, options?: CallOptions): Promise<JobPage>;
    /**
     * Enqueue a job.
     *
     * Add one job to the queue. With a `unique_key` already held by a live job
     * of the queue, nothing is added and the existing job's id comes back with
     * `duplicate: true`. Queue names are used as given: percent-encode them in
     * the path.
     *
     * `POST /api/v1/queues/{queue}/jobs`
     * @param queue Queue name
     * @param args the JSON body
     * @returns EnqueuedJob (201: Enqueued)
     */
    enqueue(queue: string, args: EnqueueRequest, options?: CallOptions): Promise<EnqueuedJob>;
    /**
     * Enqueue several jobs at once.
     *
     * Add 1 to 1,000 jobs to the queue in one transaction: all or none. Each
     * gets its id (or its duplicate's) in request order.
     *
     * `POST /api/v1/queues/{queue}/jobs/batch`
     * @param queue Queue name
     * @param args the JSON body
     * @returns EnqueuedJobs (201: All enqueued, in one transaction)
     */
    enqueue_batch(queue: string, args: EnqueueBatchRequest, options?: CallOptions): Promise<EnqueuedJobs>;
    /**
     * Pause a queue.
     *
     * Nothing is claimed from the queue until it is resumed; enqueues still
     * land.
     *
     * `POST /api/v1/queues/{queue}/pause`
     * @param queue Queue name
     * @returns Changed (200: Paused (nothing is claimed from it))
     */
    pause_queue(queue: string, options?: CallOptions): Promise<Changed>;
    /**
     * Resume a paused queue.
     *
     * Claims take the queue's jobs again.
     *
     * `POST /api/v1/queues/{queue}/resume`
     * @param queue Queue name
     * @returns Changed (200: Resumed)
     */
    resume_queue(queue: string, options?: CallOptions): Promise<Changed>;
    /**
     * Acquire a rate limit.
     *
     * Admit one call under the store-wide limit `name` (`limit` per window of
     * `per_ms`), or refuse it when the window's budget is spent. A refusal
     * counts nothing.
     *
     * `POST /api/v1/rates/{name}/acquire`
     * @param name Limit name
     * @param args the JSON body
     * @returns RateDecisionView (200: Admitted or refused)
     */
    acquire_rate(name: string, args: RateAcquireRequest, options?: CallOptions): Promise<RateDecisionView>;
    /**
     * List every schedule.
     *
     * Every schedule with its spec, zone, queue and next fire time.
     *
     * `GET /api/v1/schedules`
     * @returns ScheduleList (200: Every schedule with its next fire time)
     */
    list_schedules(options?: CallOptions): Promise<ScheduleList>;
    /**
     * Create or change a schedule.
     *
     * Each boundary of the spec (cron or `@every`) enqueues one job on the
     * queue, once across every process.
     *
     * `PUT /api/v1/schedules/{name}`
     * @param name Schedule name
     * @param args the JSON body
     * @returns ScheduleView (200: Created or changed (the same spec keeps its pending boundary))
     */
    set_schedule(name: string, args: ScheduleRequest, options?: CallOptions): Promise<ScheduleView>;
    /**
     * Remove a schedule.
     *
     * Delete the schedule; jobs it already enqueued stay.
     *
     * `DELETE /api/v1/schedules/{name}`
     * @param name Schedule name
     * @returns Removed (200: Removed, or there was none)
     */
    remove_schedule(name: string, options?: CallOptions): Promise<Removed>;
    /**
     * List a schedule's last fires.
     *
     * The jobs the schedule enqueued, newest first: each boundary fired and
     * each manual run (the last 50 are kept).
     *
     * `GET /api/v1/schedules/{name}/fires`
     * @param name Schedule name
     * @param args query parameters
     * @returns ScheduleFires (200: Its last fires)
     */
    schedule_fires(name: string, args?: ScheduleFiresQuery, options?: CallOptions): Promise<ScheduleFires>;
    /**
     * Pause a schedule.
     *
     * No boundary fires until it is resumed.
     *
     * `POST /api/v1/schedules/{name}/pause`
     * @param name Schedule name
     * @returns ScheduleView (200: Paused)
     */
    pause_schedule(name: string, options?: CallOptions): Promise<ScheduleView>;
    /**
     * Resume a schedule.
     *
     * Fire again from the next boundary; the ones missed while paused are
     * skipped.
     *
     * `POST /api/v1/schedules/{name}/resume`
     * @param name Schedule name
     * @returns ScheduleView (200: Resumed from the next boundary)
     */
    resume_schedule(name: string, options?: CallOptions): Promise<ScheduleView>;
    /**
     * Run a schedule now.
     *
     * Enqueue the schedule's job at once, paused or not, outside its
     * boundaries (which do not move); kept in its history as a manual fire.
     *
     * `POST /api/v1/schedules/{name}/run`
     * @param name Schedule name
     * @returns ScheduleFireView (200: The job enqueued)
     */
    run_schedule(name: string, options?: CallOptions): Promise<ScheduleFireView>;
    /**
     * Describe the store.
     *
     * The engine, where the store is (its URL, password masked) and its
     * schema: which store the dashboard shows.
     *
     * `GET /api/v1/store`
     * @returns StoreInfo (200: The store this server serves)
     */
    store_info(options?: CallOptions): Promise<StoreInfo>;
    /**
     * List every stream.
     *
     * Every stream with its head offset, event count and consumers' offsets and
     * lag.
     *
     * `GET /api/v1/streams`
     * @returns StreamList (200: Every stream with its head and consumers)
     */
    list_streams(options?: CallOptions): Promise<StreamList>;
    /**
     * Get a stream.
     *
     * The stream's head offset, event count and consumers; 404 when nothing was
     * ever published to it.
     *
     * `GET /api/v1/streams/{stream}`
     * @param stream Stream name
     * @returns StreamView (200: The stream)
     */
    stream_info(stream: string, options?: CallOptions): Promise<StreamView>;
    /**
     * Get a consumer's offset.
     *
     * The last offset the consumer committed on the stream (null: none yet).
     *
     * `GET /api/v1/streams/{stream}/consumers/{consumer}`
     * @param stream Stream name
     * @param consumer Consumer name
     * @returns OffsetView (200: Its saved offset)
     */
    offset_get(stream: string, consumer: string, options?: CallOptions): Promise<OffsetView>;
    /**
     * Commit a consumer's offset.
     *
     * Save how far the consumer has read. Offsets only move forward and never
     * past the stream's head; the offset saved after the call comes back.
     * With `expected`, the offset moves only from exactly that one (409
     * `not_held` otherwise, nothing written).
     *
     * `PUT /api/v1/streams/{stream}/consumers/{consumer}`
     * @param stream Stream name
     * @param consumer Consumer name
     * @param args the JSON body
     * @returns OffsetView (200: The offset saved after the call)
     */
    offset_commit(stream: string, consumer: string, args: CommitRequest, options?: CallOptions): Promise<OffsetView>;
    /**
     * Read events.
     *
     * Events of the stream after offset `after`, up to `limit`, waiting up to
     * `wait_ms` for the first. Pass `next_after` as the next read's `after`.
     * With `before`, the events before that offset instead, newest first:
     * pass `next_before` as the next read's `before` to page back.
     *
     * `GET /api/v1/streams/{stream}/events`
     * @param stream Stream name
     * @param args query parameters
     * @returns EventPage (200: Events after the offset (maybe none))
     */
    read(stream: string, args?: ReadQuery, options?: CallOptions): Promise<EventPage>;
    /**
     * Publish events.
     *
     * Append 1 to 1,000 events to the stream in one transaction; their offsets
     * come back in request order. Offsets grow across the whole store.
     *
     * `POST /api/v1/streams/{stream}/events`
     * @param stream Stream name
     * @param args the JSON body
     * @returns Published (201: Appended, all in one transaction)
     */
    publish(stream: string, args: PublishRequest, options?: CallOptions): Promise<Published>;
    /**
     * Read jobs finished per queue.
     *
     * Jobs acked and attempts failed, per queue, in buckets of `bucket_s`
     * seconds over the window, and each queue's all-time totals. The store
     * counts them on every ack, retry and failure, whoever made it.
     *
     * `GET /api/v1/throughput`
     * @param args query parameters
     * @returns ThroughputView (200: Jobs finished per queue in 10-second buckets over the window, and each queue's totals: counted by the store on every ack, retry and failure, whoever made it (any process, any host, this API))
     */
    throughput(args?: ThroughputQuery, options?: CallOptions): Promise<ThroughputView>;
}
/** Operations answering with a text/event-stream, written by hand in client.ts. */
export declare const STREAMING: readonly ["listen_channel"];
