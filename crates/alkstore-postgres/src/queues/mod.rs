//! The queue area on PostgreSQL: its operations (here), statement texts
//! (`sql.rs`) and row shapes (`rows.rs`).

mod rows;
pub(crate) mod sql;

use std::collections::{BTreeMap, HashMap, HashSet};

use std::time::Duration;

use alkstore_core::queue::{secs, truncate_error};
use alkstore_core::queue::{
    DeadCountParams, DeadPurgeParams, DeadRequeueParams, EnqueuedClaimed, JobAckParams,
    JobCancelParams, JobCancelRequestsParams, JobEnqueueClaimedParams, JobEnqueueParams,
    JobGetParams, JobHeartbeatParams, JobReleaseParams, JobSettleParams, JobUnclaimParams,
    QueuePauseParams, QueueStatsParams, QueueThroughput, QueueThroughputParams, QueueTotals,
    ThroughputBucket, THROUGHPUT_RETENTION,
};
use alkstore_core::validate::{self, count};
use alkstore_core::{
    backoff_delay_s, CancelOutcome, Capabilities, Checked, DeadListParams, Engine, Enqueued, Error,
    Job, JobClaimParams, JobInfo, JobListParams, JobRetryParams, JobState, Limits, NewJob,
    QueueDriver, QueueStats, Result, RetryOutcome, Settle, Settled, Settlement, SweepParams,
    SweepReport, WakeHub,
};
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

use crate::announce::Wakes;
use crate::conn::{fetch_opt, Exec, Param, Params};
use crate::{db, PgEngine};
use rows::{claimed, job_info, Columns, Source};
use sql::{SettleSql, Sql};

/// Throughput counts the engine's own transaction owes the queues whose
/// jobs it finished, by queue: (completed, failed). Counted after its
/// commit ([`PgEngine::count_throughput`]) rather than in each settle
/// statement, whose counter row would otherwise stay locked until then:
/// other workers' acks on that row's shard would wait for the commit, and
/// two transactions settling jobs of two queues in opposite orders could
/// deadlock.
#[derive(Debug, Default)]
pub(crate) struct Tally(std::sync::Mutex<BTreeMap<String, (i64, i64)>>);

impl Tally {
    /// Count the finished jobs `rows` name (their queue in column `col`)
    /// as completed, or as failed.
    fn add(&self, rows: &[crate::conn::Row], col: usize, completed: bool) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let mut counts = self.0.lock().unwrap_or_else(|p| p.into_inner());
        for r in rows {
            let entry = counts.entry(r.get::<String>(col)?).or_default();
            if completed {
                entry.0 += 1;
            } else {
                entry.1 += 1;
            }
        }
        Ok(())
    }

    /// Everything counted so far, by queue; the tally is empty after.
    pub(crate) fn take(&self) -> BTreeMap<String, (i64, i64)> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// The settle statements to run: counting in the statement, or (with a
/// tally) leaving the count to the caller.
fn settles<'s>(sql: &'s Sql, tally: Option<&Tally>) -> &'s SettleSql {
    match tally {
        Some(_) => &sql.uncounted,
        None => &sql.counted,
    }
}

/// Count `rows` in `tally`, if there is one (see [`Tally::add`]).
fn tally_rows(
    tally: Option<&Tally>,
    rows: &[crate::conn::Row],
    col: usize,
    completed: bool,
) -> Result<()> {
    tally.map_or(Ok(()), |t| t.add(rows, col, completed))
}

impl PgEngine {
    /// Add what `tally` counted to the throughput table, on `client` (the
    /// connection of a transaction that just committed, in its shard):
    /// one statement, best effort. A failure is logged and the counts are
    /// lost; the jobs' outcomes are not.
    pub(crate) async fn count_throughput<E: Exec + ?Sized>(&self, client: &E, tally: &Tally) {
        let counts = tally.take();
        if counts.is_empty() {
            return;
        }
        let mut queues = Vec::with_capacity(counts.len());
        let (mut completed, mut failed) = (Vec::new(), Vec::new());
        for (queue, (c, f)) in counts {
            queues.push(queue);
            completed.push(c);
            failed.push(f);
        }
        let now = self.now_override();
        let counted = client
            .exec(
                "tx_commit",
                &self.inner.sql.throughput_add,
                &[&now, &queues, &completed, &failed],
            )
            .await;
        if let Err(e) = counted {
            tracing::warn!(
                error = %e,
                queues = ?queues,
                "counting a committed transaction's jobs in the throughput table failed"
            );
        }
    }
}

/// Whether a batch needs the unique-key statement.
pub(crate) fn is_keyed(jobs: &[NewJob]) -> bool {
    jobs.iter().any(|j| j.opts.unique_key.is_some())
}

/// A keyed enqueue met a holder that committed and finished during it; the
/// key is free now, so running the enqueue again succeeds.
fn key_race() -> Error {
    Error::Conflict {
        op: "job_enqueue",
        reason: "a job holding the same unique key finished during this enqueue".into(),
    }
}

/// Whether every job of a batch (of two or more) differs only in payload.
pub(crate) fn is_uniform(jobs: &[NewJob]) -> bool {
    let Some((first, rest)) = jobs.split_first() else {
        return false;
    };
    !rest.is_empty()
        && first.opts.unique_key.is_none()
        && rest.iter().all(|j| {
            j.queue == first.queue
                && j.opts.priority == first.opts.priority
                && j.opts.run_at == first.opts.run_at
                && j.delay_s() == first.delay_s()
                && j.max_attempts() == first.max_attempts()
                && j.opts.expires_in == first.opts.expires_in
                && j.opts.unique_key.is_none()
                && j.queue_opts == first.queue_opts
        })
}

/// The scalar parameters of `Sql::enqueue_one` and `Sql::enqueue_uniform`
/// (`$1`–`$13`), drawn from one job; `Sql::enqueue_claimed` adds `$14`.
struct OneRow<'a> {
    job: &'a NewJob,
    priority: i64,
    max_attempts: i64,
    expires_in: Option<i64>,
    delay: i64,
    visibility: i64,
    backoff: i64,
    retention: Option<i64>,
    keep: Option<i64>,
}

impl<'a> OneRow<'a> {
    fn of(job: &'a NewJob) -> Self {
        OneRow {
            job,
            priority: i64::from(job.opts.priority),
            max_attempts: i64::from(job.max_attempts()),
            expires_in: job.opts.expires_in.map(secs),
            delay: job.delay_s(),
            visibility: job.visibility_timeout_s(),
            backoff: job.backoff_base_s(),
            retention: job.dead_letter_retention_s(),
            keep: job.keep_completed_s(),
        }
    }

    fn params<'b>(
        &'b self,
        now: &'b Option<i64>,
        payload: &'b dyn Param,
        channel: &'b &'b str,
    ) -> [&'b dyn Param; 13] {
        [
            now,
            &self.job.queue,
            &self.priority,
            &self.job.opts.run_at,
            &self.delay,
            &self.max_attempts,
            &self.expires_in,
            &self.visibility,
            &self.backoff,
            &self.retention,
            payload,
            &self.keep,
            channel,
        ]
    }
}

