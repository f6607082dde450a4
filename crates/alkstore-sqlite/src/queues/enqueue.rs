//! Enqueueing on SQLite: one row per job, its id from the writer's
//! reserved block (see [`JobIds`]), and `job_enqueue_claimed`. The outbox,
//! transactions and schedules insert through [`insert_job`] and
//! [`enqueue_in`].

use std::sync::Arc;

use alkstore_core::queue::{EnqueuedClaimed, JobEnqueueClaimedParams, JobEnqueueParams};
use alkstore_core::{Checked, Enqueued, NewJob, Result};
use rusqlite::{params, Connection};

use super::rows::ClaimedRows;
use crate::writer::queue_state::{JobIds, JOB_ID_BLOCK};
use crate::writer::WriterState;
use crate::{db, SqliteEngine};

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
               keep_completed_s, id, tags, meta) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15) \
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
            job.tags_json(),
            job.meta_json(),
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

/// The driver's `job_enqueue`: one job as one statement, a batch in a
/// savepoint of its own.
pub(crate) async fn job_enqueue(
    engine: &SqliteEngine,
    params: Checked<JobEnqueueParams>,
) -> Result<Vec<Enqueued>> {
    let JobEnqueueParams { jobs, .. } = params.into_inner();
    let jobs_len = jobs.len();
    let insert = move |st: &mut WriterState| {
        let now = st.clock.now();
        enqueue_in(&st.conn, &jobs, now, &mut st.job_ids, JOB_ID_BLOCK)
    };
    let writer = &engine.inner.writer;
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

/// The driver's `job_enqueue_claimed`: the insert, then the claim of the
/// new row alone when nothing is ahead of it.
pub(super) async fn job_enqueue_claimed(
    engine: &SqliteEngine,
    params: Checked<JobEnqueueClaimedParams>,
) -> Result<EnqueuedClaimed> {
    let op = "job_enqueue_claimed";
    let JobEnqueueClaimedParams { job, worker, .. } = params.into_inner();
    // The insert, then the claim of the new row alone when nothing is
    // ahead of it (see `QueueDriver::job_enqueue_claimed`): one
    // savepoint, so both or neither.
    let (enqueued, rows, job, worker) = engine
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
                       run_at, created_at, unique_key, claimed_at, claim_count, tags, meta",
                )
                .and_then(|mut s| {
                    s.query(params![worker, now, id, job.queue])
                        .and_then(ClaimedRows::read)
                })
                .map_err(db(op))?;
            if rows.len() > 0 {
                st.queue_of
                    .claimed(&Arc::from(job.queue.as_str()), rows.ids());
            }
            Ok((enqueued, rows, job, worker))
        })
        .await?;
    Ok(EnqueuedClaimed {
        enqueued,
        claimed: rows.into_jobs(&job.queue, &worker).pop(),
    })
}
