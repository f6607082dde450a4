//! The queue area on SQLite: its statements (here) and row decoding
//! (`rows.rs`).

mod rows;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use alkstore_core::queue::{secs, truncate_error};
use alkstore_core::queue::{
    DeadCountParams, DeadPurgeParams, DeadRequeueParams, EnqueuedClaimed, JobAckParams,
    JobCancelParams, JobCancelRequestsParams, JobEnqueueClaimedParams, JobEnqueueParams,
    JobGetParams, JobHeartbeatParams, JobReleaseParams, JobSettleParams, JobUnclaimParams,
    QueuePauseParams, QueueStatsParams, QueueThroughput, QueueThroughputParams, QueueTotals,
    ThroughputBucket, THROUGHPUT_BUCKET_S, THROUGHPUT_RETENTION,
};
use alkstore_core::validate::count;
use alkstore_core::{
    backoff_delay_s, CancelOutcome, Capabilities, Checked, Claim, DeadListParams, DeadSelect,
    Engine, Enqueued, Job, JobClaimParams, JobInfo, JobListParams, JobRetryParams, JobState,
    Limits, NewJob, QueueDriver, QueueStats, Result, RetryOutcome, Settle, Settled, Settlement,
    SweepParams, SweepReport, WakeHub,
};
use rusqlite::{params, Connection, OptionalExtension, ToSql};

use crate::writer::WriterState;
use crate::{db, SqliteEngine};
use rows::{job_info, ClaimedRows, Source, JOB_COLS, MOVE_COLS};

/// Ids reserved for new jobs by one connection: `next..=last`. The writer
/// keeps its block across commits, and drops it when a group finds at its
/// start that another connection has committed since the last group's
/// start (its jobs' ids are above ours: a new block keeps ids rising in
/// commit order across processes; no other connection commits between a
/// group's start and its reservation) or when a rollback may have undone
/// the reservation (`WriterState::forget_rolled_back`).
#[derive(Debug)]
pub(crate) struct JobIds {
    next: i64,
    last: i64,
}

/// Ids the writer reserves at a time: one write of `__alkstore_meta` per
/// this many enqueued jobs (migration 013 says why).
pub(crate) const JOB_ID_BLOCK: i64 = 1024;

impl JobIds {
    /// The id the next job inserted on `conn` gets, reserving `block` ids
    /// first when `ids` holds none left. The reservation raises
    /// 'job_id_high' past every id in the job, dead and done tables too, so
    /// a lost or hand-edited counter never hands out an id in use. Call
    /// [`JobIds::taken`] once it is used.
    pub(crate) fn next(
        ids: &mut Option<JobIds>,
        conn: &Connection,
        block: i64,
    ) -> rusqlite::Result<i64> {
        if let Some(held) = ids {
            if held.next <= held.last {
                return Ok(held.next);
            }
        }
        let last: i64 = conn
            .prepare_cached(
                "INSERT INTO __alkstore_meta (key, value) \
                 SELECT 'job_id_high', max(COALESCE((SELECT max(id) FROM __alkstore_job), 0), \
                   COALESCE((SELECT max(id) FROM __alkstore_dead), 0), \
                   COALESCE((SELECT max(id) FROM __alkstore_done), 0)) + ?1 WHERE true \
                 ON CONFLICT (key) DO UPDATE SET value = max(value + ?1, excluded.value) \
                 RETURNING value",
            )?
            .query_row([block], |r| r.get(0))?;
        let next = last - block + 1;
        *ids = Some(JobIds { next, last });
        Ok(next)
    }

    /// The id [`JobIds::next`] gave was used.
    pub(crate) fn taken(ids: &mut Option<JobIds>) {
        if let Some(held) = ids {
            held.next += 1;
        }
    }
}

/// Insert one validated job at `now`, its id from `ids` (reserving `block`
/// ids when it has none left). Shared by the engine and the outbox.
pub(crate) fn insert_job(
    conn: &Connection,
    job: &NewJob,
    now: i64,
    ids: &mut Option<JobIds>,
    block: i64,
) -> Result<Enqueued> {
    let op = "job_enqueue";
    let (run_at, expires_at) = job.times(now);
    let id = JobIds::next(ids, conn, block).map_err(db(op))?;
    let mut stmt = conn
        .prepare_cached(
            "INSERT INTO __alkstore_job (queue, payload, priority, run_at, max_attempts, created_at, \
               expires_at, visibility_timeout_s, backoff_base_s, dead_letter_retention_s, unique_key, \
               keep_completed_s, id) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13) \
             ON CONFLICT (queue, unique_key) WHERE unique_key IS NOT NULL DO NOTHING",
        )
        .map_err(db(op))?;
    let inserted = stmt
        .execute(params![
            job.queue,
            job.payload,
            job.opts.priority,
            run_at,
            job.max_attempts(),
            now,
            expires_at,
            job.visibility_timeout_s(),
            job.backoff_base_s(),
            job.dead_letter_retention_s(),
            job.opts.unique_key,
            job.keep_completed_s(),
            id,
        ])
        .map_err(db(op))?;
    if inserted == 1 {
        JobIds::taken(ids);
        return Ok(Enqueued::Inserted(id));
    }
    let id: i64 = conn
        .prepare_cached("SELECT id FROM __alkstore_job WHERE queue = ?1 AND unique_key = ?2")
        .and_then(|mut s| s.query_row(params![job.queue, job.opts.unique_key], |r| r.get(0)))
        .map_err(db(op))?;
    Ok(Enqueued::Duplicate(id))
}

/// The row's `errors` list with one more entry for its current attempt
/// (keeping the most recent `MAX_ERRORS_KEPT`); `at` and `err` are SQL
/// parameter placeholders.
fn errors_appended(at: &str, err: &str) -> String {
    format!(
        "json_insert(CASE WHEN json_array_length(COALESCE(errors, '[]')) >= {max} \
           THEN json_remove(errors, '$[0]') ELSE COALESCE(errors, '[]') END, '$[#]', \
           json_object('attempt', attempts, 'at', {at}, 'error', {err}))",
        max = alkstore_core::queue::MAX_ERRORS_KEPT
    )
}

/// Why a row goes to dead: a SQL expression over the job row (only constant
/// texts from this file, never input).
const FAILED_OR_CANCELLED: &str = "CASE WHEN cancel_requested THEN 'cancelled' ELSE 'failed' END";
const EXHAUSTED_OR_CANCELLED: &str =
    "CASE WHEN cancel_requested THEN 'cancelled' ELSE 'exhausted' END";