/// Insert a uniform batch (see [`is_uniform`]) with the one-array statement
/// (`Sql::enqueue_uniform`), or one job with `Sql::enqueue_one`.
async fn insert_uniform<E: Exec + ?Sized>(
    e: &E,
    text: &str,
    jobs: Vec<NewJob>,
    now: Option<i64>,
    channel: &str,
) -> Result<Vec<Enqueued>> {
    let op = "job_enqueue";
    let n = jobs.len();
    let Some(first) = jobs.first().cloned() else {
        return Ok(Vec::new());
    };
    let payloads: Vec<Vec<u8>> = jobs.into_iter().map(|j| j.payload).collect();
    // One job: `Sql::enqueue_one`, whose payload is a scalar.
    let payload_param: &dyn Param = match &payloads[..] {
        [one] => one,
        _ => &payloads,
    };
    let row = OneRow::of(&first);
    let params = row.params(&now, payload_param, &channel);
    let rows = e.fetch(op, text, &params).await?;
    inserted_in_order(&rows, n)
}

/// Insert validated jobs on `e` (a pooled connection, the engine's
/// transaction, or the application's own) with the fastest statement for
/// the batch. A keyed batch may take a second statement: on an autocommit
/// connection, run it inside a transaction to keep it all or none (a key
/// holder that finished meanwhile is [`Error::Conflict`]: run it again).
pub(crate) async fn enqueue_in<E: Exec + ?Sized>(
    e: &E,
    sql: &Sql,
    jobs: Vec<NewJob>,
    now: Option<i64>,
    wakes: Wakes,
) -> Result<Vec<Enqueued>> {
    let keyed = is_keyed(&jobs);
    let channel = wakes.channel(&sql.channel);
    if jobs.len() == 1 && !keyed {
        insert_uniform(e, &sql.enqueue_one, jobs, now, channel).await
    } else if is_uniform(&jobs) {
        insert_uniform(e, &sql.enqueue_uniform, jobs, now, channel).await
    } else {
        insert_jobs(e, enqueue_text(sql, keyed), sql, jobs, now, wakes).await
    }
}

/// The enqueue statement text for a batch.
pub(crate) fn enqueue_text(sql: &Sql, keyed: bool) -> &str {
    if keyed {
        &sql.enqueue_unique
    } else {
        &sql.enqueue_plain
    }
}

/// Insert validated jobs on `e` with `text`, the statement of
/// [`enqueue_text`]`(sql, is_keyed(&jobs))`.
pub(crate) async fn insert_jobs<E: Exec + ?Sized>(
    e: &E,
    text: &str,
    sql: &Sql,
    jobs: Vec<NewJob>,
    now: Option<i64>,
    wakes: Wakes,
) -> Result<Vec<Enqueued>> {
    let op = "job_enqueue";
    let n = jobs.len();
    let keyed = is_keyed(&jobs);
    let channel = wakes.channel(&sql.channel);
    let c = Columns::new(jobs);
    let mut params: Vec<&dyn Param> = vec![
        &now,
        &c.queue,
        &c.payload,
        &c.priority,
        &c.run_at,
        &c.delay_s,
        &c.max_attempts,
        &c.expires_in,
        &c.vis,
        &c.backoff,
        &c.retention,
        &c.unique_key,
        &c.keep,
    ];
    if !keyed {
        params.push(&channel);
        let rows = e.fetch(op, text, &params).await?;
        return inserted_in_order(&rows, n);
    }
    params.push(&sql.job_seq);
    params.push(&channel);
    let rows = e.fetch(op, text, &params).await?;
    let mut out = Vec::with_capacity(n);
    for (i, r) in rows.iter().enumerate() {
        let id: Option<i64> = r.get(1)?;
        let inserted: bool = r.get(2)?;
        out.push(match (id, inserted) {
            (Some(id), true) => Enqueued::Inserted(id),
            (Some(id), false) => Enqueued::Duplicate(id),
            (None, _) => {
                // The job holding the key committed after this statement's
                // snapshot: a new statement (a new snapshot under READ
                // COMMITTED) sees it.
                let holder =
                    fetch_opt(e, op, &sql.unique_holder, &[&c.queue[i], &c.unique_key[i]]).await?;
                match holder {
                    Some(h) => Enqueued::Duplicate(h.get(0)?),
                    // Held and already finished in the meantime: the
                    // caller's transaction is rolled back by this error.
                    None => return Err(key_race()),
                }
            }
        });
    }
    Ok(out)
}

impl PgEngine {
    /// Run a cached statement on a pooled connection (every area's reads
    /// and single-statement writes).
    pub(crate) async fn query(
        &self,
        op: &'static str,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>> {
        query_on(&self.client().await?, op, sql, params).await
    }

    /// Run a statement whose commit need not wait for its WAL flush (claims,
    /// acks, heartbeats) when `relaxed_commits` is on, on a connection whose
    /// session has `synchronous_commit = off`. Such a commit
    /// can only be lost to a server crash, and losing it is harmless: a lost
    /// claim or heartbeat makes the job claimable again and its first
    /// worker's ack is refused; a lost ack makes the job run again once its
    /// claim expires. Both are the at-least-once outcome of a worker dying.
    pub(crate) async fn query_relaxed(
        &self,
        op: &'static str,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>> {
        query_on(&self.relaxed_client().await?, op, sql, params).await
    }

    async fn execute(
        &self,
        op: &'static str,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64> {
        let client = self.client().await?;
        let stmt = client.prepare_cached(sql).await.map_err(db(op))?;
        client.execute(&stmt, params).await.map_err(db(op))
    }
}

/// Run a cached statement on a pooled connection.
async fn query_on(
    client: &deadpool_postgres::Object,
    op: &'static str,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<Row>> {
    let stmt = client.prepare_cached(sql).await.map_err(db(op))?;
    client.query(&stmt, params).await.map_err(db(op))
}

/// The ids an unkeyed insert returned, in input order (ids are drawn in
/// input order, `RETURNING` has none).
fn inserted_in_order(rows: &[crate::conn::Row], n: usize) -> Result<Vec<Enqueued>> {
    let mut ids: Vec<i64> = rows.iter().map(|r| r.get(0)).collect::<Result<_>>()?;
    ids.sort_unstable();
    if ids.len() != n {
        return Err(Error::database(
            "job_enqueue",
            "the insert returned fewer ids than jobs",
        ));
    }
    Ok(ids.into_iter().map(Enqueued::Inserted).collect())
}

/// The distinct queues of a batch, in the order first seen (a batch
/// seldom spans more than one).
fn queues_of(jobs: &[NewJob]) -> Vec<String> {
    let mut queues: Vec<String> = Vec::new();
    for j in jobs {
        if !queues.contains(&j.queue) {
            queues.push(j.queue.clone());
        }
    }
    queues
}

/// Calls of `job_enqueue` waiting to be written together.
pub(crate) type EnqueueGroup = crate::combine::Combiner<Vec<NewJob>, Vec<Enqueued>>;

impl PgEngine {
    /// Write `batch`, then whatever gathered meanwhile, until nobody waits.
    async fn enqueue_runner(self, batch: crate::combine::Batch<Vec<NewJob>, Vec<Enqueued>>) {
        let group = self.inner.enqueues.clone();
        crate::combine::run(group, batch, "job_enqueue", |jobs| async {
            let queues = queues_of(&jobs);
            let client = self.client().await?;
            let now = self.now_override();
            let out = enqueue_in(&*client, &self.inner.sql, jobs, now, Wakes::AfterCommit).await?;
            self.announce_queues(&queues, &out);
            Ok(out)
        })
        .await;
    }

