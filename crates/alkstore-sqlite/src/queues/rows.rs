//! Column lists and row decoding shared by the queue statements.

use alkstore_core::queue::{parse_attempt_errors, parse_meta, parse_tags};
use alkstore_core::{Job, JobInfo, JobState};
use rusqlite::Row;

/// Columns common to the job, dead and done tables, in `JobInfo` order.
pub(crate) const JOB_COLS: &str = "id, queue, payload, priority, run_at, attempts, max_attempts, \
     worker_id, claim_expires_at, created_at, expires_at, unique_key, last_error, errors, tags, meta";

/// Columns copied from a job row into the dead or done table (and back on
/// requeue).
pub(crate) const MOVE_COLS: &str = "id, queue, payload, priority, run_at, attempts, max_attempts, \
     worker_id, claimed_at, claim_expires_at, created_at, expires_at, visibility_timeout_s, \
     backoff_base_s, dead_letter_retention_s, unique_key, claim_count, keep_completed_s, tags, meta";

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
    let tags: Option<String> = row.get(14)?;
    let meta: Option<String> = row.get(15)?;
    let (state, dead_reason, died_at, cancel_requested) = match source {
        Source::Dead => (
            JobState::Dead,
            Some(row.get::<_, String>(16)?),
            Some(row.get(17)?),
            false,
        ),
        Source::Live => {
            let s: String = row.get(16)?;
            (
                JobState::parse(&s).unwrap_or(JobState::Pending),
                None,
                None,
                row.get(17)?,
            )
        }
        Source::Done => (JobState::Completed, None, Some(row.get(16)?), false),
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
        tags: parse_tags(tags.as_deref()),
        meta: parse_meta(meta.as_deref()),
        state,
        dead_reason,
        died_at,
        cancel_requested,
    })
}

/// A claim's `RETURNING` rows, read on the writer's thread into one
/// buffer: the caller builds the [`Job`]s, and so allocates their payloads
/// and names, on its own thread, where the job tasks free them. Allocated
/// on the writer's thread and freed on the runtime's while the writer runs
/// the next claim, they made the two threads contend for the allocator
/// (the writer ran its statements ~20 % slower beside a busy Worker).
#[derive(Default)]
pub(crate) struct ClaimedRows {
    bytes: Vec<u8>,
    rows: Vec<ClaimedRow>,
}

/// One claimed row; its payload and unique key are ranges of the buffer.
struct ClaimedRow {
    id: i64,
    priority: i64,
    attempt: u32,
    max_attempts: u32,
    claim_expires_at: i64,
    run_at: i64,
    created_at: i64,
    claimed_at: i64,
    claim_token: i64,
    payload: std::ops::Range<usize>,
    unique_key: Option<std::ops::Range<usize>>,
    tags: Option<std::ops::Range<usize>>,
    meta: Option<std::ops::Range<usize>>,
}

impl ClaimedRows {
    /// Read every row of a claim's `RETURNING id, payload, priority,
    /// attempts, max_attempts, claim_expires_at, run_at, created_at,
    /// unique_key, claimed_at, claim_count, tags, meta`.
    pub(crate) fn read(mut rows: rusqlite::Rows<'_>) -> rusqlite::Result<ClaimedRows> {
        let mut out = ClaimedRows::default();
        while let Some(r) = rows.next()? {
            let payload = out.push(r.get_ref(1)?.as_blob()?);
            let unique_key = r
                .get_ref(8)?
                .as_str_or_null()?
                .map(|k| out.push(k.as_bytes()));
            let tags = r
                .get_ref(11)?
                .as_str_or_null()?
                .map(|t| out.push(t.as_bytes()));
            let meta = r
                .get_ref(12)?
                .as_str_or_null()?
                .map(|m| out.push(m.as_bytes()));
            out.rows.push(ClaimedRow {
                id: r.get(0)?,
                priority: r.get(2)?,
                attempt: r.get(3)?,
                max_attempts: r.get(4)?,
                claim_expires_at: r.get(5)?,
                run_at: r.get(6)?,
                created_at: r.get(7)?,
                claimed_at: r.get(9)?,
                claim_token: r.get(10)?,
                payload,
                unique_key,
                tags,
                meta,
            });
        }
        Ok(out)
    }

    fn push(&mut self, bytes: &[u8]) -> std::ops::Range<usize> {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(bytes);
        start..self.bytes.len()
    }

    pub(crate) fn len(&self) -> usize {
        self.rows.len()
    }

    /// The claimed jobs' ids.
    pub(crate) fn ids(&self) -> impl ExactSizeIterator<Item = i64> + '_ {
        self.rows.iter().map(|r| r.id)
    }

    /// The jobs, claimed from `queue` by `worker`, in claim order.
    pub(crate) fn into_jobs(self, queue: &str, worker: &str) -> Vec<Job> {
        let bytes = &self.bytes;
        let mut jobs: Vec<Job> = self
            .rows
            .into_iter()
            .map(|r| Job {
                id: r.id,
                payload: bytes[r.payload].to_vec(),
                priority: r.priority,
                attempt: r.attempt,
                max_attempts: r.max_attempts,
                claim_expires_at: r.claim_expires_at,
                run_at: r.run_at,
                created_at: r.created_at,
                // Copied from a `&str`, so always UTF-8.
                unique_key: r
                    .unique_key
                    .map(|k| String::from_utf8_lossy(&bytes[k]).into_owned()),
                tags: parse_tags(r.tags.and_then(|t| std::str::from_utf8(&bytes[t]).ok())),
                meta: parse_meta(r.meta.and_then(|m| std::str::from_utf8(&bytes[m]).ok())),
                claimed_at: r.claimed_at,
                claim_token: r.claim_token,
                queue: queue.to_string(),
                worker: worker.to_string(),
            })
            .collect();
        jobs.sort_by(Job::claim_order);
        jobs
    }
}