/// Move the job rows selected by `where_sql` to the dead table with reason
/// `reason_sql` (a SQL expression); `error`, when given, becomes the last
/// error and joins the row's error list.
fn move_to_dead(
    conn: &Connection,
    op: &'static str,
    where_sql: &str,
    reason_sql: &str,
    error: Option<&str>,
    now: i64,
    args: &[&dyn ToSql],
) -> Result<u64> {
    // Parameters ?1..?n belong to `where_sql`; error and now follow.
    let n = args.len();
    let (e, t) = (format!("?{}", n + 1), format!("?{}", n + 2));
    let insert = format!(
        "INSERT OR REPLACE INTO __alkstore_dead ({MOVE_COLS}, last_error, errors, reason, died_at) \
         SELECT {MOVE_COLS}, COALESCE({e}, last_error), \
           CASE WHEN {e} IS NULL THEN errors ELSE {appended} END, {reason_sql}, {t} \
         FROM __alkstore_job WHERE {where_sql}",
        appended = errors_appended(&t, &e),
    );
    let mut all: Vec<&dyn ToSql> = args.to_vec();
    all.push(&error);
    all.push(&now);
    let moved = conn
        .prepare_cached(&insert)
        .and_then(|mut s| s.execute(all.as_slice()))
        .map_err(db(op))?;
    if moved > 0 {
        conn.prepare_cached(&format!("DELETE FROM __alkstore_job WHERE {where_sql}"))
            .and_then(|mut s| s.execute(args))
            .map_err(db(op))?;
    }
    Ok(moved as u64)
}

/// Count `completed` and `failed` jobs of `queue` in the bucket of `now`
/// (see migration 012), in the caller's transaction.
fn count_finished(
    conn: &Connection,
    op: &'static str,
    now: i64,
    queue: &str,
    completed: u64,
    failed: u64,
) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO __alkstore_queue_throughput (bucket, queue, shard, completed, failed) \
         VALUES (?1, ?2, 0, ?3, ?4) ON CONFLICT (bucket, queue, shard) DO UPDATE \
         SET completed = completed + excluded.completed, failed = failed + excluded.failed",
    )
    .and_then(|mut s| {
        s.execute(params![
            now - now.rem_euclid(THROUGHPUT_BUCKET_S),
            queue,
            completed,
            failed
        ])
    })
    .map_err(db(op))?;
    Ok(())
}

/// Jobs finished per queue within one write, counted once per queue when
/// the write ends ([`Finished::record`]).
#[derive(Default)]
struct Finished {
    /// Queue, completed, failed: a batch rarely spans more than one queue.
    by_queue: Vec<(Arc<str>, u64, u64)>,
}

impl Finished {
    fn add(&mut self, queue: &str, completed: u64, failed: u64) {
        match self.by_queue.iter_mut().find(|(q, _, _)| **q == *queue) {
            Some(entry) => {
                entry.1 += completed;
                entry.2 += failed;
            }
            None => self.by_queue.push((queue.into(), completed, failed)),
        }
    }

    fn record(&self, conn: &Connection, op: &'static str, now: i64) -> Result<()> {
        self.by_queue
            .iter()
            .try_for_each(|(q, c, f)| count_finished(conn, op, now, q, *c, *f))
    }
}

/// How many jobs each queue's last claim found: what the next claim of the
/// queue tells the writer to expect (see `Writer::write_rows`). Only a
/// hint: wrong, it changes which thread runs the claim, never its result.
#[derive(Default)]
pub(crate) struct ClaimSizes(std::sync::Mutex<HashMap<String, usize>>);

impl ClaimSizes {
    /// Rows a claim of `queue` with `limit` should expect: the last claim's
    /// count, at most `limit` (a queue never claimed from: `limit`).
    pub(crate) fn expected(&self, queue: &str, limit: usize) -> usize {
        let sizes = self.0.lock().unwrap_or_else(|p| p.into_inner());
        sizes.get(queue).map_or(limit, |&last| last.min(limit))
    }

    /// A claim of `queue` found `n` jobs.
    pub(crate) fn found(&self, queue: &str, n: usize) {
        let mut sizes = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(last) = sizes.get_mut(queue) {
            *last = n;
            return;
        }
        // Bounded like the queues themselves: a store with more queues than
        // this forgets and starts over (hints only).
        if sizes.len() >= 4_096 {
            sizes.clear();
        }
        sizes.insert(queue.to_owned(), n);
    }
}

/// The queue of each job this writer claimed, until its ack: the ack then
/// deletes with a plain statement and counts it for that queue, where a
/// job claimed elsewhere needs `RETURNING queue` (which costs SQLite an
/// ephemeral table per row: a fifth of the ack path). A job's queue never
/// changes and ids are never reused (see [`JobIds`]), so an entry is never
/// wrong, only possibly stale (a claim that lapsed and was finished
/// elsewhere, or never acked): bounded by clearing the map when it grows
/// past its cap (about 2 MB).
#[derive(Default)]
pub(crate) struct QueueOfJob {
    by_id: HashMap<i64, Arc<str>>,
}

impl QueueOfJob {
    /// More claims than a worker holds at once: past it, start over (the
    /// acks of what was forgotten take the `RETURNING` path).
    const CAP: usize = 1 << 16;

    fn claimed(&mut self, queue: &Arc<str>, ids: impl ExactSizeIterator<Item = i64>) {
        if self.by_id.len() + ids.len() > Self::CAP {
            self.by_id.clear();
        }
        for id in ids {
            self.by_id.insert(id, queue.clone());
        }
    }

    fn take(&mut self, id: i64) -> Option<Arc<str>> {
        self.by_id.remove(&id)
    }
}

/// What one pass over expired rows did.
#[derive(Default)]
struct Rescued {
    expired: u64,
    exhausted: u64,
    rescued: u64,
}

impl Rescued {
    /// Dead-lettered jobs are worth an operator's attention.
    fn log(&self, queue: &str) {
        if self.expired + self.exhausted > 0 {
            tracing::warn!(
                queue,
                expired = self.expired,
                exhausted_or_cancelled = self.exhausted,
                "jobs dead-lettered: pending past their expiry, or claims expired on the last attempt"
            );
        }
    }
}

