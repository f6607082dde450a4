//! Statement texts, built once per engine with the quoted schema name.
//!
//! Every statement's `$1` is the injected clock's time or NULL; the `NOW`
//! fragment falls back to the database clock, so claims and expiries never
//! depend on a worker host's clock.

use alkstore_core::queue::{Claim, MAX_ERRORS_KEPT, THROUGHPUT_BUCKET_S, THROUGHPUT_COARSE_S};

use crate::schema::{quote_identifier, tables, QualifiedTable};
use alkstore_core::process::DEAD_PROCESS_RESCUE_WINDOW;

/// Unix seconds: the injected time, else the database's (see `db_epoch!`).
/// A scalar subquery, so it is computed once per statement (an InitPlan),
/// not once per row: `extract` returns `numeric`, whose arithmetic is slow.
pub(crate) const NOW: &str = concat!(
    "(SELECT COALESCE($1::bigint, floor(",
    db_epoch!(),
    ")::bigint))"
);

/// Columns read into `JobInfo` (then the source's extra columns).
pub(crate) const JOB_COLS: &str = "id, queue, payload, priority, run_at, attempts, max_attempts, \
     worker_id, claim_expires_at, created_at, expires_at, unique_key, last_error, errors::text, \
     tags::text, meta::text";

/// Columns copied from a job row into the dead or done table (and back on
/// requeue).
const MOVE_COLS: &str = "id, queue, payload, priority, run_at, attempts, max_attempts, worker_id, \
     claimed_at, claim_expires_at, created_at, expires_at, visibility_timeout_s, backoff_base_s, \
     dead_letter_retention_s, unique_key, claim_count, keep_completed_s, tags, meta";

/// A valid claim: `$2` id, `$3` worker, `$4` token.
const HELD: &str = concat!(
    "id = $2 AND state = 'processing' AND worker_id = $3 AND claim_count = $4 \
     AND claim_expires_at > (SELECT COALESCE($1::bigint, floor(",
    db_epoch!(),
    ")::bigint))"
);

/// Why a row goes to dead, as SQL over the row (constant texts only).
const FAILED_OR_CANCELLED: &str = "CASE WHEN cancel_requested THEN 'cancelled' ELSE 'failed' END";
const EXHAUSTED_OR_CANCELLED: &str =
    "CASE WHEN cancel_requested THEN 'cancelled' ELSE 'exhausted' END";

pub(crate) struct Sql {
    /// `"schema"."job_id_seq"`, passed as a `regclass` parameter.
    pub job_seq: String,
    /// The schema's queue channel (`notify_channel`), each insert's last
    /// parameter: inside a transaction the insert statements notify the
    /// queues they inserted into, at commit (a statement trigger with a
    /// transition table cost a one-job enqueue 29 µs of its 207: 14 %; see
    /// `notify_queues_of`). An empty channel notifies nothing: autocommit
    /// calls announce after their commit (see `crate::announce`).
    pub channel: String,
    pub enqueue_plain: String,
    pub enqueue_uniform: String,
    pub enqueue_one: String,
    pub enqueue_claimed: String,
    pub enqueue_unique: String,
    pub unique_holder: String,
    pub rescue: String,
    pub claim: String,
    /// The settle statements that count in the throughput table as they
    /// run (autocommit calls, `within`).
    pub counted: SettleSql,
    /// The same, leaving the counting to the caller (the engine's own
    /// transaction, which counts after its commit: see `throughput_add`).
    pub uncounted: SettleSql,
    pub retry_select: String,
    pub retry_many_select: String,
    /// Add counts to this connection's shard of the current bucket: `$2`
    /// queues, `$3` completed, `$4` failed.
    pub throughput_add: String,
    pub heartbeat: String,
    pub hand_back: String,
    pub unclaim: String,
    pub cancel: String,
    pub run_now: String,
    pub delete: String,
    pub cancel_requests: String,
    pub get_live: String,
    pub get_dead: String,
    pub get_done: String,
    pub list_live: String,
    pub list_done: String,
    pub stats: String,
    /// Every listed queue's counts in one statement (`$1` the time).
    pub stats_all: String,
    pub queue_list: String,
    pub throughput_buckets: String,
    pub depth_history: String,
    pub sweep_sample_depth: String,
    pub throughput_totals: String,
    pub sweep_fold_throughput: String,
    pub queue_pause: String,
    pub queue_resume: String,
    pub queue_paused: String,
    /// The job table's live and dead tuples, as the statistics count them.
    pub job_tuples: String,
    /// The job table's quoted, schema-qualified name.
    pub job_table: String,
    pub vacuum_job: String,
    pub xmin_horizon: String,
    pub sweep: String,
    pub sweep_mark: String,
    pub sweep_prune_dead: String,
    pub sweep_prune_done: String,
    pub dead_list: String,
    pub dead_requeue: String,
    pub dead_purge: String,
    pub dead_count: String,
}

/// The statements that finish held jobs (ack, retry, fail), each
/// returning the queue of every job it finished (`SELECT id, queue`, or
/// `queue` alone for the one-job retry statements), with or without the
/// throughput count in the statement (see `Sql::counted`).
pub(crate) struct SettleSql {
    pub ack: String,
    pub ack_one: String,
    pub ack_kept: String,
    pub retry_update: String,
    pub retry_bury: String,
    pub retry_many_update: String,
    pub retry_many_bury: String,
    pub fail: String,
}

/// A held claim's row for the statements that follow a retry's
/// `retry_select` (`$w` worker, `$t` token): the row may have been rescued
/// and claimed again in between when they run on their own, outside a
/// transaction (a bare client given to `within`), so they check it again.
/// Not the expiry: the select found it unexpired, and in a transaction its
/// lock keeps rescues off it.
fn still_held(w: u8, t: u8) -> String {
    format!("state = 'processing' AND worker_id = ${w} AND claim_count = ${t}")
}

/// The row's `errors` list with one more entry for its current attempt,
/// keeping the most recent `MAX_ERRORS_KEPT`.
fn errors_appended(err: &str) -> String {
    format!(
        "(CASE WHEN jsonb_array_length(COALESCE(errors, '[]'::jsonb)) >= {MAX_ERRORS_KEPT} \
           THEN errors - 0 ELSE COALESCE(errors, '[]'::jsonb) END) \
         || jsonb_build_array(jsonb_build_object('attempt', attempts, 'at', {NOW}, 'error', {err}))"
    )
}