    /// Ask for other processes' workers of `queues` to be woken, once an
    /// autocommit enqueue committed, unless it inserted nothing (every job
    /// a duplicate of a live one).
    fn announce_queues(&self, queues: &[String], out: &[Enqueued]) {
        if out.iter().any(|e| matches!(e, Enqueued::Inserted(_))) {
            for q in queues {
                self.inner.announce.queue(q);
            }
        }
    }

    /// Run the hand-back statement (release, snooze, unclaim): `Some(Some(t))`
    /// pending again due at `t`, `Some(None)` buried as cancelled, `None`
    /// when nothing was held.
    async fn hand_back(
        &self,
        op: &'static str,
        text: &str,
        id: i64,
        holder: Option<(&str, i64)>,
        delay_s: i64,
    ) -> Result<Option<Option<i64>>> {
        let now = self.now_override();
        let channel = crate::schema::notify_channel(self.schema());
        let (worker, token) = (holder.map(|h| h.0), holder.map(|h| h.1));
        let rows = self
            .query(op, text, &[&now, &id, &worker, &token, &delay_s, &channel])
            .await?;
        Ok(rows.first().map(|r| r.get::<_, Option<i64>>(0)))
    }
}

/// Retry a held job inside `tx` (backoff, or dead when out of attempts or
/// cancelled), for a settle batch's lone retry (`job_retry` is one) or one
/// of a batch that settles a claim twice. Also returns the database's time
/// when the claim was held.
async fn retry_in<E: Exec + ?Sized>(
    tx: &E,
    sql: &Sql,
    now: Option<i64>,
    p: JobRetryParams,
    tally: Option<&Tally>,
) -> Result<(RetryOutcome, Option<i64>)> {
    let op = "job_retry";
    let (id, token) = (p.claim.id, p.claim.token);
    let error = truncate_error(p.error);
    let row = fetch_opt(
        tx,
        op,
        &sql.retry_select,
        &[&now, &id, &p.claim.worker, &token],
    )
    .await?;
    let Some(row) = row else {
        return Ok((RetryOutcome::NotHeld, None));
    };
    let held = HeldForRetry {
        attempts: row.get(0)?,
        max_attempts: row.get(1)?,
        backoff_base_s: row.get(2)?,
        db_now: row.get(3)?,
        cancel_requested: row.get(4)?,
    };
    let outcome = held.outcome(id, p.delay);
    // Both check the claim again: on a bare client (`within`) the select's
    // row lock ended with it, and the job may have been rescued and
    // claimed anew since.
    let st = settles(sql, tally);
    let (worker, token) = (&p.claim.worker, &token);
    let rows = match outcome {
        RetryOutcome::Scheduled(run_at) => {
            tx.fetch(
                op,
                &st.retry_update,
                &[&now, &run_at, &error, &id, worker, token],
            )
            .await?
        }
        _ => {
            tx.fetch(op, &st.retry_bury, &[&now, &id, &error, worker, token])
                .await?
        }
    };
    if rows.is_empty() {
        return Ok((RetryOutcome::NotHeld, None));
    }
    tally_rows(tally, &rows, 0, false)?;
    Ok((outcome, Some(held.db_now)))
}

/// A held job's row as a retry reads it (`retry_select`, `retry_many_select`).
#[derive(Clone, Copy)]
struct HeldForRetry {
    attempts: i64,
    max_attempts: i64,
    backoff_base_s: i64,
    /// The database's time when the claim was found held.
    db_now: i64,
    cancel_requested: bool,
}

impl HeldForRetry {
    /// What retrying job `id` does: to dead when cancelled or out of
    /// attempts, else scheduled after `delay` (or the queue's backoff).
    fn outcome(&self, id: i64, delay: Option<Duration>) -> RetryOutcome {
        if self.cancel_requested {
            return RetryOutcome::Cancelled;
        }
        if self.attempts >= self.max_attempts {
            return RetryOutcome::Dead;
        }
        let delay = match delay {
            Some(d) => secs(d),
            None => backoff_delay_s(self.backoff_base_s, validate::attempts(self.attempts), id),
        };
        RetryOutcome::Scheduled(self.db_now + delay)
    }
}

/// One outcome of a settle batch, in its transaction; and whether it made
/// its job claimable now.
async fn settle_in<E: Exec + ?Sized>(
    tx: &E,
    sql: &Sql,
    now: Option<i64>,
    settle: Settle,
    tally: Option<&Tally>,
) -> Result<(Settled, bool)> {
    Ok(match settle {
        Settle::Retry(p) => {
            let (outcome, db_now) = retry_in(tx, sql, now, p, tally).await?;
            let due_now = matches!(outcome, RetryOutcome::Scheduled(t) if Some(t) <= db_now);
            (Settled::Retried(outcome), due_now)
        }
        Settle::Fail { claim, error } => (
            Settled::Failed(fail_in(tx, sql, now, &claim, error, tally).await?),
            false,
        ),
        Settle::Snooze { claim, delay } => {
            let due = snooze_in(tx, sql, now, &claim, delay).await?;
            // Due at the database's now plus the delay: now when zero.
            let due_now = due.is_some() && delay.is_zero();
            (Settled::Snoozed(due), due_now)
        }
    })
}

/// Settle a batch inside `tx` (the engine's own transaction for a batch,
/// or the application's): each outcome, and whether it made its job
/// claimable now. A claim no longer held is a not-held outcome, never an
/// error; the rows settled stay locked until `tx` ends, so no rescue or
/// claim takes them meanwhile (both skip locked rows). With a `tally`, the
/// retries and failures are counted there instead of in the throughput
/// table (see [`Tally`]).
pub(crate) async fn settle_all_in<E: Exec + ?Sized>(
    tx: &E,
    sql: &Sql,
    now: Option<i64>,
    batch: Vec<Settle>,
    tally: Option<&Tally>,
) -> Result<Vec<(Settled, bool)>> {
    let op = "job_settle";
    // Outcomes for different jobs are independent: run them at once,
    // so the connection pipelines their statements (a round trip per
    // step of the batch, not per statement: a retry is two). Each job's
    // own statements still run in order. Two outcomes for one job run
    // one after the other, as the second must see what the first did.
    let distinct = {
        let mut seen = HashSet::with_capacity(batch.len());
        batch.iter().all(|s| seen.insert(s.claim().id))
    };
    if !distinct {
        let mut settled = Vec::with_capacity(batch.len());
        for s in batch {
            settled.push(settle_in(tx, sql, now, s, tally).await?);
        }
        return Ok(settled);
    }
    // Two retries or more as a set (three statements for all of
    // them); a lone retry, the failures and the snoozes a statement
    // or two each, with scalar parameters. All pipelined.
    let as_set = batch
        .iter()
        .filter(|s| matches!(s, Settle::Retry(_)))
        .count()
        >= 2;
    tx.warm(op, &settle_statements(sql, &batch, as_set, tally))
        .await?;
    let (mut retries, mut retry_at, mut others, mut other_at) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (i, s) in batch.into_iter().enumerate() {
        match s {
            Settle::Retry(p) if as_set => {
                retries.push(p);
                retry_at.push(i);
            }
            other => {
                others.push(settle_in(tx, sql, now, other, tally));
                other_at.push(i);
            }
        }
    }
    let n = retry_at.len() + other_at.len();
    let (retried, others) = futures_util::future::join(
        retry_many_in(tx, sql, now, retries, tally),
        futures_util::future::join_all(others),
    )
    .await;
    let (retried, others) = first_cause(retried, others)?;
    let mut slots: Vec<Option<(Settled, bool)>> = (0..n).map(|_| None).collect();
    for (i, (outcome, due_now)) in retry_at.into_iter().zip(retried) {
        slots[i] = Some((Settled::Retried(outcome), due_now));
    }
    for (i, done) in other_at.into_iter().zip(others) {
        slots[i] = Some(done);
    }
    slots
        .into_iter()
        .map(|s| s.ok_or_else(|| Error::database(op, "a settle outcome went missing")))
        .collect()
}

