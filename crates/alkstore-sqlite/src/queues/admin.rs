//! The operator's calls on jobs and queues: cancel a job, look jobs up
//! and list them, count a queue's jobs, list queues, pause and resume.

use alkstore_core::queue::{
    JobCancelParams, JobDeleteParams, JobGetParams, JobRunNowParams, QueuePauseParams,
    QueueStatsParams,
};
use alkstore_core::validate::count;
use alkstore_core::{CancelOutcome, Checked, JobInfo, JobListParams, JobState, QueueStats, Result};
use rusqlite::{params, OptionalExtension};

use super::bury::move_to_dead;
use super::rows::{job_info, Source, JOB_COLS};
use crate::{db, SqliteEngine};

/// The driver's `job_cancel`: a pending job is cancelled at once, a
/// claimed one is asked to cancel.
pub(super) async fn job_cancel(
    engine: &SqliteEngine,
    params: Checked<JobCancelParams>,
) -> Result<CancelOutcome> {
    let JobCancelParams { id, .. } = params.into_inner();
    engine
        .inner
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

/// The driver's `job_run_now`: make waiting jobs due now.
pub(super) async fn job_run_now(
    engine: &SqliteEngine,
    params: Checked<JobRunNowParams>,
) -> Result<u64> {
    let JobRunNowParams { ids, .. } = params.into_inner();
    let ids = serde_json::to_string(&ids).unwrap_or_else(|_| "[]".into());
    engine
        .inner
        .writer
        .write("job_run_now", move |st| {
            let now = st.clock.now();
            st.conn
                .prepare_cached(
                    "UPDATE __alkstore_job SET run_at = ?2 \
                     WHERE id IN (SELECT value FROM json_each(?1)) \
                       AND state = 'pending' AND run_at > ?2",
                )
                .and_then(|mut s| s.execute(params![ids, now]))
                .map(|n| n as u64)
                .map_err(db("job_run_now"))
        })
        .await
}

/// The driver's `job_delete`: delete pending jobs.
pub(super) async fn job_delete(
    engine: &SqliteEngine,
    params: Checked<JobDeleteParams>,
) -> Result<u64> {
    let JobDeleteParams { ids, .. } = params.into_inner();
    let ids = serde_json::to_string(&ids).unwrap_or_else(|_| "[]".into());
    engine
        .inner
        .writer
        .write("job_delete", move |st| {
            st.conn
                .prepare_cached(
                    "DELETE FROM __alkstore_job \
                     WHERE id IN (SELECT value FROM json_each(?1)) AND state = 'pending'",
                )
                .and_then(|mut s| s.execute([ids]))
                .map(|n| n as u64)
                .map_err(db("job_delete"))
        })
        .await
}

/// The driver's `job_get`: job `id` from the live, dead or done table.
pub(super) async fn job_get(
    engine: &SqliteEngine,
    params: Checked<JobGetParams>,
) -> Result<Option<JobInfo>> {
    let JobGetParams { id, .. } = params.into_inner();
    engine
        .read("job_get", move |conn| {
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

/// The driver's `queue_stats`: one queue's jobs counted by state.
pub(super) async fn queue_stats(
    engine: &SqliteEngine,
    params: Checked<QueueStatsParams>,
) -> Result<QueueStats> {
    let QueueStatsParams { queue, .. } = params.into_inner();
    let now = engine.now();
    engine
        .read("queue_stats", move |conn| {
            let op = "queue_stats";
            let live: [Option<i64>; 7] = conn
                .prepare_cached(&format!(
                    "SELECT {} FROM __alkstore_job WHERE queue = ?1",
                    live_counts("?2")
                ))
                .and_then(|mut s| {
                    s.query_row(params![queue, now], |r| {
                        Ok([
                            r.get(0)?,
                            r.get(1)?,
                            r.get(2)?,
                            r.get(3)?,
                            r.get(4)?,
                            r.get(5)?,
                            r.get(6)?,
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
            let cancelled = conn
                .prepare_cached(
                    "SELECT COUNT(*) FROM __alkstore_dead WHERE queue = ?1 AND reason = 'cancelled'",
                )
                .and_then(|mut s| s.query_row([&queue], |r| r.get::<_, i64>(0)))
                .map(count)
                .map_err(db(op))?;
            let n = |i: usize| count(live[i].unwrap_or(0));
            Ok(QueueStats {
                ready: n(0),
                scheduled: n(1),
                retryable: n(6),
                expired: n(2),
                processing: n(3),
                expired_claims: n(4),
                dead,
                cancelled,
                completed,
                oldest_ready_age_s: live[5].map(|t| (now - t).max(0)),
                queue,
            })
        })
        .await
}

/// A queue's live jobs counted by state at `now` (a parameter): ready,
/// scheduled, expired, processing, lapsed claims, the oldest ready job's
/// due time, retryable.
fn live_counts(now: &str) -> String {
    format!(
        "COALESCE(SUM(state = 'pending' AND run_at <= {now} \
           AND (expires_at IS NULL OR expires_at > {now})), 0), \
         COALESCE(SUM(state = 'pending' AND run_at > {now} \
           AND (expires_at IS NULL OR expires_at > {now})), 0), \
         COALESCE(SUM(state = 'pending' AND expires_at <= {now}), 0), \
         COALESCE(SUM(state = 'processing' AND claim_expires_at > {now}), 0), \
         COALESCE(SUM(state = 'processing' AND claim_expires_at <= {now}), 0), \
         MIN(CASE WHEN state = 'pending' AND run_at <= {now} \
           AND (expires_at IS NULL OR expires_at > {now}) THEN run_at END), \
         COALESCE(SUM(state = 'pending' AND run_at > {now} AND attempts > 0 \
           AND (expires_at IS NULL OR expires_at > {now})), 0)"
    )
}

/// The driver's `queue_stats_all`: every listed queue's counts, in one
/// statement (one snapshot) of grouped reads.
pub(super) async fn queue_stats_all(engine: &SqliteEngine) -> Result<Vec<QueueStats>> {
    let now = engine.now();
    engine
        .read("queue_stats_all", move |conn| {
            conn.prepare_cached(&format!(
                "WITH q(queue) AS ({QUEUE_LIST}), \
                   l AS (SELECT queue, {} FROM __alkstore_job GROUP BY queue), \
                   d AS (SELECT queue, COUNT(*) AS n, SUM(reason = 'cancelled') AS c \
                     FROM __alkstore_dead GROUP BY queue), \
                   o AS (SELECT queue, COUNT(*) AS n FROM __alkstore_done GROUP BY queue) \
                 SELECT q.queue, l.*, d.n, d.c, o.n FROM q \
                   LEFT JOIN l ON l.queue = q.queue LEFT JOIN d ON d.queue = q.queue \
                   LEFT JOIN o ON o.queue = q.queue ORDER BY q.queue",
                live_counts("?1")
            ))
            .and_then(|mut s| {
                s.query_map([now], |r| {
                    let n = |i: usize| -> rusqlite::Result<u64> {
                        Ok(count(r.get::<_, Option<i64>>(i)?.unwrap_or(0)))
                    };
                    let oldest: Option<i64> = r.get(7)?;
                    Ok(QueueStats {
                        queue: r.get(0)?,
                        ready: n(2)?,
                        scheduled: n(3)?,
                        expired: n(4)?,
                        processing: n(5)?,
                        expired_claims: n(6)?,
                        oldest_ready_age_s: oldest.map(|t| (now - t).max(0)),
                        retryable: n(8)?,
                        dead: n(9)?,
                        cancelled: n(10)?,
                        completed: n(11)?,
                    })
                })?
                .collect()
            })
            .map_err(db("queue_stats_all"))
        })
        .await
}

/// The driver's `job_list`: live (or kept completed) jobs, by id.
pub(super) async fn job_list(
    engine: &SqliteEngine,
    params: Checked<JobListParams>,
) -> Result<Vec<JobInfo>> {
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
    engine
        .read("job_list", move |conn| {
            conn.prepare_cached(&format!(
                "SELECT {JOB_COLS}, {extra} FROM {table} \
             WHERE (?1 IS NULL OR queue = ?1) AND {state_filter} AND id > ?3 \
               AND (?5 IS NULL OR EXISTS (SELECT 1 FROM json_each(tags) WHERE value = ?5)) \
             ORDER BY id LIMIT (SELECT ?4)",
                extra = source.extra_cols(),
            ))
            .and_then(|mut s| {
                s.query_map(
                    params![
                        p.queue,
                        state,
                        p.after_id.unwrap_or(i64::MIN),
                        p.limit,
                        p.tag
                    ],
                    |r| job_info(r, source),
                )?
                .collect()
            })
            .map_err(db("job_list"))
        })
        .await
}

/// Every queue the store knows, by name.
const QUEUE_LIST: &str = "SELECT DISTINCT queue FROM __alkstore_job \
     UNION SELECT DISTINCT queue FROM __alkstore_dead \
     UNION SELECT DISTINCT queue FROM __alkstore_done \
     UNION SELECT DISTINCT queue FROM __alkstore_queue_throughput WHERE bucket > 0 AND shard >= 0";

/// The driver's `queue_list`: every queue the store knows.
pub(super) async fn queue_list(engine: &SqliteEngine) -> Result<Vec<String>> {
    engine
        .read("queue_list", |conn| {
            conn.prepare_cached(&format!("{QUEUE_LIST} ORDER BY 1"))
                .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
                .map_err(db("queue_list"))
        })
        .await
}

/// The driver's `queue_set_paused`: pause or resume a queue; whether that
/// changed anything.
pub(super) async fn queue_set_paused(
    engine: &SqliteEngine,
    params: Checked<QueuePauseParams>,
    paused: bool,
) -> Result<bool> {
    let p = params.into_inner();
    engine
        .inner
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

/// The driver's `queue_paused`: the paused queues.
pub(super) async fn queue_paused(engine: &SqliteEngine) -> Result<Vec<String>> {
    engine
        .read("queue_paused", |conn| {
            conn.prepare_cached("SELECT queue FROM __alkstore_queue_pause ORDER BY queue")
                .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
                .map_err(db("queue_paused"))
        })
        .await
}