/// `INSERT INTO queue_throughput …` counting the rows of `from` (a CTE
/// with a `queue` column) as completed (`kind` = `completed`) or failed
/// (`failed`) in the current bucket of this connection's shard.
fn counted(throughput: &QualifiedTable<'_>, from: &str, kind: &str) -> String {
    let (completed, failed) = match kind {
        "completed" => ("count(*)", "0"),
        _ => ("0", "count(*)"),
    };
    format!(
        "INSERT INTO {throughput} (bucket, queue, shard, completed, failed) \
         SELECT {NOW} / {THROUGHPUT_BUCKET_S} * {THROUGHPUT_BUCKET_S}, queue, \
           (pg_backend_pid() % {THROUGHPUT_SHARDS})::smallint, {completed}, {failed} \
         FROM {from} GROUP BY queue \
         ON CONFLICT (bucket, queue, shard) DO UPDATE \
         SET completed = {throughput}.completed + excluded.completed, \
             failed = {throughput}.failed + excluded.failed"
    )
}

/// `, counted AS (…)`: the CTE counting the rows of `from` (see
/// `counted`), or nothing when `count` is off (the caller counts).
fn count_cte(throughput: &QualifiedTable<'_>, from: &str, kind: &str, count: bool) -> String {
    if count {
        format!(", counted AS ({})", counted(throughput, from, kind))
    } else {
        String::new()
    }
}

/// Delete the rows matching `held` (over `{job} j`) of queues that do not
/// keep completed jobs, count them as completed (when `count`), and return
/// their ids and queues.
fn ack(
    job: &QualifiedTable<'_>,
    throughput: &QualifiedTable<'_>,
    held: &str,
    count: bool,
) -> String {
    format!(
        "WITH gone AS ( \
           DELETE FROM {job} j WHERE {held} AND j.keep_completed_s IS NULL RETURNING j.id, j.queue \
         ){} \
         SELECT id, queue FROM gone",
        count_cte(throughput, "gone", "completed", count)
    )
}

/// The inserted row of a job given by the uniform enqueue parameters
/// (`$2` queue, `$3` priority, `$4` run_at, `$5` delay, `$6` max attempts,
/// `$7` expires_in, `$8` visibility, `$9` backoff, `$10` retention, `$12`
/// keep) and `payload` (SQL), in the order of the insert's columns.
/// A scalar subquery that notifies each distinct queue of the rows `ins`
/// (a CTE of inserted rows with a `queue` column) on channel `${channel}`,
/// once per queue, delivered at commit; nothing when the channel is empty
/// (the caller announces after commit). Uncorrelated, it runs once, when
/// the first row of the statement that holds it is read.
fn notify_queues_of(ins: &str, channel: u8) -> String {
    format!(
        "(SELECT count(*) FROM (SELECT pg_notify(${channel}, q) \
           FROM (SELECT DISTINCT queue AS q FROM {ins}) d WHERE ${channel}::text <> '') n)"
    )
}

/// A scalar subquery that notifies queue `$2` on channel `$13` at commit,
/// or does nothing when the channel is empty.
const NOTIFY_QUEUE: &str = "(SELECT pg_notify($13, $2::text) WHERE $13::text <> '')";

fn uniform_row(payload: &str) -> String {
    format!(
        "$2::text, {payload}, $3::bigint, COALESCE($4::bigint, {NOW} + $5::bigint), $6::bigint, {NOW}, \
         CASE WHEN $7::bigint IS NULL THEN NULL \
           ELSE GREATEST(COALESCE($4::bigint, {NOW} + $5::bigint), {NOW}) + $7::bigint END, \
         $8::bigint, $9::bigint, $10::bigint, NULL::text, $12::bigint, $14::text::jsonb, \
         $15::text::jsonb"
    )
}

/// The batch ack's `$3`: each claim as "token worker", the text its row's
/// `claim_count || ' ' || worker_id` must equal (the token has no space, so
/// the pair reads back unambiguously).
pub(crate) fn held_claims<'a>(claims: impl Iterator<Item = &'a Claim>) -> Vec<String> {
    claims
        .map(|c| format!("{} {}", c.token, c.worker))
        .collect()
}

/// A queue's live jobs counted by state at `NOW`: ready, scheduled,
/// expired, processing, lapsed claims, the oldest ready job's due time,
/// retryable (each named, for `stats_all`'s grouped read).
fn live_counts() -> String {
    format!(
        "count(*) FILTER (WHERE state = 'pending' AND run_at <= {NOW} \
           AND (expires_at IS NULL OR expires_at > {NOW})) AS ready, \
         count(*) FILTER (WHERE state = 'pending' AND run_at > {NOW} \
           AND (expires_at IS NULL OR expires_at > {NOW})) AS scheduled, \
         count(*) FILTER (WHERE state = 'pending' AND expires_at <= {NOW}) AS expired, \
         count(*) FILTER (WHERE state = 'processing' AND claim_expires_at > {NOW}) AS processing, \
         count(*) FILTER (WHERE state = 'processing' AND claim_expires_at <= {NOW}) AS lapsed, \
         min(run_at) FILTER (WHERE state = 'pending' AND run_at <= {NOW} \
           AND (expires_at IS NULL OR expires_at > {NOW})) AS oldest, \
         count(*) FILTER (WHERE state = 'pending' AND run_at > {NOW} AND attempts > 0 \
           AND (expires_at IS NULL OR expires_at > {NOW})) AS retryable"
    )
}

/// Every queue the store knows: with live, dead or kept jobs, or with
/// jobs finished lately (throughput rows).
fn queues_known(
    job: &QualifiedTable<'_>,
    dead: &QualifiedTable<'_>,
    done: &QualifiedTable<'_>,
    throughput: &QualifiedTable<'_>,
) -> String {
    format!(
        "SELECT queue FROM {job} UNION SELECT queue FROM {dead} UNION SELECT queue FROM {done} \
         UNION SELECT queue FROM {throughput} WHERE bucket > 0 AND shard >= 0"
    )
}

/// Shards of a throughput bucket (see migration 010).
const THROUGHPUT_SHARDS: i32 = 16;