/// A settle batch's retries, of distinct jobs, in three statements: lock
/// and read the held rows, then schedule some and bury the rest (both
/// pipelined). Each comes out as its single `retry_in` would have it, with
/// whether it is due now.
async fn retry_many_in<E: Exec + ?Sized>(
    tx: &E,
    sql: &Sql,
    now: Option<i64>,
    retries: Vec<JobRetryParams>,
    tally: Option<&Tally>,
) -> Result<Vec<(RetryOutcome, bool)>> {
    let op = "job_retry";
    if retries.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<i64> = retries.iter().map(|p| p.claim.id).collect();
    let held = sql::held_claims(retries.iter().map(|p| &p.claim));
    let rows = tx
        .fetch(op, &sql.retry_many_select, &[&now, &ids, &held])
        .await?;
    let mut found: HashMap<i64, HeldForRetry> = HashMap::with_capacity(rows.len());
    for r in &rows {
        let held = HeldForRetry {
            attempts: r.get(1)?,
            max_attempts: r.get(2)?,
            backoff_base_s: r.get(3)?,
            db_now: r.get(4)?,
            cancel_requested: r.get(5)?,
        };
        found.insert(r.get(0)?, held);
    }
    let (mut back_ids, mut back_due, mut back_errors, mut back_held) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut dead_ids, mut dead_errors, mut dead_held) = (Vec::new(), Vec::new(), Vec::new());
    let mut outcomes = Vec::with_capacity(retries.len());
    for (p, claim) in retries.into_iter().zip(held) {
        let id = p.claim.id;
        let Some(found) = found.get(&id) else {
            outcomes.push((id, RetryOutcome::NotHeld, false));
            continue;
        };
        let error = truncate_error(p.error);
        let outcome = found.outcome(id, p.delay);
        match outcome {
            RetryOutcome::Scheduled(run_at) => {
                back_ids.push(id);
                back_due.push(run_at);
                back_errors.push(error);
                back_held.push(claim);
            }
            _ => {
                dead_ids.push(id);
                dead_errors.push(error);
                dead_held.push(claim);
            }
        }
        outcomes.push((
            id,
            outcome,
            matches!(outcome, RetryOutcome::Scheduled(t) if t <= found.db_now),
        ));
    }
    // Both pipelined; a statement with no rows to write is not sent. Both
    // check the claims again (see `retry_in`).
    let st = settles(sql, tally);
    let (back, dead): (&Params<'_>, &Params<'_>) = (
        &[&now, &back_ids, &back_due, &back_errors, &back_held],
        &[&now, &dead_ids, &dead_errors, &dead_held],
    );
    let schedule = fetch_if(tx, !back_ids.is_empty(), &st.retry_many_update, back);
    let bury = fetch_if(tx, !dead_ids.is_empty(), &st.retry_many_bury, dead);
    let (back, dead) = futures_util::future::try_join(schedule, bury).await?;
    let mut done = HashSet::with_capacity(back.len() + dead.len());
    for r in back.iter().chain(&dead) {
        done.insert(r.get::<i64>(0)?);
    }
    tally_rows(tally, &back, 1, false)?;
    tally_rows(tally, &dead, 1, false)?;
    Ok(outcomes
        .into_iter()
        .map(|(id, outcome, due_now)| {
            if done.contains(&id) {
                (outcome, due_now)
            } else {
                (RetryOutcome::NotHeld, false)
            }
        })
        .collect())
}

/// The results of a settle batch's pipelined statements, or the error that
/// ended the transaction: once one statement fails, PostgreSQL answers the
/// statements after it with 25P02 ("current transaction is aborted"), which
/// says nothing of the cause.
fn first_cause<A, B>(a: Result<A>, mut b: Vec<Result<B>>) -> Result<(A, Vec<B>)> {
    let aborted = |e: &Error| e.to_string().contains("SQLSTATE 25P02");
    if !matches!(&a, Err(e) if !aborted(e)) {
        if let Some(i) = b.iter().position(|r| matches!(r, Err(e) if !aborted(e))) {
            b.swap_remove(i)?;
        }
    }
    let a = a?;
    Ok((a, b.into_iter().collect::<Result<_>>()?))
}

/// Run the retry statement `text` with `params` when `needed`; its rows.
async fn fetch_if<E: Exec + ?Sized>(
    tx: &E,
    needed: bool,
    text: &str,
    params: &Params<'_>,
) -> Result<Vec<crate::conn::Row>> {
    if !needed {
        return Ok(Vec::new());
    }
    tx.fetch("job_retry", text, params).await
}

/// The statements `batch` uses when its jobs are distinct, once each, to
/// prepare before its outcomes run at once.
fn settle_statements<'s>(
    sql: &'s Sql,
    batch: &[Settle],
    retries_as_set: bool,
    tally: Option<&Tally>,
) -> Vec<&'s str> {
    let st = settles(sql, tally);
    let mut texts: Vec<&str> = Vec::new();
    for s in batch {
        let needs: [&str; 3] = match s {
            Settle::Retry(_) if retries_as_set => [
                &sql.retry_many_select,
                &st.retry_many_update,
                &st.retry_many_bury,
            ],
            Settle::Retry(_) => [&sql.retry_select, &st.retry_update, &st.retry_bury],
            Settle::Fail { .. } => [&st.fail, "", ""],
            Settle::Snooze { .. } => [&sql.hand_back, "", ""],
        };
        for text in needs {
            if !text.is_empty() && !texts.contains(&text) {
                texts.push(text);
            }
        }
    }
    texts
}

/// Move a held job to dead as `failed` on `e` (a connection or a
/// transaction); false when the claim is not held.
async fn fail_in<E: Exec + ?Sized>(
    e: &E,
    sql: &Sql,
    now: Option<i64>,
    claim: &alkstore_core::Claim,
    error: String,
    tally: Option<&Tally>,
) -> Result<bool> {
    let error = truncate_error(error);
    let rows = e
        .fetch(
            "job_fail",
            &settles(sql, tally).fail,
            &[&now, &claim.id, &claim.worker, &claim.token, &error],
        )
        .await?;
    tally_rows(tally, &rows, 1, false)?;
    Ok(rows.len() == 1)
}

