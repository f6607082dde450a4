//! Column lists and row decoding shared by the queue statements.

use alkstore_core::{Job, JobInfo, JobState};
use rusqlite::Row;

/// Columns common to the job and dead tables, in `JobInfo` order.
pub(crate) const JOB_COLS: &str = "id, queue, payload, priority, run_at, attempts, max_attempts, \
     worker_id, claim_expires_at, created_at, expires_at, unique_key, last_error";

/// Columns copied from a job row into the dead table.
pub(crate) const MOVE_COLS: &str = "id, queue, payload, priority, run_at, attempts, max_attempts, \
     worker_id, claimed_at, claim_expires_at, created_at, expires_at, visibility_timeout_s, \
     backoff_base_s, dead_letter_retention_s, unique_key";

/// Decode `JOB_COLS` (+ `state` for live rows, or `reason, died_at` for dead).
pub(crate) fn job_info(row: &Row<'_>, dead: bool) -> rusqlite::Result<JobInfo> {
    let (state, dead_reason, died_at) = if dead {
        (
            JobState::Dead,
            Some(row.get::<_, String>(13)?),
            Some(row.get(14)?),
        )
    } else {
        let s: String = row.get(13)?;
        (JobState::parse(&s).unwrap_or(JobState::Pending), None, None)
    };
    Ok(JobInfo {
        id: row.get(0)?,
        queue: row.get(1)?,
        payload: row.get(2)?,
        priority: row.get(3)?,
        run_at: row.get(4)?,
        attempts: row.get(5)?,
        max_attempts: row.get(6)?,
        worker: row.get(7)?,
        claim_expires_at: row.get(8)?,
        created_at: row.get(9)?,
        expires_at: row.get(10)?,
        unique_key: row.get(11)?,
        last_error: row.get(12)?,
        state,
        dead_reason,
        died_at,
    })
}

/// Decode a claim's `RETURNING` row.
pub(crate) fn claimed(row: &Row<'_>, queue: &str, worker: &str) -> rusqlite::Result<Job> {
    Ok(Job {
        id: row.get(0)?,
        payload: row.get(1)?,
        priority: row.get(2)?,
        attempt: row.get(3)?,
        max_attempts: row.get(4)?,
        claim_expires_at: row.get(5)?,
        run_at: row.get(6)?,
        created_at: row.get(7)?,
        unique_key: row.get(8)?,
        claimed_at: row.get(9)?,
        queue: queue.to_string(),
        worker: worker.to_string(),
    })
}
