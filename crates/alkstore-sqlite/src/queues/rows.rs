//! Column lists and row decoding shared by the queue statements.

use alkstore_core::queue::parse_attempt_errors;
use alkstore_core::{Job, JobInfo, JobState};
use rusqlite::Row;

/// Columns common to the job, dead and done tables, in `JobInfo` order.
pub(crate) const JOB_COLS: &str = "id, queue, payload, priority, run_at, attempts, max_attempts, \
     worker_id, claim_expires_at, created_at, expires_at, unique_key, last_error, errors";

/// Columns copied from a job row into the dead or done table (and back on
/// requeue).
pub(crate) const MOVE_COLS: &str = "id, queue, payload, priority, run_at, attempts, max_attempts, \
     worker_id, claimed_at, claim_expires_at, created_at, expires_at, visibility_timeout_s, \
     backoff_base_s, dead_letter_retention_s, unique_key, claim_count, keep_completed_s";

/// Which table a `JobInfo` row comes from, and so which columns follow
/// `JOB_COLS`.
#[derive(Clone, Copy)]
pub(crate) enum Source {
    /// `state, cancel_requested`.
    Live,
    /// `reason, died_at`.
    Dead,
    /// `completed_at`.
    Done,
}

impl Source {
    /// The columns to select after `JOB_COLS`.
    pub(crate) fn extra_cols(self) -> &'static str {
        match self {
            Source::Live => "state, cancel_requested",
            Source::Dead => "reason, died_at",
            Source::Done => "completed_at",
        }
    }
}

/// Decode `JOB_COLS` plus the source's extra columns.
pub(crate) fn job_info(row: &Row<'_>, source: Source) -> rusqlite::Result<JobInfo> {
    let errors: Option<String> = row.get(13)?;
    let (state, dead_reason, died_at, cancel_requested) = match source {
        Source::Dead => (
            JobState::Dead,
            Some(row.get::<_, String>(14)?),
            Some(row.get(15)?),
            false,
        ),
        Source::Live => {
            let s: String = row.get(14)?;
            (
                JobState::parse(&s).unwrap_or(JobState::Pending),
                None,
                None,
                row.get(15)?,
            )
        }
        Source::Done => (JobState::Completed, None, Some(row.get(14)?), false),
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
        errors: parse_attempt_errors(errors.as_deref()),
        state,
        dead_reason,
        died_at,
        cancel_requested,
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
        claim_token: row.get(10)?,
        queue: queue.to_string(),
        worker: worker.to_string(),
    })
}