/// Snooze a held job on `e`: its new due time, or `None` when the claim
/// is not held (or the job was cancelled and is now dead).
async fn snooze_in<E: Exec + ?Sized>(
    e: &E,
    sql: &Sql,
    now: Option<i64>,
    claim: &alkstore_core::Claim,
    delay: Duration,
) -> Result<Option<i64>> {
    let row = fetch_opt(
        e,
        "job_snooze",
        &sql.hand_back,
        &[
            &now,
            &claim.id,
            &Some(claim.worker.clone()),
            &Some(claim.token),
            &secs(delay),
            &sql.channel,
        ],
    )
    .await?;
    match row {
        Some(r) => r.get::<Option<i64>>(0),
        None => Ok(None),
    }
}

/// Complete the jobs `claims` hold on `e` (the relaxed connection of an
/// autocommit ack, or a transaction): one flag per claim, true when it was
/// still held and its job is now done (deleted, or copied to `done` when
/// its queue keeps completed jobs). A deleted row stays locked until `e`'s
/// transaction ends, so nobody claims or rescues it meanwhile. With a
/// `tally`, the jobs are counted there instead of in the throughput table
/// (see [`Tally`]).
pub(crate) async fn ack_in<E: Exec + ?Sized>(
    e: &E,
    sql: &Sql,
    now: Option<i64>,
    claims: &[alkstore_core::Claim],
    tally: Option<&Tally>,
) -> Result<Vec<bool>> {
    let op = "job_ack";
    let st = settles(sql, tally);
    let mut flags = vec![false; claims.len()];
    // The statement looks each row's claim up by its id, so one
    // statement takes each id once; a batch that names an id twice (two
    // claims of one job) takes several rounds.
    let mut pending: Vec<usize> = (0..claims.len()).collect();
    while !pending.is_empty() {
        let mut seen = HashSet::new();
        let (round, rest): (Vec<usize>, Vec<usize>) = pending
            .into_iter()
            .partition(|&i| seen.insert(claims[i].id));
        // The plain delete first; what it left is either kept by its
        // queue (copied to `done`) or no longer held.
        let mut todo = round;
        // One claim: the scalar statement (see `Sql::ack_one`) stands in
        // for the plain delete.
        let one = todo.len() == 1;
        if let [i] = todo[..] {
            let c = &claims[i];
            let rows = e
                .fetch(op, &st.ack_one, &[&now, &c.id, &c.worker, &c.token])
                .await?;
            tally_rows(tally, &rows, 1, true)?;
            if !rows.is_empty() {
                flags[i] = true;
                todo.clear();
            }
        }
        for text in [&st.ack, &st.ack_kept].into_iter().skip(usize::from(one)) {
            if todo.is_empty() {
                break;
            }
            let ids: Vec<i64> = todo.iter().map(|&i| claims[i].id).collect();
            let held = sql::held_claims(todo.iter().map(|&i| &claims[i]));
            let rows = e.fetch(op, text, &[&now, &ids, &held]).await?;
            tally_rows(tally, &rows, 1, true)?;
            let acked: HashSet<i64> = rows.iter().map(|r| r.get(0)).collect::<Result<_>>()?;
            todo.retain(|&i| {
                flags[i] = acked.contains(&claims[i].id);
                !flags[i]
            });
        }
        pending = rest;
    }
    Ok(flags)
}

impl Engine for PgEngine {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            name: "postgres",
            multi_host: true,
            pushes_notifications: true,
        }
    }

    fn limits(&self) -> &Limits {
        &self.inner.opts.limits
    }

    fn wake_hub(&self) -> &WakeHub {
        &self.inner.wake
    }

    async fn flush(&self) {
        self.inner.announce.flush().await;
    }

    fn close(&self) {
        self.inner
            .closed
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.inner.pool.close();
        if let Some(pool) = &self.inner.relaxed_pool {
            pool.close();
        }
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

    async fn reclaim(&self) -> Result<u64> {
        let op = "reclaim";
        if self.is_closed() {
            return Err(Error::Closed);
        }
        let client = self.client().await?;
        // The statistics collector's counts (flushed by backends about once
        // a second): cheap, and close enough to decide.
        let row = client
            .query_one(&self.inner.sql.job_tuples, &[&self.inner.sql.job_table])
            .await
            .map_err(db(op))?;
        let (live, dead): (i64, i64) = (row.get(0), row.get(1));
        if dead < 50_000 || dead < 2 * live {
            return Ok(0);
        }
        // SKIP_LOCKED: when autovacuum (or another worker) is already at it,
        // leave it be. VACUUM cannot run inside a transaction: one statement.
        client
            .batch_execute(&self.inner.sql.vacuum_job)
            .await
            .map_err(db(op))?;
        tracing::debug!(live, dead, "vacuumed the job table");
        Ok(1)
    }
}

impl PgEngine {
    /// Sweep every queue; with `every_s`, only when nobody swept in the last
    /// `every_s` seconds of the database's clock (the mark row is locked and
    /// re-checked by a concurrent sweeper, so one sweeps per interval).
    async fn sweep_if(&self, every_s: Option<i64>) -> Result<Option<SweepReport>> {
        let op = "queue_sweep";
        let sql = &self.inner.sql;
        let now = self.now_override();
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(db(op))?;
        if let Some(every_s) = every_s {
            let mark = tx.prepare_cached(&sql.sweep_mark).await.map_err(db(op))?;
            if tx.execute(&mark, &[&now, &every_s]).await.map_err(db(op))? == 0 {
                return Ok(None);
            }
        }
        let sweep = tx.prepare_cached(&sql.sweep).await.map_err(db(op))?;
        let r = tx.query_one(&sweep, &[&now]).await.map_err(db(op))?;
        let (expired, exhausted, rescued): (i64, i64, i64) = (r.get(0), r.get(1), r.get(2));
        let mut pruned = [0u64; 2];
        for (i, text) in [&sql.sweep_prune_dead, &sql.sweep_prune_done]
            .into_iter()
            .enumerate()
        {
            let stmt = tx.prepare_cached(text).await.map_err(db(op))?;
            pruned[i] = tx.execute(&stmt, &[&now]).await.map_err(db(op))?;
        }
        let fold = tx
            .prepare_cached(&sql.sweep_fold_throughput)
            .await
            .map_err(db(op))?;
        let retention = secs(THROUGHPUT_RETENTION);
        tx.execute(&fold, &[&now, &retention])
            .await
            .map_err(db(op))?;
        let trim = tx
            .prepare_cached(&self.inner.stream_sql.sweep_trim)
            .await
            .map_err(db(op))?;
        let events_trimmed: i64 = tx.query_one(&trim, &[&now]).await.map_err(db(op))?.get(0);
        tx.commit().await.map_err(db(op))?;
        Ok(Some(SweepReport {
            events_trimmed: count(events_trimmed),
            expired: count(expired),
            rescued: count(rescued),
            exhausted: count(exhausted),
            dead_pruned: pruned[0],
            completed_pruned: pruned[1],
        }))
    }
}