/// `INSERT INTO dead … SELECT … FROM {from}`, for a CTE of deleted rows;
/// `error` (SQL, may be NULL) becomes the last error and joins the list.
fn bury(dead: &QualifiedTable<'_>, from: &str, error: &str, reason: &str) -> String {
    format!(
        "INSERT INTO {dead} ({MOVE_COLS}, last_error, errors, reason, died_at) \
         SELECT {MOVE_COLS}, COALESCE({error}, last_error), \
           CASE WHEN {error} IS NULL THEN errors ELSE {appended} END, {reason}, {NOW} FROM {from}",
        appended = errors_appended(error)
    )
}

/// Expired pending jobs to dead and expired claims back to pending (or to
/// dead when out of attempts or cancelled), of queue `$2` (`one_queue`) or
/// of every queue. Returns the three counts. The claims of a worker the
/// process registry has declared dead count as expired at once (see
/// [`DEAD_PROCESS_RESCUE_WINDOW`]): those it made while its row was alive,
/// not those of a new process that took the same id and has yet to beat.
fn rescue(
    job: &QualifiedTable<'_>,
    dead: &QualifiedTable<'_>,
    process: &QualifiedTable<'_>,
    one_queue: bool,
) -> String {
    let (claims_filter, stale_filter) = if one_queue {
        // Expired pending jobs are found by the expiry index (jobs with an
        // expiry, by expiry). A plain `queue = $2` let the planner prefer
        // the claim index, which holds every pending job of the queue:
        // each rescue read the whole backlog (12 ms at 50,000 jobs).
        ("queue = $2 AND", "(queue = $2) IS TRUE AND")
    } else {
        ("", "")
    };
    format!(
        "WITH dead_workers AS ({dead_workers}), claims AS ( \
           SELECT ARRAY(SELECT id FROM {job} WHERE {claims_filter} state = 'processing' \
             AND claim_expires_at <= {NOW} FOR UPDATE SKIP LOCKED) \
             || ARRAY(SELECT j.id FROM {job} j JOIN {process} p ON p.id = j.worker_id \
               WHERE {claims_filter} j.state = 'processing' AND j.claim_expires_at > {NOW} \
               AND p.id = ANY((SELECT ids FROM dead_workers)::text[]) \
               AND j.claimed_at * 1000 < p.expires_at \
               AND (SELECT cardinality(ids) > 0 FROM dead_workers) \
               FOR UPDATE OF j SKIP LOCKED) AS ids \
         ), stale AS ( \
           SELECT ARRAY(SELECT id FROM {job} WHERE {stale_filter} state = 'pending' AND expires_at IS NOT NULL \
             AND expires_at <= {NOW} FOR UPDATE SKIP LOCKED) AS ids \
         ), gone_stale AS ( \
           DELETE FROM {job} j WHERE j.id = ANY((SELECT ids FROM stale)::bigint[]) RETURNING j.* \
         ), buried_stale AS ({bury_stale}), \
         gone AS ( \
           DELETE FROM {job} j WHERE j.id = ANY((SELECT ids FROM claims)::bigint[]) \
             AND (j.attempts >= j.max_attempts OR j.cancel_requested) RETURNING j.* \
         ), buried AS ({bury_claims}), \
         back AS ( \
           UPDATE {job} j SET state = 'pending', claim_expires_at = NULL \
           WHERE j.id = ANY((SELECT ids FROM claims)::bigint[]) AND j.attempts < j.max_attempts \
             AND NOT j.cancel_requested RETURNING j.id \
         ) \
         SELECT (SELECT count(*) FROM gone_stale), (SELECT count(*) FROM gone), (SELECT count(*) FROM back)",
        dead_workers = dead_workers(process),
        bury_stale = bury(dead, "gone_stale", "NULL::text", "'expired'"),
        bury_claims = bury(
            dead,
            "gone",
            "'claim expired on the last attempt'::text",
            EXHAUSTED_OR_CANCELLED
        ),
    )
}

/// The ids of processes declared dead within
/// [`DEAD_PROCESS_RESCUE_WINDOW`], as one array (`ids`).
fn dead_workers(process: &QualifiedTable<'_>) -> String {
    format!(
        "SELECT ARRAY(SELECT id FROM {process} WHERE expires_at < {NOW} * 1000 \
           AND expires_at >= ({NOW} - {window}) * 1000) AS ids",
        window = DEAD_PROCESS_RESCUE_WINDOW.as_secs()
    )
}

/// Hand a held row back to pending, due `$5` seconds from now, without using
/// an attempt; a row whose cancellation was requested goes to dead instead.
/// `held` selects the row; `$6` is the NOTIFY channel. Returns the new due
/// time, or NULL when the row went to dead; no row when nothing was held.
fn hand_back(job: &QualifiedTable<'_>, dead: &QualifiedTable<'_>, held: &str) -> String {
    format!(
        "WITH held AS (SELECT id, cancel_requested FROM {job} WHERE {held} FOR UPDATE), \
         gone AS (DELETE FROM {job} j USING held WHERE j.id = held.id AND held.cancel_requested RETURNING j.*), \
         buried AS ({bury}), \
         back AS ( \
           UPDATE {job} j SET state = 'pending', attempts = j.attempts - 1, run_at = {NOW} + $5::bigint, \
             claim_expires_at = NULL \
           FROM held WHERE j.id = held.id AND NOT held.cancel_requested RETURNING j.queue, j.run_at \
         ) \
         SELECT b.run_at FROM back b CROSS JOIN LATERAL (SELECT pg_notify($6, b.queue)) n \
         UNION ALL SELECT NULL::bigint FROM gone",
        bury = bury(dead, "gone", "NULL::text", "'cancelled'"),
    )
}