/// Move pending jobs past their expiry to dead, and hand expired claims back
/// (pending again; dead when out of attempts or when their cancellation was
/// requested), for one queue or (`queue` `None`) every queue.
///
/// Keeping the expiry test out of the claim statement itself matters: a
/// parameter compared with `expires_at` lets SQLite consult the partial
/// expiry index, which makes it re-prepare the claim on every call.
fn rescue_expired(
    conn: &Connection,
    op: &'static str,
    queue: Option<&str>,
    now: i64,
) -> Result<Rescued> {
    let q = "(?1 IS NULL OR queue = ?1)";
    let expired = move_to_dead(
        conn,
        op,
        &format!("{q} AND state = 'pending' AND expires_at IS NOT NULL AND expires_at <= ?2"),
        "'expired'",
        None,
        now,
        &[&queue, &now],
    )?;
    let exhausted = move_to_dead(
        conn,
        op,
        &format!(
            "{q} AND state = 'processing' AND claim_expires_at <= ?2 \
             AND (attempts >= max_attempts OR cancel_requested)"
        ),
        EXHAUSTED_OR_CANCELLED,
        Some("claim expired on the last attempt"),
        now,
        &[&queue, &now],
    )?;
    let rescued = conn
        .prepare_cached(&format!(
            "UPDATE __alkstore_job SET state = 'pending', claim_expires_at = NULL \
             WHERE {q} AND state = 'processing' AND claim_expires_at <= ?2"
        ))
        .and_then(|mut s| s.execute(params![queue, now]))
        .map_err(db(op))? as u64;
    Ok(Rescued {
        expired,
        exhausted,
        rescued,
    })
}

/// The predicate of a valid claim: ?1 id, ?2 worker, ?3 token, ?4 now.
const HELD: &str = "id = ?1 AND state = 'processing' AND worker_id = ?2 AND claim_count = ?3 \
     AND claim_expires_at > ?4";

/// Retry a held job at `now` (backoff, or dead when out of attempts or
/// cancelled); shared by `job_retry` and `job_settle`.
fn retry_in(
    conn: &Connection,
    p: JobRetryParams,
    now: i64,
    finished: &mut Finished,
) -> Result<RetryOutcome> {
    let op = "job_retry";
    let c = &p.claim;
    let error = truncate_error(p.error);
    let row: Option<(u32, u32, i64, bool, String)> = conn
        .prepare_cached(&format!(
            "SELECT attempts, max_attempts, backoff_base_s, cancel_requested, queue \
             FROM __alkstore_job WHERE {HELD}"
        ))
        .and_then(|mut s| {
            s.query_row(params![c.id, c.worker, c.token, now], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })
            .optional()
        })
        .map_err(db(op))?;
    let Some((attempts, max_attempts, base, cancel_requested, queue)) = row else {
        return Ok(RetryOutcome::NotHeld);
    };
    finished.add(&queue, 0, 1);
    if cancel_requested || attempts >= max_attempts {
        move_to_dead(
            conn,
            op,
            "id = ?1",
            EXHAUSTED_OR_CANCELLED,
            Some(&error),
            now,
            &[&c.id],
        )?;
        return Ok(if cancel_requested {
            RetryOutcome::Cancelled
        } else {
            RetryOutcome::Dead
        });
    }
    let delay = match p.delay {
        Some(d) => secs(d),
        None => backoff_delay_s(base, attempts, c.id),
    };
    let run_at = now + delay;
    conn.prepare_cached(&format!(
        "UPDATE __alkstore_job SET state = 'pending', run_at = ?2, claim_expires_at = NULL, \
         last_error = ?3, errors = {} WHERE id = ?1",
        errors_appended("?4", "?3")
    ))
    .and_then(|mut s| s.execute(params![c.id, run_at, error, now]))
    .map_err(db(op))?;
    Ok(RetryOutcome::Scheduled(run_at))
}

/// Move a held job to dead as `failed` (or `cancelled`); false when not held.
fn fail_in(
    conn: &Connection,
    claim: &Claim,
    error: String,
    now: i64,
    finished: &mut Finished,
) -> Result<bool> {
    let error = truncate_error(error);
    let queue: Option<String> = conn
        .prepare_cached(&format!("SELECT queue FROM __alkstore_job WHERE {HELD}"))
        .and_then(|mut s| {
            s.query_row(params![claim.id, claim.worker, claim.token, now], |r| {
                r.get(0)
            })
            .optional()
        })
        .map_err(db("job_fail"))?;
    let Some(queue) = queue else {
        return Ok(false);
    };
    finished.add(&queue, 0, 1);
    let moved = move_to_dead(
        conn,
        "job_fail",
        HELD,
        FAILED_OR_CANCELLED,
        Some(&error),
        now,
        &[&claim.id, &claim.worker, &claim.token, &now],
    )?;
    Ok(moved == 1)
}

/// Put a held job back, due after `delay`, without using an attempt.
fn snooze_in(conn: &Connection, claim: &Claim, delay: Duration, now: i64) -> Result<Option<i64>> {
    let run_at = now + secs(delay);
    let args: [&dyn ToSql; 4] = [&claim.id, &claim.worker, &claim.token, &now];
    let done = hand_back(conn, "job_snooze", HELD, &args, run_at, now)?;
    Ok((done == HandedBack::Pending).then_some(run_at))
}

/// What [`hand_back`] did.
#[derive(PartialEq)]
enum HandedBack {
    /// Pending again.
    Pending,
    /// Its cancellation was requested: moved to dead as `cancelled`.
    Cancelled,
    /// The claim (or processing row) was not there.
    NotHeld,
}

/// Hand a held job back to pending (due at `run_at`) without using an
/// attempt; a job whose cancellation was requested goes to dead instead.
/// `held` selects the row with ?1..?4 as in [`HELD`] (or ?1 alone).
fn hand_back(
    conn: &Connection,
    op: &'static str,
    held: &str,
    args: &[&dyn ToSql],
    run_at: i64,
    now: i64,
) -> Result<HandedBack> {
    let cancelled = move_to_dead(
        conn,
        op,
        &format!("{held} AND cancel_requested"),
        "'cancelled'",
        None,
        now,
        args,
    )?;
    if cancelled > 0 {
        return Ok(HandedBack::Cancelled);
    }
    let n = args.len();
    let mut all: Vec<&dyn ToSql> = args.to_vec();
    all.push(&run_at);
    conn.prepare_cached(&format!(
        "UPDATE __alkstore_job SET state = 'pending', attempts = attempts - 1, run_at = ?{}, \
         claim_expires_at = NULL WHERE {held}",
        n + 1
    ))
    .and_then(|mut s| s.execute(all.as_slice()))
    .map(|n| {
        if n == 1 {
            HandedBack::Pending
        } else {
            HandedBack::NotHeld
        }
    })
    .map_err(db(op))
}