impl QueueDriver for PgEngine {
    async fn job_enqueue(&self, params: Checked<JobEnqueueParams>) -> Result<Vec<Enqueued>> {
        let JobEnqueueParams { jobs } = params.into_inner();
        let op = "job_enqueue";
        let bytes = jobs.iter().map(|j| j.payload.len()).sum();
        if !is_keyed(&jobs) && crate::combine::groupable(jobs.len(), bytes) {
            // Written with whatever other calls are waiting (see
            // `crate::combine`).
            let rows = jobs.len();
            return crate::combine::submit(&self.inner.enqueues, jobs, rows, op, |batch| {
                tokio::spawn(self.clone().enqueue_runner(batch));
            })
            .await;
        }
        let mut client = self.client().await?;
        let sql = &self.inner.sql;
        let now = self.now_override();
        // Other processes' workers are woken after the commit (see
        // `crate::announce`).
        let queues = queues_of(&jobs);
        if !is_keyed(&jobs) {
            let out = enqueue_in(&*client, sql, jobs, now, Wakes::AfterCommit).await?;
            self.announce_queues(&queues, &out);
            return Ok(out);
        }
        // Keyed batches may need a second statement (see `insert_jobs`):
        // one transaction keeps the batch all or nothing. A holder that
        // finished mid-way freed its key: run the batch again.
        let mut tries = 0;
        loop {
            tries += 1;
            let tx = client.transaction().await.map_err(db(op))?;
            match enqueue_in(&tx, sql, jobs.clone(), now, Wakes::AfterCommit).await {
                Ok(out) => {
                    tx.commit().await.map_err(db(op))?;
                    self.announce_queues(&queues, &out);
                    return Ok(out);
                }
                Err(Error::Conflict { .. }) if tries < 5 => {
                    tx.rollback().await.map_err(db(op))?;
                }
                Err(e) => return Err(e),
            }
        }
    }

    async fn job_enqueue_claimed(
        &self,
        params: Checked<JobEnqueueClaimedParams>,
    ) -> Result<EnqueuedClaimed> {
        let op = "job_enqueue_claimed";
        let JobEnqueueClaimedParams { job, worker } = params.into_inner();
        if job.opts.unique_key.is_some() {
            // A keyed job may be a duplicate: the keyed insert, left pending.
            let plain = Checked::new(vec![job], self.limits())?;
            let enqueued = QueueDriver::job_enqueue(self, plain)
                .await?
                .pop()
                .ok_or_else(|| Error::database(op, "the insert returned no id"))?;
            return Ok(EnqueuedClaimed {
                enqueued,
                claimed: None,
            });
        }
        let client = self.client().await?;
        let sql = &self.inner.sql;
        let stmt = client
            .prepare_cached(&sql.enqueue_claimed)
            .await
            .map_err(db(op))?;
        let now = self.now_override();
        let channel = Wakes::AfterCommit.channel(&sql.channel);
        let one = OneRow::of(&job);
        let mut params: Vec<&(dyn ToSql + Sync)> = one
            .params(&now, &job.payload, &channel)
            .iter()
            .map(|p| p.as_tokio())
            .collect();
        params.push(&worker);
        let row = client.query_one(&stmt, &params).await.map_err(db(op))?;
        let is_claimed: bool = row.get(11);
        if !is_claimed {
            self.inner.announce.queue(&job.queue);
        }
        Ok(EnqueuedClaimed {
            enqueued: Enqueued::Inserted(row.get(0)),
            claimed: is_claimed.then(|| claimed(&row, &job.queue, &worker)),
        })
    }

    async fn job_claim(&self, params: Checked<JobClaimParams>) -> Result<Vec<Job>> {
        let p = params.into_inner();
        let now = self.now_override();
        let sql = &self.inner.sql;
        if self.rescue_due(&p.queue) {
            match self
                .query("job_claim", &sql.rescue, &[&now, &p.queue])
                .await
            {
                Ok(rows) => {
                    if let Some(r) = rows.first() {
                        let (expired, exhausted): (i64, i64) = (r.get(0), r.get(1));
                        if expired + exhausted > 0 {
                            tracing::warn!(
                                queue = %p.queue,
                                expired,
                                exhausted_or_cancelled = exhausted,
                                "jobs dead-lettered: pending past their expiry, or claims expired on the last attempt"
                            );
                        }
                    }
                }
                Err(e) => {
                    self.forget_rescue(&p.queue);
                    return Err(e);
                }
            }
        }
        let limit = i64::from(p.limit);
        let rows = self
            .query_relaxed(
                "job_claim",
                &sql.claim,
                &[&now, &p.queue, &p.worker, &limit],
            )
            .await?;
        let mut jobs: Vec<Job> = rows
            .iter()
            .map(|r| claimed(r, &p.queue, &p.worker))
            .collect();
        jobs.sort_by(Job::claim_order);
        Ok(jobs)
    }

    async fn job_ack(&self, params: Checked<JobAckParams>) -> Result<Vec<bool>> {
        let JobAckParams { claims } = params.into_inner();
        let client = self.relaxed_client().await?;
        ack_in(
            &*client,
            &self.inner.sql,
            self.now_override(),
            &claims,
            None,
        )
        .await
    }

    async fn job_settle(&self, params: Checked<JobSettleParams>) -> Result<Settlement> {
        let JobSettleParams { mut batch } = params.into_inner();
        let op = "job_settle";
        let sql = &self.inner.sql;
        let now = self.now_override();
        let mut client = self.client().await?;
        // A failure or snooze alone is one statement: no transaction needed.
        let settled = if batch.len() == 1 && !matches!(batch[0], Settle::Retry(_)) {
            vec![settle_in(&*client, sql, now, batch.remove(0), None).await?]
        } else {
            // One transaction, one WAL flush for the whole batch.
            let tx = client.transaction().await.map_err(db(op))?;
            let settled = settle_all_in(&tx, sql, now, batch, None).await?;
            tx.commit().await.map_err(db(op))?;
            settled
        };
        let claimable_now = settled.iter().any(|(_, now)| *now);
        Ok(Settlement {
            outcomes: settled.into_iter().map(|(outcome, _)| outcome).collect(),
            claimable_now,
        })
    }

    async fn job_heartbeat(&self, params: Checked<JobHeartbeatParams>) -> Result<Option<i64>> {
        let JobHeartbeatParams { claim } = params.into_inner();
        let now = self.now_override();
        let rows = self
            .query_relaxed(
                "job_heartbeat",
                &self.inner.sql.heartbeat,
                &[&now, &claim.id, &claim.worker, &claim.token],
            )
            .await?;
        Ok(rows.first().map(|r| r.get(0)))
    }

    async fn job_release(&self, params: Checked<JobReleaseParams>) -> Result<bool> {
        let JobReleaseParams { claim } = params.into_inner();
        let out = self
            .hand_back(
                "job_release",
                &self.inner.sql.hand_back,
                claim.id,
                Some((&claim.worker, claim.token)),
                0,
            )
            .await?;
        Ok(out.is_some())
    }