/// The settle statements (see [`SettleSql`]), counting in the throughput
/// table when `count`. `held_each` matches the rows of a batch's claims
/// (`$2` ids, `$3` claims; see `Sql::new`).
fn settle_sql(
    job: &QualifiedTable<'_>,
    dead: &QualifiedTable<'_>,
    done: &QualifiedTable<'_>,
    throughput: &QualifiedTable<'_>,
    held_each: &str,
    count: bool,
) -> SettleSql {
    let counting = |from: &str, kind: &str| count_cte(throughput, from, kind, count);
    SettleSql {
        // Rows of queues that keep completed jobs are left to `ack_kept`.
        ack: ack(job, throughput, held_each, count),
        // `ack` for a single claim, with scalar parameters: PostgreSQL
        // costs a generic plan of `id = ANY($2)` for ten ids, so it
        // would plan the array form anew on every call, and planning
        // this statement takes longer than running it. A scalar probe's
        // generic plan is as cheap as a custom one, so it is kept.
        ack_one: ack(job, throughput, HELD, count),
        // The ack of rows `ack` left: copied to `done`, then deleted.
        ack_kept: format!(
            "WITH gone AS ( \
               DELETE FROM {job} j WHERE {held_each} RETURNING j.* \
             ), kept AS ( \
               INSERT INTO {done} ({MOVE_COLS}, last_error, errors, completed_at) \
               SELECT {MOVE_COLS}, last_error, errors, {NOW} FROM gone \
               ON CONFLICT (id) DO UPDATE SET completed_at = excluded.completed_at \
             ){} \
             SELECT id, queue FROM gone",
            counting("gone", "completed")
        ),
        // After `retry_select`: `$2` run_at, `$3` error, `$4` id, `$5`
        // worker, `$6` token.
        retry_update: format!(
            "WITH back AS ( \
               UPDATE {job} SET state = 'pending', run_at = $2, claim_expires_at = NULL, last_error = $3, \
                 errors = {} \
               WHERE id = $4 AND {} RETURNING queue \
             ){} \
             SELECT queue FROM back",
            errors_appended("$3::text"),
            still_held(5, 6),
            counting("back", "failed")
        ),
        // After `retry_select`: `$2` id, `$3` error, `$4` worker, `$5` token.
        retry_bury: format!(
            "WITH gone AS (DELETE FROM {job} WHERE id = $2 AND {} RETURNING *){} {} RETURNING queue",
            still_held(4, 5),
            counting("gone", "failed"),
            bury(dead, "gone", "$3::text", EXHAUSTED_OR_CANCELLED)
        ),
        // After `retry_many_select`: `$2` ids, `$3` run_at, `$4` errors,
        // `$5` claims ("token worker", as `held_claims`).
        retry_many_update: format!(
            "WITH u AS ( \
               SELECT * FROM unnest($2::bigint[], $3::bigint[], $4::text[], $5::text[]) \
                 AS u(id, due, err, held) \
             ), back AS ( \
               UPDATE {job} j SET state = 'pending', run_at = u.due, claim_expires_at = NULL, \
                 last_error = u.err, errors = {} \
               FROM u WHERE j.id = u.id AND j.state = 'processing' \
                 AND j.claim_count || ' ' || j.worker_id = u.held RETURNING j.id, j.queue \
             ){} \
             SELECT id, queue FROM back",
            errors_appended("u.err"),
            counting("back", "failed")
        ),
        // After `retry_many_select`: `$2` ids, `$3` errors, `$4` claims.
        retry_many_bury: format!(
            "WITH gone AS ( \
               DELETE FROM {job} j USING unnest($2::bigint[], $3::text[], $4::text[]) AS u(id, err, held) \
               WHERE j.id = u.id AND j.state = 'processing' \
                 AND j.claim_count || ' ' || j.worker_id = u.held \
               RETURNING j.*, u.err AS retry_error \
             ){} {} RETURNING id, queue",
            counting("gone", "failed"),
            bury(dead, "gone", "retry_error", EXHAUSTED_OR_CANCELLED)
        ),
        fail: format!(
            "WITH gone AS (DELETE FROM {job} WHERE {HELD} RETURNING *){} {} RETURNING id, queue",
            counting("gone", "failed"),
            bury(dead, "gone", "$5::text", FAILED_OR_CANCELLED)
        ),
    }
}

