//! The operator's calls on jobs and queues: cancel a job, look jobs up
//! and list them, count a queue's jobs, list queues, pause and resume.

use alkstore_core::queue::{
    JobCancelParams, JobDeleteParams, JobGetParams, JobRunNowParams, QueuePauseParams,
    QueueStatsParams,
};
use alkstore_core::validate::count;
use alkstore_core::{
    CancelOutcome, Checked, Error, JobInfo, JobListParams, JobState, QueueStats, Result,
};

use super::rows::{job_info, Source};
use crate::PgEngine;

/// The driver's `job_cancel`: a pending job is cancelled at once, a
/// claimed one is asked to cancel.
pub(super) async fn job_cancel(
    engine: &PgEngine,
    params: Checked<JobCancelParams>,
) -> Result<CancelOutcome> {
    let JobCancelParams { id, .. } = params.into_inner();
    let now = engine.now_override();
    let rows = engine
        .query("job_cancel", &engine.inner.sql.cancel, &[&now, &id])
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

/// The driver's `job_run_now`: make waiting jobs due now.
pub(super) async fn job_run_now(
    engine: &PgEngine,
    params: Checked<JobRunNowParams>,
) -> Result<u64> {
    let JobRunNowParams { ids, .. } = params.into_inner();
    let now = engine.now_override();
    let rows = engine
        .query("job_run_now", &engine.inner.sql.run_now, &[&now, &ids])
        .await?;
    Ok(rows.first().map_or(0, |r| count(r.get(0))))
}

/// The driver's `job_delete`: delete pending jobs.
pub(super) async fn job_delete(engine: &PgEngine, params: Checked<JobDeleteParams>) -> Result<u64> {
    let JobDeleteParams { ids, .. } = params.into_inner();
    let rows = engine
        .query("job_delete", &engine.inner.sql.delete, &[&ids])
        .await?;
    Ok(rows.first().map_or(0, |r| count(r.get(0))))
}

/// The driver's `job_get`: job `id` from the live, dead or done table.
pub(super) async fn job_get(
    engine: &PgEngine,
    params: Checked<JobGetParams>,
) -> Result<Option<JobInfo>> {
    let JobGetParams { id, .. } = params.into_inner();
    let sql = &engine.inner.sql;
    for (text, source) in [
        (&sql.get_live, Source::Live),
        (&sql.get_dead, Source::Dead),
        (&sql.get_done, Source::Done),
    ] {
        let rows = engine.query("job_get", text, &[&id]).await?;
        if let Some(r) = rows.first() {
            return Ok(Some(job_info(r, source)));
        }
    }
    Ok(None)
}

/// The driver's `job_list`: live (or kept completed) jobs, by id.
pub(super) async fn job_list(
    engine: &PgEngine,
    params: Checked<JobListParams>,
) -> Result<Vec<JobInfo>> {
    let p = params.into_inner();
    let (text, source, state) = match p.state {
        Some(JobState::Completed) => (&engine.inner.sql.list_done, Source::Done, None),
        s => (
            &engine.inner.sql.list_live,
            Source::Live,
            s.map(|s| s.as_str()),
        ),
    };
    let after = p.after_id.unwrap_or(i64::MIN);
    let limit = i64::from(p.limit);
    let rows = engine
        .query(
            "job_list",
            text,
            &[&p.queue, &state, &after, &limit, &p.tag],
        )
        .await?;
    Ok(rows.iter().map(|r| job_info(r, source)).collect())
}

/// The driver's `queue_stats`: one queue's jobs counted by state.
pub(super) async fn queue_stats(
    engine: &PgEngine,
    params: Checked<QueueStatsParams>,
) -> Result<QueueStats> {
    let QueueStatsParams { queue, .. } = params.into_inner();
    let now = engine.now_override();
    let rows = engine
        .query("queue_stats", &engine.inner.sql.stats, &[&now, &queue])
        .await?;
    let r = rows
        .first()
        .ok_or_else(|| Error::database("queue_stats", "no row"))?;
    Ok(stats_row(r, 0, queue))
}

/// `queue`'s counts from the columns of `Sql::stats` starting at `first`
/// (a count from an outer join may be NULL: no rows).
fn stats_row(r: &tokio_postgres::Row, first: usize, queue: String) -> QueueStats {
    let n = |i: usize| count(r.get::<_, Option<i64>>(first + i).unwrap_or(0));
    let oldest: Option<i64> = r.get(first + 5);
    let db_now: i64 = r.get(first + 9);
    QueueStats {
        ready: n(0),
        scheduled: n(1),
        expired: n(2),
        processing: n(3),
        expired_claims: n(4),
        oldest_ready_age_s: oldest.map(|t| (db_now - t).max(0)),
        retryable: n(6),
        dead: n(7),
        completed: n(8),
        cancelled: n(10),
        queue,
    }
}

/// The driver's `queue_stats_all`: every listed queue's counts, in one
/// statement.
pub(super) async fn queue_stats_all(engine: &PgEngine) -> Result<Vec<QueueStats>> {
    let now = engine.now_override();
    let rows = engine
        .query("queue_stats_all", &engine.inner.sql.stats_all, &[&now])
        .await?;
    Ok(rows.iter().map(|r| stats_row(r, 1, r.get(0))).collect())
}

/// The driver's `queue_list`: every queue the store knows.
pub(super) async fn queue_list(engine: &PgEngine) -> Result<Vec<String>> {
    let rows = engine
        .query("queue_list", &engine.inner.sql.queue_list, &[])
        .await?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// The driver's `queue_set_paused`: pause or resume a queue; whether that
/// changed anything.
pub(super) async fn queue_set_paused(
    engine: &PgEngine,
    params: Checked<QueuePauseParams>,
    paused: bool,
) -> Result<bool> {
    let p = params.into_inner();
    let now = engine.now_override();
    let op = "queue_set_paused";
    let n = if paused {
        engine
            .execute(op, &engine.inner.sql.queue_pause, &[&now, &p.queue])
            .await?
    } else {
        engine
            .execute(op, &engine.inner.sql.queue_resume, &[&p.queue])
            .await?
    };
    Ok(n > 0)
}

/// The driver's `queue_paused`: the paused queues.
pub(super) async fn queue_paused(engine: &PgEngine) -> Result<Vec<String>> {
    let rows = engine
        .query("queue_paused", &engine.inner.sql.queue_paused, &[])
        .await?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}