/// Insert validated jobs at `now`, in order, their ids from `ids`
/// (reserving `block` at a time): the writer keeps its block across
/// groups, a transaction of the application's reserves per call (see
/// [`JobIds`]). Shared by the writer and transactions.
pub(crate) fn enqueue_in(
    conn: &Connection,
    jobs: &[NewJob],
    now: i64,
    ids: &mut Option<JobIds>,
    block: i64,
) -> Result<Vec<Enqueued>> {
    jobs.iter()
        .map(|j| insert_job(conn, j, now, ids, block))
        .collect()
}

/// Complete the jobs `claims` still hold at `now` (the [`HELD`]
/// predicate): one `true` per claim held, its job deleted (or kept in
/// `done` when its queue keeps completed jobs) and counted in the
/// throughput table. `queue_of` names the queue of jobs this connection
/// claimed (a transaction passes an empty one). Shared by the writer and
/// transactions.
pub(crate) fn ack_in(
    conn: &Connection,
    claims: &[Claim],
    now: i64,
    queue_of: &mut QueueOfJob,
) -> Result<Vec<bool>> {
    let op = "job_ack";
    // The common ack is one plain delete. Only when it finds nothing (the
    // queue keeps completed jobs, or the claim is gone) does the row get
    // copied to `done` first.
    let delete_sql =
        format!("DELETE FROM __alkstore_job WHERE {HELD} AND keep_completed_s IS NULL");
    let mut delete = conn.prepare_cached(&delete_sql).map_err(db(op))?;
    let mut acked = Vec::with_capacity(claims.len());
    let mut finished = Finished::default();
    for c in claims {
        let args = params![c.id, c.worker, c.token, now];
        let gone: Option<Arc<str>> = match queue_of.take(c.id) {
            Some(queue) => {
                let n = delete.execute(args).map_err(db(op))?;
                (n == 1).then_some(queue)
            }
            None => conn
                .prepare_cached(&format!("{delete_sql} RETURNING queue"))
                .and_then(|mut s| s.query_row(args, |r| r.get::<_, String>(0)).optional())
                .map_err(db(op))?
                .map(Arc::from),
        };
        if let Some(queue) = gone {
            finished.add(&queue, 1, 0);
            acked.push(true);
            continue;
        }
        let kept = conn
            .prepare_cached(&format!(
                "INSERT OR REPLACE INTO __alkstore_done ({MOVE_COLS}, last_error, errors, completed_at) \
                 SELECT {MOVE_COLS}, last_error, errors, ?4 FROM __alkstore_job WHERE {HELD}"
            ))
            .and_then(|mut s| s.execute(args))
            .map_err(db(op))?;
        if kept == 1 {
            let queue: String = conn
                .prepare_cached(&format!(
                    "DELETE FROM __alkstore_job WHERE {HELD} RETURNING queue"
                ))
                .and_then(|mut s| s.query_row(args, |r| r.get(0)))
                .map_err(db(op))?;
            finished.add(&queue, 1, 0);
        }
        acked.push(kept == 1);
    }
    drop(delete);
    finished.record(conn, op, now)?;
    Ok(acked)
}

/// Retry, fail or snooze the jobs the batch's claims still hold at `now`,
/// in order (a claim no longer held: `NotHeld`, `Failed(false)`,
/// `Snoozed(None)`), retries and failures counted in the throughput
/// table. Shared by the writer and transactions.
pub(crate) fn settle_in(conn: &Connection, batch: Vec<Settle>, now: i64) -> Result<Vec<Settled>> {
    let mut finished = Finished::default();
    let outcomes = batch
        .into_iter()
        .map(|s| match s {
            Settle::Retry(p) => retry_in(conn, p, now, &mut finished).map(Settled::Retried),
            Settle::Fail { claim, error } => {
                fail_in(conn, &claim, error, now, &mut finished).map(Settled::Failed)
            }
            Settle::Snooze { claim, delay } => {
                snooze_in(conn, &claim, delay, now).map(Settled::Snoozed)
            }
        })
        .collect::<Result<Vec<_>>>()?;
    finished.record(conn, "job_settle", now)?;
    Ok(outcomes)
}