impl Sql {
    pub(crate) fn new(schema: &str) -> Sql {
        let job = QualifiedTable::new(schema, tables::JOB);
        let dead = QualifiedTable::new(schema, tables::DEAD);
        let process = QualifiedTable::new(schema, tables::PROCESS);
        let done = QualifiedTable::new(schema, tables::DONE);
        let meta = QualifiedTable::new(schema, tables::META);
        let paused = QualifiedTable::new(schema, tables::QUEUE_PAUSE);
        let throughput = QualifiedTable::new(schema, tables::QUEUE_THROUGHPUT);
        let depth = QualifiedTable::new(schema, tables::QUEUE_DEPTH);
        // Rows held by the claims in arrays `$2` ids and `$3` claims, each
        // "token worker" (see `held_claims`). `id = ANY($2)` finds the rows;
        // each row's claim is looked up by its id in a jsonb object built
        // once per statement from the two arrays (a binary search per row;
        // built from an `unnest` with two `array_agg`s it took four times as
        // long, a quarter of a 1,000-claim ack). Scanning the arrays per row
        // (`array_position`) made a 500-claim ack take 5 ms instead of 2, a
        // 2,000-claim one 40 ms instead of 6; a semi-join with `unnest` is
        // as fast only while the planner hashes it, and with no statistics
        // (a new table) or a generic plan it re-runs the unnest for every
        // row instead.
        // The state and expiry checks sit inside a CASE so that the only
        // index condition the planner sees is `id = ANY($2)`: written as
        // plain conditions, they matched the deadline index (processing
        // rows by expiry, no queue), and without statistics the planner
        // ANDed a bitmap scan of it with the primary key's. A bitmap scan
        // never marks dead index entries, so each ack walked the entries of
        // every job claimed within the visibility timeout, acked or not:
        // ~200 index entries per job over a 200,000-job run, and growing.
        let held_each = format!(
            "j.id = ANY($2::bigint[]) \
             AND CASE WHEN j.state = 'processing' AND j.claim_expires_at > {NOW} \
               THEN (SELECT jsonb_object($2::bigint[]::text[], $3::text[])) \
                 ->> j.id::text = j.claim_count || ' ' || j.worker_id \
               ELSE false END"
        );
        let unnest = "unnest($2::text[], $3::bytea[], $4::bigint[], $5::bigint[], $6::bigint[], \
              $7::bigint[], $8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[], $12::text[], \
              $13::bigint[], $14::text[], $15::text[]) \
              WITH ORDINALITY AS u(queue, payload, priority, run_at, delay_s, max_attempts, \
              expires_in, vis, backoff, retention, unique_key, keep, tags, meta, ord)";
        let due = format!("COALESCE(run_at, {NOW} + delay_s)");
        let values = format!(
            "queue, payload, priority, {due}, max_attempts, {NOW}, \
             CASE WHEN expires_in IS NULL THEN NULL ELSE GREATEST({due}, {NOW}) + expires_in END, \
             vis, backoff, retention, unique_key, keep, tags::jsonb, meta::jsonb"
        );
        let insert_cols =
            "queue, payload, priority, run_at, max_attempts, created_at, expires_at, \
             visibility_timeout_s, backoff_base_s, dead_letter_retention_s, unique_key, keep_completed_s, \
             tags, meta";
        Sql {
            job_seq: format!("{}.{}", quote_identifier(schema), quote_identifier("job_id_seq")),
            channel: crate::schema::notify_channel(schema),
            // Without unique keys nothing can conflict: ids are assigned in
            // input order, so sorting the returned ids maps them back.
            enqueue_plain: format!(
                "WITH ins AS ( \
                   INSERT INTO {job} ({insert_cols}) SELECT {values} FROM {unnest} ORDER BY ord \
                   RETURNING id, queue \
                 ) \
                 SELECT id, {} FROM ins",
                notify_queues_of("ins", 16)
            ),
            // A batch whose jobs differ only in payload (the common batch):
            // one array instead of twelve.
            enqueue_uniform: format!(
                "WITH ins AS ( \
                   INSERT INTO {job} ({insert_cols}) SELECT {} \
                   FROM unnest($11::bytea[]) WITH ORDINALITY AS u(payload, ord) ORDER BY ord RETURNING id \
                 ) \
                 SELECT id, {NOTIFY_QUEUE} FROM ins",
                uniform_row("payload")
            ),
            // `enqueue_uniform` for one job, with a scalar payload: a plan
            // over an array parameter is made anew on every call, this one
            // is prepared once (the one-job enqueue is the latency case).
            enqueue_one: format!(
                "WITH ins AS (INSERT INTO {job} ({insert_cols}) VALUES ({}) RETURNING id) \
                 SELECT id, {NOTIFY_QUEUE} FROM ins",
                uniform_row("$11::bytea")
            ),
            // `enqueue_one` (parameters alike, `$14` the worker), the row
            // inserted already claimed when nothing is ahead of it: due now,
            // its queue not paused, no other due job pending (which a claim
            // would take first). A claimed row sends no NOTIFY: nobody else
            // should claim. The pending check walks the claim index from
            // the queue's head as the claim it replaces would (past the
            // queue's scheduled jobs when none is due).
            enqueue_claimed: format!(
                "WITH free AS ( \
                   SELECT COALESCE($4::bigint, {NOW} + $5::bigint) <= {NOW} \
                     AND NOT EXISTS (SELECT 1 FROM {paused} WHERE queue = $2) \
                     AND NOT EXISTS (SELECT 1 FROM {job} WHERE queue = $2 AND state = 'pending' \
                       AND run_at <= {NOW} AND (expires_at IS NULL OR expires_at > {NOW})) AS ok \
                 ), ins AS ( \
                   INSERT INTO {job} ({insert_cols}, state, attempts, claim_count, worker_id, \
                     claimed_at, claim_expires_at) \
                   SELECT {}, CASE WHEN ok THEN 'processing' ELSE 'pending' END, ok::int, ok::int, \
                     CASE WHEN ok THEN $16::text END, CASE WHEN ok THEN {NOW} END, \
                     CASE WHEN ok THEN {NOW} + $8::bigint END \
                   FROM free \
                   RETURNING id, payload, priority, attempts, max_attempts, claim_expires_at, run_at, \
                     created_at, unique_key, claimed_at, claim_count, tags::text, meta::text, \
                     state = 'processing' AS claimed \
                 ) \
                 SELECT ins.*, CASE WHEN NOT ins.claimed THEN {NOTIFY_QUEUE} END \
                 FROM ins",
                uniform_row("$11::bytea")
            ),
            // With unique keys, ids are drawn first so each input row knows its
            // id; a skipped row reports the live job that holds its key (from
            // this batch or from before it).
            enqueue_unique: format!(
                "WITH input AS ( \
                   SELECT nextval($16::text::regclass) AS id, t.* FROM (SELECT * FROM {unnest} ORDER BY ord) t \
                 ), ins AS ( \
                   INSERT INTO {job} (id, {insert_cols}) SELECT id, {values} FROM input \
                   ON CONFLICT (queue, unique_key) WHERE unique_key IS NOT NULL DO NOTHING \
                   RETURNING id, queue, unique_key \
                 ) \
                 SELECT i.ord, COALESCE(ins.id, first_ins.id, existing.id) AS id, ins.id IS NOT NULL AS inserted, \
                   {notify} \
                 FROM input i \
                 LEFT JOIN ins ON ins.id = i.id \
                 LEFT JOIN LATERAL (SELECT x.id FROM ins x WHERE ins.id IS NULL AND x.queue = i.queue \
                   AND x.unique_key = i.unique_key LIMIT 1) first_ins ON true \
                 LEFT JOIN LATERAL (SELECT j.id FROM {job} j WHERE ins.id IS NULL AND j.queue = i.queue \
                   AND j.unique_key = i.unique_key LIMIT 1) existing ON true \
                 ORDER BY i.ord",
                notify = notify_queues_of("ins", 17)
            ),
            unique_holder: format!("SELECT id FROM {job} WHERE queue = $1 AND unique_key = $2"),
            rescue: rescue(&job, &dead, &process, true),
            // `LIMIT (SELECT $4)`, not `LIMIT $4`: a custom plan would know
            // the limit and a generic one not, so the generic plan always
            // looked costlier and the statement was planned anew on every
            // call (planning took longer than a one-job claim runs). Unknown
            // to both, the limit is costed alike, and the server keeps the
            // generic plan: the claim index's order, as with a known limit
            // (checked on a million pending jobs in one queue).
            // Ids go through `= ANY(ARRAY(subquery))` rather than a join: the
            // subquery runs once and each id is one primary-key probe. With a
            // join, the generic plan of a prepared statement (LIMIT unknown)
            // may merge-join along the whole primary key, dead rows included.
            claim: format!(
                "UPDATE {job} j SET state = 'processing', attempts = j.attempts + 1, \
                   claim_count = j.claim_count + 1, worker_id = $3, \
                   claimed_at = {NOW}, claim_expires_at = {NOW} + j.visibility_timeout_s \
                 WHERE j.id = ANY(ARRAY( \
                   SELECT id FROM {job} WHERE queue = $2 AND state = 'pending' AND run_at <= {NOW} \
                     AND (expires_at IS NULL OR expires_at > {NOW}) \
                     AND NOT EXISTS (SELECT 1 FROM {paused} WHERE queue = $2) \
                   ORDER BY priority DESC, run_at, id LIMIT (SELECT $4::bigint) FOR UPDATE SKIP LOCKED)) \
                 RETURNING j.id, j.payload, j.priority, j.attempts, j.max_attempts, j.claim_expires_at, \
                   j.run_at, j.created_at, j.unique_key, j.claimed_at, j.claim_count, j.tags::text, \
                   j.meta::text"
            ),
            counted: settle_sql(&job, &dead, &done, &throughput, &held_each, true),
            uncounted: settle_sql(&job, &dead, &done, &throughput, &held_each, false),
            // Rows in queue order (the caller sorts them), so that two of
            // these statements lock their rows in the same order.
            throughput_add: format!(
                "INSERT INTO {throughput} (bucket, queue, shard, completed, failed) \
                 SELECT {NOW} / {THROUGHPUT_BUCKET_S} * {THROUGHPUT_BUCKET_S}, u.queue, \
                   (pg_backend_pid() % {THROUGHPUT_SHARDS})::smallint, u.completed, u.failed \
                 FROM unnest($2::text[], $3::bigint[], $4::bigint[]) WITH ORDINALITY \
                   AS u(queue, completed, failed, ord) ORDER BY u.ord \
                 ON CONFLICT (bucket, queue, shard) DO UPDATE \
                 SET completed = {throughput}.completed + excluded.completed, \
                     failed = {throughput}.failed + excluded.failed"
            ),
            // A lone retry: lock and read the held row, then schedule it
            // or bury it (`SettleSql::retry_update`, `retry_bury`).
            retry_select: format!(
                "SELECT attempts, max_attempts, backoff_base_s, {NOW}, cancel_requested FROM {job} \
                 WHERE {HELD} FOR UPDATE"
            ),
            // A settle batch's retries, three statements for the batch:
            // lock and read the held rows (`$2` ids, `$3` claims as in
            // `ack`), then schedule some and bury the rest
            // (`SettleSql::retry_many_update`, `retry_many_bury`).
            retry_many_select: format!(
                "SELECT j.id, j.attempts, j.max_attempts, j.backoff_base_s, {NOW}, j.cancel_requested \
                 FROM {job} j WHERE {held_each} FOR UPDATE"
            ),
            heartbeat: format!(
                "UPDATE {job} SET claim_expires_at = {NOW} + visibility_timeout_s WHERE {HELD} \
                 RETURNING claim_expires_at"
            ),
            hand_back: hand_back(&job, &dead, HELD),
            // $2 id; $3, $4 unused (so the parameters line up with `hand_back`).
            unclaim: hand_back(
                &job,
                &dead,
                "id = $2 AND state = 'processing' AND $3::text IS NULL AND $4::bigint IS NULL",
            ),
            run_now: format!(
                "WITH moved AS (UPDATE {job} SET run_at = {NOW} \
                   WHERE id = ANY($2) AND state = 'pending' AND run_at > {NOW} RETURNING 1) \
                 SELECT count(*) FROM moved"
            ),
            delete: format!(
                "WITH gone AS (DELETE FROM {job} WHERE id = ANY($1) AND state = 'pending' \
                   RETURNING 1) \
                 SELECT count(*) FROM gone"
            ),
            cancel: format!(
                "WITH gone AS (DELETE FROM {job} WHERE id = $2 AND state = 'pending' RETURNING *), \
                 buried AS ({bury}), \
                 flagged AS (UPDATE {job} SET cancel_requested = true WHERE id = $2 AND state = 'processing' \
                   RETURNING id) \
                 SELECT (SELECT count(*) FROM gone), (SELECT count(*) FROM flagged)",
                bury = bury(&dead, "gone", "NULL::text", "'cancelled'")
            ),
            // A CASE for the state check, as in `held_each`: a plain one
            // let the planner AND the whole deadline index (every entry
            // of a job claimed within the visibility timeout, dead ones
            // included) into the primary key's bitmap.
            cancel_requests: format!(
                "SELECT id FROM {job} WHERE id = ANY($1::bigint[]) \
                 AND CASE WHEN state = 'processing' THEN cancel_requested ELSE false END"
            ),
            get_live: format!("SELECT {JOB_COLS}, state, cancel_requested FROM {job} WHERE id = $1"),
            get_dead: format!("SELECT {JOB_COLS}, reason, died_at FROM {dead} WHERE id = $1"),
            get_done: format!("SELECT {JOB_COLS}, completed_at FROM {done} WHERE id = $1"),
            list_live: format!(
                "SELECT {JOB_COLS}, state, cancel_requested FROM {job} \
                 WHERE ($1::text IS NULL OR queue = $1) AND ($2::text IS NULL OR state = $2) AND id > $3 \
                   AND ($5::text IS NULL OR tags ? $5) \
                 ORDER BY id LIMIT $4"
            ),
            list_done: format!(
                "SELECT {JOB_COLS}, completed_at FROM {done} \
                 WHERE ($1::text IS NULL OR queue = $1) AND $2::text IS NULL AND id > $3 \
                   AND ($5::text IS NULL OR tags ? $5) \
                 ORDER BY id LIMIT $4"
            ),
            // Columns as `stats_row` reads them: the live counts, dead,
            // kept, the time, cancelled.
            stats: format!(
                "SELECT {live}, (SELECT count(*) FROM {dead} WHERE queue = $2), \
                   (SELECT count(*) FROM {done} WHERE queue = $2), {NOW}, \
                   (SELECT count(*) FROM {dead} WHERE queue = $2 AND reason = 'cancelled') \
                 FROM {job} WHERE queue = $2",
                live = live_counts(),
            ),
            // The queue's name, then the columns of `stats`.
            stats_all: format!(
                "WITH q AS ({queues}), \
                   l AS (SELECT queue, {live} FROM {job} GROUP BY queue), \
                   d AS (SELECT queue, count(*) AS n, count(*) FILTER (WHERE reason = 'cancelled') AS c \
                     FROM {dead} GROUP BY queue), \
                   o AS (SELECT queue, count(*) AS n FROM {done} GROUP BY queue) \
                 SELECT q.queue, l.ready, l.scheduled, l.expired, l.processing, l.lapsed, l.oldest, \
                   l.retryable, d.n, o.n, {NOW}, d.c \
                 FROM q LEFT JOIN l USING (queue) LEFT JOIN d USING (queue) LEFT JOIN o USING (queue) \
                 ORDER BY q.queue",
                queues = queues_known(&job, &dead, &done, &throughput),
                live = live_counts(),
            ),
            queue_list: format!(
                "{} ORDER BY 1",
                queues_known(&job, &dead, &done, &throughput)
            ),
            throughput_buckets: format!(
                "SELECT bucket, queue, sum(completed)::bigint, sum(failed)::bigint, \
                   CASE WHEN shard < 0 THEN {coarse}::bigint ELSE {fine}::bigint END AS span \
                 FROM {throughput} \
                 WHERE bucket > {NOW} - $2::bigint AND ($3::text IS NULL OR queue = $3) \
                 GROUP BY bucket, queue, span ORDER BY bucket, queue, span",
                coarse = THROUGHPUT_COARSE_S,
                fine = THROUGHPUT_BUCKET_S,
            ),
            depth_history: format!(
                "SELECT queue, at, ready, scheduled, processing, dead FROM {depth} \
                 WHERE at > {NOW} - $2::bigint AND ($3::text IS NULL OR queue = $3) \
                 ORDER BY at, queue"
            ),
            // One sample of every queue's counts (live and dead), and the
            // samples past the history dropped.
            sweep_sample_depth: format!(
                "WITH old AS (DELETE FROM {depth} WHERE at <= {NOW} - $2::bigint) \
                 INSERT INTO {depth} (queue, at, ready, scheduled, processing, dead) \
                 SELECT queue, {NOW}, sum(ready), sum(scheduled), sum(processing), sum(dead) FROM ( \
                   SELECT queue, \
                     count(*) FILTER (WHERE state = 'pending' AND run_at <= {NOW}) AS ready, \
                     count(*) FILTER (WHERE state = 'pending' AND run_at > {NOW}) AS scheduled, \
                     count(*) FILTER (WHERE state = 'processing') AS processing, 0::bigint AS dead \
                   FROM {job} GROUP BY queue \
                   UNION ALL SELECT queue, 0, 0, 0, count(*) FROM {dead} GROUP BY queue \
                 ) c GROUP BY queue \
                 ON CONFLICT (queue, at) DO UPDATE SET ready = excluded.ready, \
                   scheduled = excluded.scheduled, processing = excluded.processing, \
                   dead = excluded.dead"
            ),
            // Always one row at least (the clock's), queue NULL when none.
            throughput_totals: format!(
                "SELECT n.now, t.queue, t.completed, t.failed FROM (SELECT {NOW} AS now) n LEFT JOIN ( \
                   SELECT queue, sum(completed)::bigint AS completed, sum(failed)::bigint AS failed \
                   FROM {throughput} WHERE $2::text IS NULL OR queue = $2 GROUP BY queue \
                 ) t ON true ORDER BY t.queue"
            ),
            // Buckets past the retention fold into bucket 0, one row per
            // queue: the totals stay whole, the table stays small.
            // Past the hour ($2), fine buckets fold into coarse ones of
            // 5 minutes (shard -1); past the week ($3), coarse ones into
            // bucket 0, one row per queue: the totals stay whole.
            sweep_fold_throughput: format!(
                "WITH fine AS ( \
                   DELETE FROM {throughput} WHERE bucket > 0 AND shard >= 0 \
                     AND bucket <= {NOW} - $2::bigint RETURNING * \
                 ), coarse AS ( \
                   DELETE FROM {throughput} WHERE bucket > 0 AND shard < 0 \
                     AND bucket <= {NOW} - $3::bigint RETURNING * \
                 ), folded AS ( \
                   SELECT CASE WHEN bucket <= {NOW} - $3::bigint THEN 0 \
                       ELSE bucket / {span} * {span} END AS bucket, queue, \
                     CASE WHEN bucket <= {NOW} - $3::bigint THEN 0 ELSE -1 END AS shard, \
                     completed, failed \
                   FROM fine \
                   UNION ALL SELECT 0, queue, 0, completed, failed FROM coarse \
                 ) \
                 INSERT INTO {throughput} (bucket, queue, shard, completed, failed) \
                 SELECT bucket, queue, shard, sum(completed), sum(failed) FROM folded \
                 GROUP BY bucket, queue, shard \
                 ON CONFLICT (bucket, queue, shard) DO UPDATE \
                 SET completed = {throughput}.completed + excluded.completed, \
                     failed = {throughput}.failed + excluded.failed",
                span = THROUGHPUT_COARSE_S,
            ),
            queue_pause: format!(
                "INSERT INTO {paused} (queue, paused_at) \
                 VALUES ($2, {NOW}) \
                 ON CONFLICT (queue) DO NOTHING"
            ),
            queue_resume: format!("DELETE FROM {paused} WHERE queue = $1"),
            queue_paused: format!("SELECT queue FROM {paused} ORDER BY queue"),
            // The table's quoted name goes in as a parameter, never into a
            // string literal.
            job_tuples: "SELECT COALESCE(pg_stat_get_live_tuples($1::text::regclass), 0), \
                   COALESCE(pg_stat_get_dead_tuples($1::text::regclass), 0)"
                .to_string(),
            job_table: job.to_string(),
            vacuum_job: format!("VACUUM (SKIP_LOCKED) {job}"),
            // What a vacuum of this database's tables cannot pass: the
            // oldest transaction id or snapshot of its sessions, of
            // sessions of no database (walsenders, carrying standbys'
            // feedback), of its prepared transactions and of replication
            // slots. NULL when nothing holds one, or when this role may
            // not see the sessions (then `reclaim` waits on time alone).
            xmin_horizon: "SELECT x::text FROM ( \
                   SELECT backend_xid AS x FROM pg_stat_activity \
                     WHERE (datname = current_database() OR datname IS NULL) \
                       AND pid <> pg_backend_pid() \
                   UNION ALL SELECT backend_xmin FROM pg_stat_activity \
                     WHERE (datname = current_database() OR datname IS NULL) \
                       AND pid <> pg_backend_pid() \
                   UNION ALL SELECT transaction FROM pg_prepared_xacts \
                     WHERE database = current_database() \
                   UNION ALL SELECT xmin FROM pg_replication_slots) h \
                 WHERE x IS NOT NULL ORDER BY age(x) DESC LIMIT 1"
                .to_string(),
            sweep: rescue(&job, &dead, &process, false),
            // Claim this interval's sweep: a concurrent sweeper blocks on
            // the row, then re-checks the condition and finds it taken.
            sweep_mark: format!(
                "INSERT INTO {meta} (key, value) VALUES ('last_sweep_at', {NOW}) \
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value \
                 WHERE {meta}.value <= {NOW} - $2::bigint"
            ),
            sweep_prune_dead: format!(
                "DELETE FROM {dead} WHERE dead_letter_retention_s IS NOT NULL \
                 AND died_at + dead_letter_retention_s <= {NOW}"
            ),
            sweep_prune_done: format!(
                "DELETE FROM {done} WHERE completed_at + keep_completed_s <= {NOW}"
            ),
            dead_list: format!(
                "SELECT {JOB_COLS}, reason, died_at FROM {dead} \
                 WHERE ($1::text IS NULL OR queue = $1) AND id > $2 \
                   AND ($4::text IS NULL OR tags ? $4) ORDER BY id LIMIT $3"
            ),
            dead_requeue: format!(
                "WITH sel AS ( \
                   SELECT id FROM {dead} d WHERE ($2::text IS NULL OR queue = $2) \
                     AND ($3::bigint[] IS NULL OR id = ANY($3)) \
                     AND (d.unique_key IS NULL OR NOT EXISTS (SELECT 1 FROM {job} j \
                       WHERE j.queue = d.queue AND j.unique_key = d.unique_key)) \
                   ORDER BY id LIMIT $4 FOR UPDATE SKIP LOCKED \
                 ), ins AS ( \
                   INSERT INTO {job} (id, queue, payload, priority, run_at, attempts, max_attempts, \
                     created_at, visibility_timeout_s, backoff_base_s, dead_letter_retention_s, unique_key, \
                     last_error, errors, claim_count, keep_completed_s, tags, meta) \
                   SELECT d.id, d.queue, d.payload, d.priority, {NOW}, 0, d.max_attempts, d.created_at, \
                     d.visibility_timeout_s, d.backoff_base_s, d.dead_letter_retention_s, d.unique_key, \
                     d.last_error, d.errors, d.claim_count, d.keep_completed_s, d.tags, d.meta \
                   FROM {dead} d JOIN sel USING (id) ORDER BY d.id \
                   ON CONFLICT DO NOTHING RETURNING id, queue \
                 ) \
                 DELETE FROM {dead} d USING ins WHERE d.id = ins.id AND {} >= 0",
                notify_queues_of("ins", 5)
            ),
            dead_purge: format!(
                "DELETE FROM {dead} WHERE id IN (SELECT id FROM {dead} WHERE ($1::text IS NULL OR queue = $1) \
                 AND ($2::bigint[] IS NULL OR id = ANY($2)) ORDER BY id LIMIT $3)"
            ),
            dead_count: format!(
                "SELECT count(*) FROM {dead} WHERE ($1::text IS NULL OR queue = $1) \
                 AND ($2::bigint[] IS NULL OR id = ANY($2))"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{testing, PgEngine, PgOptions};
    use alkstore_core::prelude::*;
    use alkstore_core::{JobClaimParams, NewJob};

    /// Plans as a new table gets them (no statistics) after jobs were
    /// claimed and acked. Statements that take a list of claimed ids must
    /// find rows by primary key alone: with the state and expiry as plain
    /// conditions the planner ANDed in the deadline index, whose dead
    /// entries (every job claimed within the visibility timeout) a bitmap
    /// scan reads on every call. A queue's rescue must not read the claim
    /// index, which holds the queue's whole backlog.
    #[tokio::test]
    async fn statements_read_only_the_indexes_they_need() {
        let url = testing::ensure_database(&testing::database_url(), "alkstore_test")
            .await
            .expect("test database");
        let schema = testing::unique_schema("plans");
        let engine = PgEngine::open(PgOptions::new(url.clone(), schema.clone()))
            .await
            .expect("open");
        let jobs: Vec<NewJob> = (0..20_000)
            .map(|_| NewJob::new("q", b"{}".to_vec()))
            .collect();
        engine.job_enqueue(jobs).await.expect("enqueue");
        let first = engine
            .job_claim(JobClaimParams::new("q", "w", 1_000))
            .await
            .expect("claim");
        let claims: Vec<_> = first.iter().map(|j| j.claim()).collect();
        engine.job_ack(claims).await.expect("ack");
        let held = engine
            .job_claim(JobClaimParams::new("q", "w", 1_000))
            .await
            .expect("claim");
        let ids = format!(
            "'{{{}}}'",
            held.iter()
                .map(|j| j.id.to_string())
                .collect::<Vec<_>>()
                .join(",")
        );
        let tokens = format!(
            "'{{{}}}'",
            held_claims(held.iter().map(|j| j.claim()).collect::<Vec<_>>().iter())
                .iter()
                .map(|t| format!("\"{t}\""))
                .collect::<Vec<_>>()
                .join(",")
        );
        let sql = Sql::new(&schema);
        let client = engine.client().await.expect("client");
        client
            .batch_execute(&format!(
                "SET plan_cache_mode = force_generic_plan; \
                 PREPARE ack AS {}; PREPARE cancels AS {}; PREPARE rescue AS {}",
                sql.counted.ack, sql.cancel_requests, sql.rescue
            ))
            .await
            .expect("prepare");
        for (name, args, needs, never) in [
            (
                "ack",
                format!("NULL, {ids}, {tokens}"),
                "job_pkey",
                "deadline_idx",
            ),
            ("cancels", ids.clone(), "job_pkey", "deadline_idx"),
            ("rescue", "NULL, 'q'".to_string(), "expiry_idx", "claim_idx"),
        ] {
            // EXPLAIN ANALYZE would run the ack: a plain EXPLAIN suffices.
            let plan: Vec<String> = client
                .simple_query(&format!("EXPLAIN (COSTS OFF) EXECUTE {name}({args})"))
                .await
                .expect("explain")
                .into_iter()
                .filter_map(|m| match m {
                    tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_owned),
                    _ => None,
                })
                .collect();
            let plan = plan.join("\n");
            assert!(plan.contains(needs), "{name} uses {needs}:\n{plan}");
            assert!(!plan.contains(never), "{name} reads {never}:\n{plan}");
        }
        drop(client);
        testing::drop_schema(&url, &schema).await.expect("drop");
    }
}
