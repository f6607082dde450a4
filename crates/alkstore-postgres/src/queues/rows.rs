//! Row shapes of the queue area on PostgreSQL: the column arrays of a batch
//! enqueue and the decoding of `JobInfo` rows.

use alkstore_core::queue::{parse_attempt_errors, parse_meta, parse_tags};
use alkstore_core::validate::{attempts, secs};
use alkstore_core::{Job, JobInfo, JobState, NewJob};
use tokio_postgres::Row;

/// Column arrays of a batch enqueue, in the `unnest` order of `sql.rs`.
pub(crate) struct Columns {
    pub(crate) queue: Vec<String>,
    pub(crate) payload: Vec<Vec<u8>>,
    pub(crate) priority: Vec<i64>,
    pub(crate) run_at: Vec<Option<i64>>,
    pub(crate) delay_s: Vec<i64>,
    pub(crate) max_attempts: Vec<i64>,
    pub(crate) expires_in: Vec<Option<i64>>,
    pub(crate) vis: Vec<i64>,
    pub(crate) backoff: Vec<i64>,
    pub(crate) retention: Vec<Option<i64>>,
    pub(crate) unique_key: Vec<Option<String>>,
    pub(crate) keep: Vec<Option<i64>>,
    pub(crate) tags: Vec<Option<String>>,
    pub(crate) meta: Vec<Option<String>>,
}

impl Columns {
    pub(crate) fn new(jobs: Vec<NewJob>) -> Columns {
        let n = jobs.len();
        let mut c = Columns {
            queue: Vec::with_capacity(n),
            payload: Vec::with_capacity(n),
            priority: Vec::with_capacity(n),
            run_at: Vec::with_capacity(n),
            delay_s: Vec::with_capacity(n),
            max_attempts: Vec::with_capacity(n),
            expires_in: Vec::with_capacity(n),
            vis: Vec::with_capacity(n),
            backoff: Vec::with_capacity(n),
            retention: Vec::with_capacity(n),
            unique_key: Vec::with_capacity(n),
            keep: Vec::with_capacity(n),
            tags: Vec::with_capacity(n),
            meta: Vec::with_capacity(n),
        };
        for j in jobs {
            c.priority.push(j.opts.priority.into());
            c.run_at.push(j.opts.run_at);
            c.delay_s.push(j.delay_s());
            c.max_attempts.push(j.max_attempts().into());
            c.expires_in.push(j.opts.expires_in.map(secs));
            c.vis.push(j.visibility_timeout_s());
            c.backoff.push(j.backoff_base_s());
            c.retention.push(j.dead_letter_retention_s());
            c.keep.push(j.keep_completed_s());
            c.tags.push(j.tags_json());
            c.meta.push(j.meta_json());
            c.queue.push(j.queue);
            c.payload.push(j.payload);
            c.unique_key.push(j.opts.unique_key);
        }
        c
    }
}

/// Which table a `JobInfo` row comes from (see `sql.rs` for the columns).
#[derive(Clone, Copy)]
pub(crate) enum Source {
    Live,
    Dead,
    Done,
}

pub(crate) fn job_info(r: &Row, source: Source) -> JobInfo {
    let errors: Option<String> = r.get(13);
    let tags: Option<String> = r.get(14);
    let meta: Option<String> = r.get(15);
    let (state, dead_reason, died_at, cancel_requested) = match source {
        Source::Dead => (
            JobState::Dead,
            Some(r.get::<_, String>(16)),
            Some(r.get(17)),
            false,
        ),
        Source::Live => {
            let s: String = r.get(16);
            (
                JobState::parse(&s).unwrap_or(JobState::Pending),
                None,
                None,
                r.get(17),
            )
        }
        Source::Done => (JobState::Completed, None, Some(r.get(16)), false),
    };
    JobInfo {
        id: r.get(0),
        queue: r.get(1),
        payload: r.get(2),
        priority: r.get(3),
        run_at: r.get(4),
        attempts: attempts(r.get(5)),
        max_attempts: attempts(r.get(6)),
        worker: r.get(7),
        claim_expires_at: r.get(8),
        created_at: r.get(9),
        expires_at: r.get(10),
        unique_key: r.get(11),
        last_error: r.get(12),
        errors: parse_attempt_errors(errors.as_deref()),
        tags: parse_tags(tags.as_deref()),
        meta: parse_meta(meta.as_deref()),
        state,
        dead_reason,
        died_at,
        cancel_requested,
    }
}

/// Decode a claim's `RETURNING` row (columns as in `sql.rs`'s `claim`).
pub(crate) fn claimed(r: &Row, queue: &str, worker: &str) -> Job {
    Job {
        id: r.get(0),
        payload: r.get(1),
        priority: r.get(2),
        attempt: attempts(r.get(3)),
        max_attempts: attempts(r.get(4)),
        claim_expires_at: r.get(5),
        run_at: r.get(6),
        created_at: r.get(7),
        unique_key: r.get(8),
        claimed_at: r.get(9),
        claim_token: r.get(10),
        tags: parse_tags(r.get::<_, Option<&str>>(11)),
        meta: parse_meta(r.get::<_, Option<&str>>(12)),
        queue: queue.to_string(),
        worker: worker.to_string(),
    }
}
