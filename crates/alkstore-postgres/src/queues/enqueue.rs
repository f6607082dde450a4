//! Enqueueing on PostgreSQL: the statement for a batch (one row, a
//! uniform batch, plain or keyed rows), the group commit of autocommit
//! enqueues, and `job_enqueue_claimed`. Transactions (`tx.rs`,
//! `within.rs`) and schedules insert through [`enqueue_in`] and
//! [`insert_jobs`].

use alkstore_core::queue::{secs, EnqueuedClaimed, JobEnqueueClaimedParams, JobEnqueueParams};
use alkstore_core::{Checked, Engine, Enqueued, Error, NewJob, Result};
use tokio_postgres::types::ToSql;

use super::rows::{claimed, Columns};
use super::sql::Sql;
use crate::announce::Wakes;
use crate::conn::{fetch_opt, Exec, Param};
use crate::{db, PgEngine};

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
                && j.opts.tags == first.opts.tags
                && j.opts.meta == first.opts.meta
                && j.queue_opts == first.queue_opts
        })
}

/// The scalar parameters of `Sql::enqueue_one` and `Sql::enqueue_uniform`
/// (`$1`–`$15`), drawn from one job; `Sql::enqueue_claimed` adds `$16`.
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
    tags: Option<String>,
    meta: Option<String>,
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
            tags: job.tags_json(),
            meta: job.meta_json(),
        }
    }

    fn params<'b>(
        &'b self,
        now: &'b Option<i64>,
        payload: &'b dyn Param,
        channel: &'b &'b str,
    ) -> [&'b dyn Param; 15] {
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
            &self.tags,
            &self.meta,
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
        &c.tags,
        &c.meta,
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
            let client = self.write_client().await?;
            let now = self.now_override();
            let out = enqueue_in(
                &self.on(&client),
                &self.inner.sql,
                jobs,
                now,
                Wakes::AfterCommit,
            )
            .await?;
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
}

/// The driver's `job_enqueue`: small unkeyed batches join the group
/// commit; keyed ones run in a transaction of their own.
pub(crate) async fn job_enqueue(
    engine: &PgEngine,
    params: Checked<JobEnqueueParams>,
) -> Result<Vec<Enqueued>> {
    let JobEnqueueParams { jobs, .. } = params.into_inner();
    let op = "job_enqueue";
    let bytes = jobs.iter().map(|j| j.payload.len()).sum();
    if !is_keyed(&jobs) && crate::combine::groupable(jobs.len(), bytes) {
        // Written with whatever other calls are waiting (see
        // `crate::combine`).
        let rows = jobs.len();
        return crate::combine::submit(&engine.inner.enqueues, jobs, rows, op, |batch| {
            tokio::spawn(engine.clone().enqueue_runner(batch));
        })
        .await;
    }
    let mut client = engine.write_client().await?;
    let sql = &engine.inner.sql;
    let now = engine.now_override();
    // Other processes' workers are woken after the commit (see
    // `crate::announce`).
    let queues = queues_of(&jobs);
    if !is_keyed(&jobs) {
        let out = enqueue_in(&engine.on(&client), sql, jobs, now, Wakes::AfterCommit).await?;
        engine.announce_queues(&queues, &out);
        return Ok(out);
    }
    // Keyed batches may need a second statement (see `insert_jobs`):
    // one transaction keeps the batch all or nothing. A holder that
    // finished mid-way freed its key: run the batch again.
    let mut tries = 0;
    loop {
        tries += 1;
        let tx = client.transaction().await.map_err(db(op))?;
        match enqueue_in(
            &engine.on_tx(&tx),
            sql,
            jobs.clone(),
            now,
            Wakes::AfterCommit,
        )
        .await
        {
            Ok(out) => {
                tx.commit().await.map_err(db(op))?;
                engine.announce_queues(&queues, &out);
                return Ok(out);
            }
            Err(Error::Conflict { .. }) if tries < 5 => {
                tx.rollback().await.map_err(db(op))?;
            }
            Err(e) => return Err(e),
        }
    }
}

/// The driver's `job_enqueue_claimed`: insert the job and claim it in one
/// statement (a keyed job is enqueued and left pending).
pub(super) async fn job_enqueue_claimed(
    engine: &PgEngine,
    params: Checked<JobEnqueueClaimedParams>,
) -> Result<EnqueuedClaimed> {
    let op = "job_enqueue_claimed";
    let JobEnqueueClaimedParams { job, worker, .. } = params.into_inner();
    if job.opts.unique_key.is_some() {
        // A keyed job may be a duplicate: the keyed insert, left pending.
        let plain = Checked::new(vec![job], engine.limits())?;
        let enqueued = job_enqueue(engine, plain)
            .await?
            .pop()
            .ok_or_else(|| Error::database(op, "the insert returned no id"))?;
        return Ok(EnqueuedClaimed {
            enqueued,
            claimed: None,
        });
    }
    let client = engine.client().await?;
    let sql = &engine.inner.sql;
    let now = engine.now_override();
    let channel = Wakes::AfterCommit.channel(&sql.channel);
    let one = OneRow::of(&job);
    let mut params: Vec<&(dyn ToSql + Sync)> = one
        .params(&now, &job.payload, &channel)
        .iter()
        .map(|p| p.as_tokio())
        .collect();
    params.push(&worker);
    let row = engine
        .on(&client)
        .row(op, &sql.enqueue_claimed, &params)
        .await?;
    let is_claimed: bool = row.get(13);
    if !is_claimed {
        engine.inner.announce.queue(&job.queue);
    }
    Ok(EnqueuedClaimed {
        enqueued: Enqueued::Inserted(row.get(0)),
        claimed: is_claimed.then(|| claimed(&row, &job.queue, &worker)),
    })
}