    async fn job_cancel_requests(
        &self,
        params: Checked<JobCancelRequestsParams>,
    ) -> Result<Vec<i64>> {
        let JobCancelRequestsParams { ids } = params.into_inner();
        let rows = self
            .query(
                "job_cancel_requests",
                &self.inner.sql.cancel_requests,
                &[&ids],
            )
            .await?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    async fn job_unclaim(&self, params: Checked<JobUnclaimParams>) -> Result<bool> {
        let JobUnclaimParams { id } = params.into_inner();
        let out = self
            .hand_back("job_unclaim", &self.inner.sql.unclaim, id, None, 0)
            .await?;
        Ok(out.is_some())
    }

    async fn job_cancel(&self, params: Checked<JobCancelParams>) -> Result<CancelOutcome> {
        let JobCancelParams { id } = params.into_inner();
        let now = self.now_override();
        let rows = self
            .query("job_cancel", &self.inner.sql.cancel, &[&now, &id])
            .await?;
        let r = rows
            .first()
            .ok_or_else(|| Error::database("job_cancel", "no row"))?;
        let (cancelled, flagged): (i64, i64) = (r.get(0), r.get(1));
        Ok(if cancelled > 0 {
            CancelOutcome::Cancelled
        } else if flagged > 0 {
            CancelOutcome::Requested
        } else {
            CancelOutcome::NotFound
        })
    }

    async fn job_get(&self, params: Checked<JobGetParams>) -> Result<Option<JobInfo>> {
        let JobGetParams { id } = params.into_inner();
        let sql = &self.inner.sql;
        for (text, source) in [
            (&sql.get_live, Source::Live),
            (&sql.get_dead, Source::Dead),
            (&sql.get_done, Source::Done),
        ] {
            let rows = self.query("job_get", text, &[&id]).await?;
            if let Some(r) = rows.first() {
                return Ok(Some(job_info(r, source)));
            }
        }
        Ok(None)
    }

    async fn job_list(&self, params: Checked<JobListParams>) -> Result<Vec<JobInfo>> {
        let p = params.into_inner();
        let (text, source, state) = match p.state {
            Some(JobState::Completed) => (&self.inner.sql.list_done, Source::Done, None),
            s => (
                &self.inner.sql.list_live,
                Source::Live,
                s.map(|s| s.as_str()),
            ),
        };
        let after = p.after_id.unwrap_or(i64::MIN);
        let limit = i64::from(p.limit);
        let rows = self
            .query("job_list", text, &[&p.queue, &state, &after, &limit])
            .await?;
        Ok(rows.iter().map(|r| job_info(r, source)).collect())
    }

    async fn queue_stats(&self, params: Checked<QueueStatsParams>) -> Result<QueueStats> {
        let QueueStatsParams { queue } = params.into_inner();
        let now = self.now_override();
        let rows = self
            .query("queue_stats", &self.inner.sql.stats, &[&now, &queue])
            .await?;
        let r = rows
            .first()
            .ok_or_else(|| Error::database("queue_stats", "no row"))?;
        let n = |i: usize| count(r.get(i));
        let db_now: i64 = r.get(8);
        let oldest: Option<i64> = r.get(5);
        Ok(QueueStats {
            ready: n(0),
            scheduled: n(1),
            expired: n(2),
            processing: n(3),
            expired_claims: n(4),
            dead: n(6),
            completed: n(7),
            oldest_ready_age_s: oldest.map(|t| (db_now - t).max(0)),
            queue,
        })
    }

    async fn queue_throughput(
        &self,
        params: Checked<QueueThroughputParams>,
    ) -> Result<QueueThroughput> {
        let op = "queue_throughput";
        let window_s = params.window_s();
        let QueueThroughputParams { queue, .. } = params.into_inner();
        let now = self.now_override();
        let sql = &self.inner.sql;
        let totals = self
            .query(op, &sql.throughput_totals, &[&now, &queue])
            .await?;
        let buckets = self
            .query(op, &sql.throughput_buckets, &[&now, &window_s, &queue])
            .await?;
        Ok(QueueThroughput {
            now: totals
                .first()
                .map(|r| r.get(0))
                .ok_or_else(|| Error::database(op, "no row"))?,
            buckets: buckets
                .iter()
                .map(|r| ThroughputBucket {
                    start: r.get(0),
                    queue: r.get(1),
                    completed: count(r.get(2)),
                    failed: count(r.get(3)),
                })
                .collect(),
            totals: totals
                .iter()
                .filter_map(|r| {
                    Some(QueueTotals {
                        queue: r.get::<_, Option<String>>(1)?,
                        completed: count(r.get::<_, Option<i64>>(2)?),
                        failed: count(r.get::<_, Option<i64>>(3)?),
                    })
                })
                .collect(),
        })
    }

    async fn queue_list(&self) -> Result<Vec<String>> {
        let rows = self
            .query("queue_list", &self.inner.sql.queue_list, &[])
            .await?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    async fn queue_set_paused(
        &self,
        params: Checked<QueuePauseParams>,
        paused: bool,
    ) -> Result<bool> {
        let p = params.into_inner();
        let client = self.client().await?;
        let now = self.now_override();
        let n = if paused {
            client
                .execute(&self.inner.sql.queue_pause, &[&now, &p.queue])
                .await
        } else {
            client
                .execute(&self.inner.sql.queue_resume, &[&p.queue])
                .await
        }
        .map_err(db("queue_set_paused"))?;
        Ok(n > 0)
    }

    async fn queue_paused(&self) -> Result<Vec<String>> {
        let rows = self
            .query("queue_paused", &self.inner.sql.queue_paused, &[])
            .await?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    async fn dead_list(&self, params: Checked<DeadListParams>) -> Result<Vec<JobInfo>> {
        let p = params.into_inner();
        let after = p.after_id.unwrap_or(i64::MIN);
        let limit = i64::from(p.limit);
        let rows = self
            .query(
                "dead_list",
                &self.inner.sql.dead_list,
                &[&p.queue, &after, &limit],
            )
            .await?;
        Ok(rows.iter().map(|r| job_info(r, Source::Dead)).collect())
    }

    async fn dead_requeue(&self, params: Checked<DeadRequeueParams>) -> Result<u64> {
        let sel = params.into_inner();
        let now = self.now_override();
        let limit = sel.limit.map(i64::from);
        self.execute(
            "dead_requeue",
            &self.inner.sql.dead_requeue,
            &[&now, &sel.queue, &sel.ids, &limit, &self.inner.sql.channel],
        )
        .await
    }

    async fn dead_purge(&self, params: Checked<DeadPurgeParams>) -> Result<u64> {
        let sel = params.into_inner();
        let limit = sel.limit.map(i64::from);
        self.execute(
            "dead_purge",
            &self.inner.sql.dead_purge,
            &[&sel.queue, &sel.ids, &limit],
        )
        .await
    }

    async fn dead_count(&self, params: Checked<DeadCountParams>) -> Result<u64> {
        let sel = params.into_inner();
        let rows = self
            .query(
                "dead_count",
                &self.inner.sql.dead_count,
                &[&sel.queue, &sel.ids],
            )
            .await?;
        Ok(rows.first().map(|r| count(r.get(0))).unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::first_cause;
    use alkstore_core::Error;

    fn aborted() -> Error {
        Error::database(
            "job_settle",
            "current transaction is aborted (SQLSTATE 25P02)",
        )
    }

    fn cause() -> Error {
        Error::database("job_fail", "deadlock detected (SQLSTATE 40P01)")
    }

    /// A settle batch reports the statement that failed, not the ones
    /// PostgreSQL refused after it, wherever each stands in the batch.
    #[test]
    fn first_cause_reports_the_failure_not_the_aborted_statements() {
        let is_cause = |r: Result<(), Error>| r.expect_err("fails").to_string().contains("40P01");
        assert!(is_cause(
            first_cause(Err::<(), _>(aborted()), vec![Ok(1), Err(cause())]).map(drop)
        ));
        assert!(is_cause(
            first_cause(Err::<(), _>(cause()), vec![Err::<(), _>(aborted())]).map(drop)
        ));
        assert!(is_cause(
            first_cause(Ok(()), vec![Err::<(), _>(aborted()), Err(cause())]).map(drop)
        ));
        let fine = first_cause(Ok(7), vec![Ok(1), Ok(2)]).expect("no error");
        assert_eq!(fine, (7, vec![1, 2]));
    }
}

/// A retry on a bare client (`within` outside a transaction): its select
/// and its write are separate autocommits, and a job rescued and claimed
/// anew between them must keep its new claim.
#[cfg(test)]
mod retry_on_a_bare_client {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use alkstore_core::prelude::*;
    use alkstore_core::{
        Job, JobClaimParams, JobRetryParams, JobState, ManualClock, NewJob, QueueOpts,
        RetryOutcome, Settle, Settled,
    };
    use futures_util::future::{BoxFuture, FutureExt};

    use super::{retry_in, settle_all_in};
    use crate::conn::{Exec, Params, Row};
    use crate::{testing, PgEngine, PgOptions};

    /// The application's bare client, with `between` run once right after
    /// the statement `after` (as another worker's claim could land there).
    struct Interleaved<'a> {
        client: &'a tokio_postgres::Client,
        after: &'a str,
        between: Mutex<Option<BoxFuture<'static, ()>>>,
    }

    impl Exec for Interleaved<'_> {
        fn fetch<'a>(
            &'a self,
            op: &'static str,
            text: &'a str,
            params: &'a Params<'a>,
        ) -> BoxFuture<'a, alkstore_core::Result<Vec<Row>>> {
            async move {
                let rows = self.client.fetch(op, text, params).await?;
                if text == self.after {
                    let between = self.between.lock().expect("between").take();
                    if let Some(between) = between {
                        between.await;
                    }
                }
                Ok(rows)
            }
            .boxed()
        }

        fn exec<'a>(
            &'a self,
            op: &'static str,
            text: &'a str,
            params: &'a Params<'a>,
        ) -> BoxFuture<'a, alkstore_core::Result<u64>> {
            self.client.exec(op, text, params)
        }
    }

    /// An engine on `clock` with `n` jobs of queue `q` claimed by worker
    /// `a` (a 30 s visibility timeout), a bare client of the application,
    /// and what `drop_schema` needs.
    async fn claimed_by_a(
        clock: &ManualClock,
        n: u32,
    ) -> (PgEngine, Vec<Job>, tokio_postgres::Client, String, String) {
        let url = testing::ensure_database(&testing::database_url(), "alkstore_test")
            .await
            .expect("test database");
        let schema = testing::unique_schema("bareretry");
        let opts = PgOptions::new(url.clone(), schema.clone()).clock(Arc::new(clock.clone()));
        let engine = PgEngine::open(opts).await.expect("open");
        let queue_opts = QueueOpts {
            visibility_timeout: Duration::from_secs(30),
            ..QueueOpts::default()
        };
        let jobs: Vec<NewJob> = (0..n)
            .map(|_| NewJob::new("q", b"x".to_vec()).with_queue_opts(queue_opts.clone()))
            .collect();
        engine.job_enqueue(jobs).await.expect("enqueue");
        let held = engine
            .job_claim(JobClaimParams::new("q", "a", n))
            .await
            .expect("claim");
        assert_eq!(held.len(), n as usize);
        let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .expect("the application's connection");
        tokio::spawn(conn);
        (engine, held, client, url, schema)
    }

    /// Worker `b`'s claims of every job of `q`, once `a`'s claims expired.
    fn b_claims_them(engine: &PgEngine, clock: &ManualClock, n: u32) -> BoxFuture<'static, ()> {
        let (engine, clock) = (engine.clone(), clock.clone());
        async move {
            clock.advance(Duration::from_secs(31));
            let got = engine
                .job_claim(JobClaimParams::new("q", "b", n))
                .await
                .expect("b's claim");
            assert_eq!(got.len(), n as usize, "b claims the rescued jobs");
        }
        .boxed()
    }

    /// Each of `jobs` is still b's, and b's ack works.
    async fn still_bs(engine: &PgEngine, jobs: &[Job]) {
        let mut claims = Vec::new();
        for j in jobs {
            let info = engine.job_get(j.id).await.expect("get").expect("live");
            assert_eq!(
                (info.state, info.worker.as_deref(), info.attempts),
                (JobState::Processing, Some("b"), 2),
                "job {} keeps b's claim: {info:?}",
                j.id
            );
            claims.push(alkstore_core::Claim {
                id: j.id,
                worker: "b".into(),
                token: j.claim_token + 1,
            });
        }
        let acked = engine.job_ack(claims).await.expect("ack");
        assert!(acked.iter().all(|a| *a), "b's acks: {acked:?}");
    }

    fn retry(job: &Job) -> JobRetryParams {
        JobRetryParams {
            claim: job.claim(),
            error: "late".into(),
            delay: Some(Duration::ZERO),
        }
    }

    /// A lone retry: `retry_select` finds a's claim held, b claims the job
    /// before `retry_update` runs, which then changes nothing.
    #[tokio::test]
    async fn a_lone_retry_leaves_a_claim_taken_since_its_select() {
        let clock = ManualClock::starting_now();
        let (engine, jobs, client, url, schema) = claimed_by_a(&clock, 1).await;
        let sql = &engine.inner.sql;
        let bare = Interleaved {
            client: &client,
            after: &sql.retry_select,
            between: Mutex::new(Some(b_claims_them(&engine, &clock, 1))),
        };
        let now = engine.now_override();
        let (outcome, _) = retry_in(&bare, sql, now, retry(&jobs[0]), None)
            .await
            .expect("retry");
        assert_eq!(outcome, RetryOutcome::NotHeld);
        still_bs(&engine, &jobs).await;
        testing::drop_schema(&url, &schema).await.expect("drop");
    }

    /// A batch of retries: `retry_many_select` finds a's claims held, b
    /// claims the jobs before `retry_many_update` runs, which then changes
    /// nothing.
    #[tokio::test]
    async fn a_batch_of_retries_leaves_claims_taken_since_its_select() {
        let clock = ManualClock::starting_now();
        let (engine, jobs, client, url, schema) = claimed_by_a(&clock, 2).await;
        let sql = &engine.inner.sql;
        let bare = Interleaved {
            client: &client,
            after: &sql.retry_many_select,
            between: Mutex::new(Some(b_claims_them(&engine, &clock, 2))),
        };
        let batch = jobs.iter().map(|j| Settle::Retry(retry(j))).collect();
        let now = engine.now_override();
        let settled = settle_all_in(&bare, sql, now, batch, None)
            .await
            .expect("settle");
        let outcomes: Vec<Settled> = settled.into_iter().map(|(s, _)| s).collect();
        assert_eq!(
            outcomes,
            vec![Settled::Retried(RetryOutcome::NotHeld); 2],
            "neither claim is a's any more"
        );
        still_bs(&engine, &jobs).await;
        testing::drop_schema(&url, &schema).await.expect("drop");
    }
}