impl Engine for SqliteEngine {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            name: "sqlite",
            multi_host: false,
            pushes_notifications: false,
        }
    }

    fn limits(&self) -> &Limits {
        &self.inner.opts.limits
    }

    fn wake_hub(&self) -> &WakeHub {
        &self.inner.wake
    }

    fn close(&self) {
        self.inner
            .closed
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    fn is_closed(&self) -> bool {
        self.inner.closed.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn wake_subscribe(&self) -> tokio::sync::broadcast::Receiver<alkstore_core::Wake> {
        self.wake_hints()
    }

    async fn sweep_if_due(&self, params: Checked<SweepParams>) -> Result<Option<SweepReport>> {
        self.sweep_if(params.every.map(secs)).await
    }
}

impl SqliteEngine {
    /// Sweep every queue; with `every_s`, only when no process swept in the
    /// last `every_s` seconds (the mark and the sweep commit together, and
    /// writers are serialized, so one process sweeps per interval).
    async fn sweep_if(&self, every_s: Option<i64>) -> Result<Option<SweepReport>> {
        self.inner
            .writer
            .write("queue_sweep", move |st| {
                let op = "queue_sweep";
                let now = st.clock.now();
                if let Some(every_s) = every_s {
                    let claimed = st
                        .conn
                        .prepare_cached(
                            "INSERT INTO __alkstore_meta (key, value) VALUES ('last_sweep_at', ?1) \
                             ON CONFLICT (key) DO UPDATE SET value = excluded.value \
                             WHERE __alkstore_meta.value <= ?1 - ?2",
                        )
                        .and_then(|mut s| s.execute(params![now, every_s]))
                        .map_err(db(op))?;
                    if claimed == 0 {
                        return Ok(None);
                    }
                }
                let r = rescue_expired(&st.conn, op, None, now)?;
                let prune = |sql: &str| -> Result<u64> {
                    st.conn
                        .prepare_cached(sql)
                        .and_then(|mut s| s.execute([now]))
                        .map(|n| n as u64)
                        .map_err(db(op))
                };
                let dead_pruned = prune(
                    "DELETE FROM __alkstore_dead WHERE dead_letter_retention_s IS NOT NULL \
                     AND died_at + dead_letter_retention_s <= ?1",
                )?;
                let completed_pruned = prune(
                    "DELETE FROM __alkstore_done WHERE completed_at + keep_completed_s <= ?1",
                )?;
                fold_throughput(&st.conn, op, now)?;
                let events_trimmed = crate::streams::trim_retained(&st.conn, op, now)?;
                Ok(Some(SweepReport {
                    expired: r.expired,
                    rescued: r.rescued,
                    exhausted: r.exhausted,
                    dead_pruned,
                    completed_pruned,
                    events_trimmed,
                }))
            })
            .await
    }
}

/// Fold throughput buckets past the retention into bucket 0, one row per
/// queue: the totals stay whole, the table stays small.
fn fold_throughput(conn: &Connection, op: &'static str, now: i64) -> Result<()> {
    let cutoff = now - secs(THROUGHPUT_RETENTION);
    // `WHERE true`: SQLite's rule for an upsert whose source is a SELECT.
    conn.prepare_cached(
        "INSERT INTO __alkstore_queue_throughput (bucket, queue, shard, completed, failed) \
         SELECT 0, queue, 0, sum(completed), sum(failed) FROM __alkstore_queue_throughput \
         WHERE bucket > 0 AND bucket <= ?1 GROUP BY queue \
         ON CONFLICT (bucket, queue, shard) DO UPDATE \
         SET completed = completed + excluded.completed, failed = failed + excluded.failed",
    )
    .and_then(|mut s| s.execute([cutoff]))
    .map_err(db(op))?;
    conn.prepare_cached(
        "DELETE FROM __alkstore_queue_throughput WHERE bucket > 0 AND bucket <= ?1",
    )
    .and_then(|mut s| s.execute([cutoff]))
    .map_err(db(op))?;
    Ok(())
}

impl QueueDriver for SqliteEngine {
    async fn job_enqueue(&self, params: Checked<JobEnqueueParams>) -> Result<Vec<Enqueued>> {
        let JobEnqueueParams { jobs } = params.into_inner();
        let jobs_len = jobs.len();
        let insert = move |st: &mut WriterState| {
            let now = st.clock.now();
            enqueue_in(&st.conn, &jobs, now, &mut st.job_ids, JOB_ID_BLOCK)
        };
        let writer = &self.inner.writer;
        // One job is one INSERT (after, at times, the reservation of a
        // block of ids): SQLite's statement atomicity suffices. A failed
        // INSERT leaves the reservation in the group, which is harmless: the
        // block in memory is the one the file records.
        if jobs_len == 1 {
            writer.write_one_statement("job_enqueue", insert).await
        } else {
            writer.write_rows("job_enqueue", jobs_len, insert).await
        }
    }

    async fn job_enqueue_claimed(
        &self,
        params: Checked<JobEnqueueClaimedParams>,
    ) -> Result<EnqueuedClaimed> {
        let op = "job_enqueue_claimed";
        let JobEnqueueClaimedParams { job, worker } = params.into_inner();
        // The insert, then the claim of the new row alone when nothing is
        // ahead of it (see `QueueDriver::job_enqueue_claimed`): one
        // savepoint, so both or neither.
        let (enqueued, rows, job, worker) = self
            .inner
            .writer
            .write_rows(op, 1, move |st| {
                let now = st.clock.now();
                let enqueued = insert_job(&st.conn, &job, now, &mut st.job_ids, JOB_ID_BLOCK)?;
                // A keyed job (maybe a duplicate) is left pending.
                let id = match enqueued {
                    Enqueued::Inserted(id) if job.opts.unique_key.is_none() => id,
                    _ => return Ok((enqueued, ClaimedRows::default(), job, worker)),
                };
                let rows = st
                    .conn
                    .prepare_cached(
                        "UPDATE __alkstore_job SET state = 'processing', attempts = attempts + 1, \
                           claim_count = claim_count + 1, worker_id = ?1, claimed_at = ?2, \
                           claim_expires_at = ?2 + visibility_timeout_s \
                         WHERE id = ?3 AND run_at <= ?2 \
                           AND NOT EXISTS (SELECT 1 FROM __alkstore_queue_pause WHERE queue = ?4) \
                           AND NOT EXISTS (SELECT 1 FROM __alkstore_job WHERE queue = ?4 \
                             AND state = 'pending' AND run_at <= ?2 AND id <> ?3 \
                             AND (expires_at IS NULL OR expires_at > ?2)) \
                         RETURNING id, payload, priority, attempts, max_attempts, claim_expires_at, \
                           run_at, created_at, unique_key, claimed_at, claim_count",
                    )
                    .and_then(|mut s| {
                        s.query(params![worker, now, id, job.queue])
                            .and_then(ClaimedRows::read)
                    })
                    .map_err(db(op))?;
                if rows.len() > 0 {
                    st.queue_of.claimed(&Arc::from(job.queue.as_str()), rows.ids());
                }
                Ok((enqueued, rows, job, worker))
            })
            .await?;
        Ok(EnqueuedClaimed {
            enqueued,
            claimed: rows.into_jobs(&job.queue, &worker).pop(),
        })
    }

    async fn job_claim(&self, params: Checked<JobClaimParams>) -> Result<Vec<Job>> {
        let p = params.into_inner();
        // A claim writes as many rows as it finds, not its limit: expect as
        // many as this queue's last claim found, so that an idle worker's
        // claims (one job each, or none) stay short writes on the caller's
        // thread, and a busy one's go to the writer's own thread.
        let limit = usize::try_from(p.limit).unwrap_or(usize::MAX);
        let expected = self.inner.claim_sizes.expected(&p.queue, limit);
        let inner = self.inner.clone();
        self.inner
            .writer
            .write_rows("job_claim", expected, move |st| {
                let now = st.clock.now();
                if st.rescues.due(&p.queue, Some(now)) {
                    let r = rescue_expired(&st.conn, "job_claim", Some(&p.queue), now);
                    match r {
                        Ok(r) => r.log(&p.queue),
                        Err(e) => {
                            st.rescues.forget(&p.queue);
                            return Err(e);
                        }
                    }
                }
                // `LIMIT (SELECT ?4)`, not `LIMIT ?4`: SQLite re-prepares a
                // statement on every call when a bound LIMIT feeds its planner.
                let mut stmt = st
                    .conn
                    .prepare_cached(
                        "UPDATE __alkstore_job SET state = 'processing', attempts = attempts + 1, \
                           claim_count = claim_count + 1, worker_id = ?1, claimed_at = ?2, \
                           claim_expires_at = ?2 + visibility_timeout_s \
                         WHERE id IN (SELECT id FROM __alkstore_job \
                           WHERE queue = ?3 AND state = 'pending' AND run_at <= ?2 \
                             AND NOT EXISTS (SELECT 1 FROM __alkstore_queue_pause WHERE queue = ?3) \
                           ORDER BY priority DESC, run_at, id LIMIT (SELECT ?4)) \
                         RETURNING id, payload, priority, attempts, max_attempts, claim_expires_at, \
                           run_at, created_at, unique_key, claimed_at, claim_count",
                    )
                    .map_err(db("job_claim"))?;
                let rows = stmt
                    .query(params![p.worker, now, p.queue, p.limit])
                    .and_then(ClaimedRows::read);
                let rows = match rows {
                    Ok(rows) => rows,
                    Err(e) => {
                        st.rescues.forget(&p.queue);
                        return Err(db("job_claim")(e));
                    }
                };
                if rows.len() > 0 {
                    st.queue_of.claimed(&Arc::from(p.queue.as_str()), rows.ids());
                }
                inner.claim_sizes.found(&p.queue, rows.len());
                Ok((rows, p))
            })
            .await
            .map(|(rows, p)| rows.into_jobs(&p.queue, &p.worker))
    }

    async fn job_ack(&self, params: Checked<JobAckParams>) -> Result<Vec<bool>> {
        let JobAckParams { claims } = params.into_inner();
        self.inner
            .writer
            .write_rows("job_ack", claims.len(), move |st| {
                let now = st.clock.now();
                let acked = ack_in(&st.conn, &claims, now, &mut st.queue_of)?;
                // The claims go back to be freed where they were made (see
                // `ClaimedRows`).
                Ok((acked, claims))
            })
            .await
            .map(|(acked, _claims)| acked)
    }

    async fn job_settle(&self, params: Checked<JobSettleParams>) -> Result<Settlement> {
        let JobSettleParams { batch } = params.into_inner();
        self.inner
            .writer
            .write_rows("job_settle", batch.len(), move |st| {
                let now = st.clock.now();
                let outcomes = settle_in(&st.conn, batch, now)?;
                let claimable_now = outcomes.iter().any(|o| match o {
                    Settled::Retried(RetryOutcome::Scheduled(t)) | Settled::Snoozed(Some(t)) => {
                        *t <= now
                    }
                    _ => false,
                });
                Ok(Settlement {
                    outcomes,
                    claimable_now,
                })
            })
            .await
    }

    async fn job_heartbeat(&self, params: Checked<JobHeartbeatParams>) -> Result<Option<i64>> {
        let JobHeartbeatParams { claim } = params.into_inner();
        self.inner
            .writer
            .write("job_heartbeat", move |st| {
                let now = st.clock.now();
                st.conn
                    .prepare_cached(&format!(
                        "UPDATE __alkstore_job SET claim_expires_at = ?4 + visibility_timeout_s \
                         WHERE {HELD} RETURNING claim_expires_at"
                    ))
                    .and_then(|mut s| {
                        s.query_row(params![claim.id, claim.worker, claim.token, now], |r| {
                            r.get(0)
                        })
                        .optional()
                    })
                    .map_err(db("job_heartbeat"))
            })
            .await
    }

    async fn job_release(&self, params: Checked<JobReleaseParams>) -> Result<bool> {
        let JobReleaseParams { claim } = params.into_inner();
        self.inner
            .writer
            .write("job_release", move |st| {
                let now = st.clock.now();
                let args: [&dyn ToSql; 4] = [&claim.id, &claim.worker, &claim.token, &now];
                hand_back(&st.conn, "job_release", HELD, &args, now, now)
                    .map(|h| h != HandedBack::NotHeld)
            })
            .await
    }

    async fn job_cancel_requests(
        &self,
        params: Checked<JobCancelRequestsParams>,
    ) -> Result<Vec<i64>> {
        let JobCancelRequestsParams { ids } = params.into_inner();
        let list = format!(
            "[{}]",
            ids.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
        );
        self.read("job_cancel_requests", move |conn| {
            conn.prepare_cached(
                "SELECT id FROM __alkstore_job WHERE id IN (SELECT value FROM json_each(?1)) \
                 AND state = 'processing' AND cancel_requested",
            )
            .and_then(|mut s| s.query_map([&list], |r| r.get(0))?.collect())
            .map_err(db("job_cancel_requests"))
        })
        .await
    }

    async fn job_unclaim(&self, params: Checked<JobUnclaimParams>) -> Result<bool> {
        let JobUnclaimParams { id } = params.into_inner();
        self.inner
            .writer
            .write("job_unclaim", move |st| {
                let now = st.clock.now();
                let held = "id = ?1 AND state = 'processing'";
                hand_back(&st.conn, "job_unclaim", held, &[&id], now, now)
                    .map(|h| h != HandedBack::NotHeld)
            })
            .await
    }

    async fn job_cancel(&self, params: Checked<JobCancelParams>) -> Result<CancelOutcome> {
        let JobCancelParams { id } = params.into_inner();
        self.inner
            .writer
            .write("job_cancel", move |st| {
                let op = "job_cancel";
                let now = st.clock.now();
                let moved = move_to_dead(
                    &st.conn,
                    op,
                    "id = ?1 AND state = 'pending'",
                    "'cancelled'",
                    None,
                    now,
                    &[&id],
                )?;
                if moved == 1 {
                    return Ok(CancelOutcome::Cancelled);
                }
                let flagged = st
                    .conn
                    .prepare_cached(
                        "UPDATE __alkstore_job SET cancel_requested = 1 \
                         WHERE id = ?1 AND state = 'processing'",
                    )
                    .and_then(|mut s| s.execute([id]))
                    .map_err(db(op))?;
                Ok(if flagged == 1 {
                    CancelOutcome::Requested
                } else {
                    CancelOutcome::NotFound
                })
            })
            .await
    }

    async fn job_get(&self, params: Checked<JobGetParams>) -> Result<Option<JobInfo>> {
        let JobGetParams { id } = params.into_inner();
        self.read("job_get", move |conn| {
            for (table, source) in [
                ("__alkstore_job", Source::Live),
                ("__alkstore_dead", Source::Dead),
                ("__alkstore_done", Source::Done),
            ] {
                let found = conn
                    .prepare_cached(&format!(
                        "SELECT {JOB_COLS}, {} FROM {table} WHERE id = ?1",
                        source.extra_cols()
                    ))
                    .and_then(|mut s| s.query_row([id], |r| job_info(r, source)).optional())
                    .map_err(db("job_get"))?;
                if found.is_some() {
                    return Ok(found);
                }
            }
            Ok(None)
        })
        .await
    }

    async fn queue_stats(&self, params: Checked<QueueStatsParams>) -> Result<QueueStats> {
        let QueueStatsParams { queue } = params.into_inner();
        let now = self.now();
        self.read("queue_stats", move |conn| {
            let op = "queue_stats";
            let live: [Option<i64>; 6] = conn
                .prepare_cached(
                    "SELECT COALESCE(SUM(state = 'pending' AND run_at <= ?2 \
                              AND (expires_at IS NULL OR expires_at > ?2)), 0), \
                            COALESCE(SUM(state = 'pending' AND run_at > ?2 \
                              AND (expires_at IS NULL OR expires_at > ?2)), 0), \
                            COALESCE(SUM(state = 'pending' AND expires_at <= ?2), 0), \
                            COALESCE(SUM(state = 'processing' AND claim_expires_at > ?2), 0), \
                            COALESCE(SUM(state = 'processing' AND claim_expires_at <= ?2), 0), \
                            MIN(CASE WHEN state = 'pending' AND run_at <= ?2 \
                              AND (expires_at IS NULL OR expires_at > ?2) THEN run_at END) \
                     FROM __alkstore_job WHERE queue = ?1",
                )
                .and_then(|mut s| {
                    s.query_row(params![queue, now], |r| {
                        Ok([
                            r.get(0)?,
                            r.get(1)?,
                            r.get(2)?,
                            r.get(3)?,
                            r.get(4)?,
                            r.get(5)?,
                        ])
                    })
                })
                .map_err(db(op))?;
            let rows_in = |table: &str| -> Result<u64> {
                conn.prepare_cached(&format!("SELECT COUNT(*) FROM {table} WHERE queue = ?1"))
                    .and_then(|mut s| s.query_row([&queue], |r| r.get::<_, i64>(0)))
                    .map(count)
                    .map_err(db(op))
            };
            let (dead, completed) = (rows_in("__alkstore_dead")?, rows_in("__alkstore_done")?);
            let n = |i: usize| count(live[i].unwrap_or(0));
            Ok(QueueStats {
                ready: n(0),
                scheduled: n(1),
                expired: n(2),
                processing: n(3),
                expired_claims: n(4),
                dead,
                completed,
                oldest_ready_age_s: live[5].map(|t| (now - t).max(0)),
                queue,
            })
        })
        .await
    }

    async fn job_list(&self, params: Checked<JobListParams>) -> Result<Vec<JobInfo>> {
        let p = params.into_inner();
        // Kept completed jobs live in their own table (no state column);
        // live jobs filter on state when one is asked for.
        let (table, source, state_filter) = if p.state == Some(JobState::Completed) {
            ("__alkstore_done", Source::Done, "?2 IS NULL")
        } else {
            ("__alkstore_job", Source::Live, "(?2 IS NULL OR state = ?2)")
        };
        let state = match p.state {
            Some(JobState::Pending | JobState::Processing) => p.state.map(|s| s.as_str()),
            _ => None,
        };
        self.read("job_list", move |conn| {
            conn.prepare_cached(&format!(
                "SELECT {JOB_COLS}, {extra} FROM {table} \
                 WHERE (?1 IS NULL OR queue = ?1) AND {state_filter} AND id > ?3 \
                 ORDER BY id LIMIT (SELECT ?4)",
                extra = source.extra_cols(),
            ))
            .and_then(|mut s| {
                s.query_map(
                    params![p.queue, state, p.after_id.unwrap_or(i64::MIN), p.limit],
                    |r| job_info(r, source),
                )?
                .collect()
            })
            .map_err(db("job_list"))
        })
        .await
    }

    async fn queue_throughput(
        &self,
        params: Checked<QueueThroughputParams>,
    ) -> Result<QueueThroughput> {
        let now = self.now();
        let since = now - params.window_s();
        let QueueThroughputParams { queue, .. } = params.into_inner();
        self.read("queue_throughput", move |conn| {
            let op = "queue_throughput";
            let buckets = conn
                .prepare_cached(
                    "SELECT bucket, queue, completed, failed FROM __alkstore_queue_throughput \
                     WHERE bucket > ?1 AND (?2 IS NULL OR queue = ?2) ORDER BY bucket, queue",
                )
                .and_then(|mut s| {
                    s.query_map(params![since, queue], |r| {
                        Ok(ThroughputBucket {
                            start: r.get(0)?,
                            queue: r.get(1)?,
                            completed: count(r.get(2)?),
                            failed: count(r.get(3)?),
                        })
                    })?
                    .collect::<rusqlite::Result<Vec<_>>>()
                })
                .map_err(db(op))?;
            let totals = conn
                .prepare_cached(
                    "SELECT queue, sum(completed), sum(failed) FROM __alkstore_queue_throughput \
                     WHERE ?1 IS NULL OR queue = ?1 GROUP BY queue ORDER BY queue",
                )
                .and_then(|mut s| {
                    s.query_map(params![queue], |r| {
                        Ok(QueueTotals {
                            queue: r.get(0)?,
                            completed: count(r.get(1)?),
                            failed: count(r.get(2)?),
                        })
                    })?
                    .collect::<rusqlite::Result<Vec<_>>>()
                })
                .map_err(db(op))?;
            Ok(QueueThroughput {
                now,
                buckets,
                totals,
            })
        })
        .await
    }

    async fn queue_list(&self) -> Result<Vec<String>> {
        self.read("queue_list", |conn| {
            conn.prepare_cached(
                "SELECT DISTINCT queue FROM __alkstore_job UNION SELECT DISTINCT queue FROM __alkstore_dead \
                 UNION SELECT DISTINCT queue FROM __alkstore_done \
                 UNION SELECT DISTINCT queue FROM __alkstore_queue_throughput WHERE bucket > 0 ORDER BY 1",
            )
            .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
            .map_err(db("queue_list"))
        })
        .await
    }

    async fn queue_set_paused(
        &self,
        params: Checked<QueuePauseParams>,
        paused: bool,
    ) -> Result<bool> {
        let p = params.into_inner();
        self.inner
            .writer
            .write("queue_set_paused", move |st| {
                let changed = if paused {
                    st.conn
                        .prepare_cached(
                            "INSERT INTO __alkstore_queue_pause (queue, paused_at) VALUES (?1, ?2) \
                             ON CONFLICT (queue) DO NOTHING",
                        )
                        .and_then(|mut s| s.execute(params![p.queue, st.clock.now()]))
                } else {
                    st.conn
                        .prepare_cached("DELETE FROM __alkstore_queue_pause WHERE queue = ?1")
                        .and_then(|mut s| s.execute([&p.queue]))
                };
                changed.map(|n| n > 0).map_err(db("queue_set_paused"))
            })
            .await
    }

    async fn queue_paused(&self) -> Result<Vec<String>> {
        self.read("queue_paused", |conn| {
            conn.prepare_cached("SELECT queue FROM __alkstore_queue_pause ORDER BY queue")
                .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
                .map_err(db("queue_paused"))
        })
        .await
    }

    async fn dead_list(&self, params: Checked<DeadListParams>) -> Result<Vec<JobInfo>> {
        let p = params.into_inner();
        self.read("dead_list", move |conn| {
            conn.prepare_cached(&format!(
                "SELECT {JOB_COLS}, reason, died_at FROM __alkstore_dead \
                 WHERE (?1 IS NULL OR queue = ?1) AND id > ?2 ORDER BY id LIMIT (SELECT ?3)"
            ))
            .and_then(|mut s| {
                s.query_map(
                    params![p.queue, p.after_id.unwrap_or(i64::MIN), p.limit],
                    |r| job_info(r, Source::Dead),
                )?
                .collect()
            })
            .map_err(db("dead_list"))
        })
        .await
    }

    async fn dead_requeue(&self, params: Checked<DeadRequeueParams>) -> Result<u64> {
        let sel = params.into_inner();
        self.inner
            .writer
            .write("dead_requeue", move |st| {
                let op = "dead_requeue";
                let now = st.clock.now();
                let ids = selected_dead_ids(&st.conn, &sel, true)?;
                let mut insert = st
                    .conn
                    .prepare_cached(
                        "INSERT INTO __alkstore_job (id, queue, payload, priority, run_at, attempts, \
                           max_attempts, created_at, visibility_timeout_s, backoff_base_s, \
                           dead_letter_retention_s, unique_key, last_error, errors, claim_count, \
                           keep_completed_s) \
                         SELECT id, queue, payload, priority, ?2, 0, max_attempts, created_at, \
                           visibility_timeout_s, backoff_base_s, dead_letter_retention_s, unique_key, \
                           last_error, errors, claim_count, keep_completed_s \
                         FROM __alkstore_dead WHERE id = ?1 \
                         ON CONFLICT DO NOTHING",
                    )
                    .map_err(db(op))?;
                let mut delete = st
                    .conn
                    .prepare_cached("DELETE FROM __alkstore_dead WHERE id = ?1")
                    .map_err(db(op))?;
                let mut n = 0;
                for id in ids {
                    if insert.execute(params![id, now]).map_err(db(op))? == 1 {
                        delete.execute([id]).map_err(db(op))?;
                        n += 1;
                    }
                }
                Ok(n)
            })
            .await
    }

    async fn dead_purge(&self, params: Checked<DeadPurgeParams>) -> Result<u64> {
        let sel = params.into_inner();
        self.inner
            .writer
            .write("dead_purge", move |st| {
                let ids = selected_dead_ids(&st.conn, &sel, false)?;
                let mut delete = st
                    .conn
                    .prepare_cached("DELETE FROM __alkstore_dead WHERE id = ?1")
                    .map_err(db("dead_purge"))?;
                let mut n = 0;
                for id in ids {
                    n += delete.execute([id]).map_err(db("dead_purge"))? as u64;
                }
                Ok(n)
            })
            .await
    }

    async fn dead_count(&self, params: Checked<DeadCountParams>) -> Result<u64> {
        let sel = DeadSelect {
            limit: None,
            ..params.into_inner()
        };
        self.read("dead_count", move |conn| {
            if sel.ids.is_some() {
                return Ok(selected_dead_ids(conn, &sel, false)?.len() as u64);
            }
            conn.prepare_cached(
                "SELECT COUNT(*) FROM __alkstore_dead WHERE (?1 IS NULL OR queue = ?1)",
            )
            .and_then(|mut s| s.query_row([&sel.queue], |r| r.get::<_, i64>(0)))
            .map(count)
            .map_err(db("dead_count"))
        })
        .await
    }
}

/// The dead-letter ids `sel` names, lowest first, at most `sel.limit`.
/// With `requeueable`, only those whose unique key no live job holds, so a
/// batch never comes back empty while later rows could still be requeued.
fn selected_dead_ids(conn: &Connection, sel: &DeadSelect, requeueable: bool) -> Result<Vec<i64>> {
    let op = "dead_select";
    let limit = sel.limit.map(i64::from).unwrap_or(i64::MAX);
    let free = if requeueable {
        "AND (d.unique_key IS NULL OR NOT EXISTS (SELECT 1 FROM __alkstore_job j \
           WHERE j.queue = d.queue AND j.unique_key = d.unique_key))"
    } else {
        ""
    };
    match &sel.ids {
        None => conn
            .prepare_cached(&format!(
                "SELECT id FROM __alkstore_dead d WHERE (?1 IS NULL OR queue = ?1) {free} \
                 ORDER BY id LIMIT (SELECT ?2)"
            ))
            .and_then(|mut s| {
                s.query_map(params![sel.queue, limit], |r| r.get(0))?
                    .collect()
            })
            .map_err(db(op)),
        Some(ids) => {
            let mut wanted = ids.clone();
            wanted.sort_unstable();
            wanted.dedup();
            let mut exists = conn
                .prepare_cached(&format!(
                    "SELECT EXISTS (SELECT 1 FROM __alkstore_dead d WHERE id = ?1 \
                     AND (?2 IS NULL OR queue = ?2) {free})"
                ))
                .map_err(db(op))?;
            let mut out = Vec::new();
            for id in wanted {
                if i64::try_from(out.len()).unwrap_or(i64::MAX) >= limit {
                    break;
                }
                if exists
                    .query_row(params![id, sel.queue], |r| r.get::<_, bool>(0))
                    .map_err(db(op))?
                {
                    out.push(id);
                }
            }
            Ok(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ClaimSizes;

    /// A claim expects what its queue's last claim found, never more than
    /// its limit; a queue never claimed from, its limit; queues apart.
    #[test]
    fn claims_expect_what_their_queue_last_found() {
        let sizes = ClaimSizes::default();
        assert_eq!(sizes.expected("a", 500), 500);
        sizes.found("a", 1);
        sizes.found("b", 400);
        assert_eq!(sizes.expected("a", 500), 1);
        assert_eq!(sizes.expected("b", 500), 400);
        assert_eq!(sizes.expected("b", 100), 100);
        sizes.found("a", 0);
        assert_eq!(sizes.expected("a", 500), 0);
        // Past its bound the map starts over rather than growing.
        for q in 0..5_000 {
            sizes.found(&format!("q{q}"), 7);
        }
        assert!(sizes.0.lock().expect("sizes").len() <= 4_096);
        assert_eq!(sizes.expected("q4999", 500), 7);
    }
}
