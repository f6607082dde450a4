//! Jobs: one to enqueue, one enqueued, one claimed, and its claim.

use super::options::{distinct_tags, holds_nul};
use super::*;
use crate::validate::{
    secs, validate_duration, validate_queue_name, validate_text, validate_time, validate_worker,
};
use crate::{Error, Limits, Result};

/// A job to insert, fully described. Engines resolve its relative times
/// against their clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewJob {
    /// Queue name (non-empty, at most 200 bytes of UTF-8, no NUL: see
    /// [`validate_text`](crate::validate::validate_text)).
    pub queue: String,
    /// Opaque payload bytes, stored byte for byte.
    pub payload: Vec<u8>,
    /// Per-job options.
    pub opts: EnqueueOpts,
    /// The queue's options, stamped on the row.
    pub queue_opts: QueueOpts,
}

impl NewJob {
    /// A job with default options.
    pub fn new(queue: impl Into<String>, payload: impl Into<Vec<u8>>) -> Self {
        NewJob {
            queue: queue.into(),
            payload: payload.into(),
            opts: EnqueueOpts::default(),
            queue_opts: QueueOpts::default(),
        }
    }

    /// Replace the per-job options.
    #[must_use]
    pub fn with_opts(mut self, opts: EnqueueOpts) -> Self {
        self.opts = opts;
        self
    }

    /// Replace the queue options.
    #[must_use]
    pub fn with_queue_opts(mut self, queue_opts: QueueOpts) -> Self {
        self.queue_opts = queue_opts;
        self
    }

    /// Check every field against the contract and `limits`; engines call this
    /// before writing anything.
    pub fn validate(&self, limits: &Limits) -> Result<()> {
        validate_queue_name(&self.queue)?;
        if self.payload.len() > limits.max_payload_bytes {
            return Err(Error::PayloadTooLarge {
                size: self.payload.len(),
                limit: limits.max_payload_bytes,
            });
        }
        let attempts = self.max_attempts();
        if attempts < 1 {
            return Err(Error::invalid("max attempts", "must be at least 1"));
        }
        if self.queue_opts.visibility_timeout.as_secs() < 1 {
            return Err(Error::invalid(
                "visibility timeout",
                "must be at least one second",
            ));
        }
        if let Some(key) = &self.opts.unique_key {
            validate_text("unique key", key)?;
        }
        for tag in &self.opts.tags {
            validate_text("tag", tag)?;
        }
        let distinct = distinct_tags(&self.opts.tags).len();
        if distinct > MAX_TAGS {
            return Err(Error::invalid(
                "tags",
                format!("{distinct} tags, more than the {MAX_TAGS} allowed"),
            ));
        }
        // PostgreSQL's jsonb cannot hold `\u0000`: refused on both engines.
        if self
            .opts
            .meta
            .iter()
            .any(|(k, v)| k.contains('\0') || holds_nul(v))
        {
            return Err(Error::invalid("meta", "must not contain a NUL character"));
        }
        if let Some(meta) = self.meta_json() {
            if meta.len() > MAX_META_BYTES {
                return Err(Error::invalid(
                    "meta",
                    format!(
                        "{} bytes as JSON, more than the {MAX_META_BYTES} allowed",
                        meta.len()
                    ),
                ));
            }
        }
        if let Some(e) = self.opts.expires_in {
            if e.as_secs() < 1 {
                return Err(Error::invalid("expiry", "must be at least one second"));
            }
        }
        if let Some(t) = self.opts.run_at {
            validate_time("run_at", t)?;
        }
        validate_duration("delay", self.opts.delay)?;
        validate_duration("expiry", self.opts.expires_in)?;
        let q = &self.queue_opts;
        validate_duration("visibility timeout", Some(q.visibility_timeout))?;
        validate_duration("backoff base", Some(q.backoff_base))?;
        validate_duration("dead letter retention", q.dead_letter_retention)?;
        validate_duration("keep completed", q.keep_completed)?;
        Ok(())
    }

    /// Validate every job of a batch; the first failure is the error.
    pub fn validate_batch(jobs: &[NewJob], limits: &Limits) -> Result<()> {
        jobs.iter().try_for_each(|j| j.validate(limits))
    }

    /// The distinct queue names of a batch, in first-seen order (for wake
    /// hints; batches usually name one queue).
    pub fn distinct_queues(jobs: &[NewJob]) -> Vec<String> {
        let mut queues: Vec<String> = Vec::new();
        for j in jobs {
            if !queues.contains(&j.queue) {
                queues.push(j.queue.clone());
            }
        }
        queues
    }

    /// The effective max attempts (per-job override or the queue's).
    pub fn max_attempts(&self) -> u32 {
        self.opts
            .max_attempts
            .unwrap_or(self.queue_opts.max_attempts)
    }

    /// Seconds after enqueue the job becomes due (0 when not delayed).
    pub fn delay_s(&self) -> i64 {
        self.opts.delay.map(secs).unwrap_or(0)
    }

    /// The row's resolved times: `(run_at, expires_at)` against `now`.
    /// Saturates instead of overflowing; [`NewJob::validate`] rejects times
    /// that far out anyway.
    pub fn times(&self, now: i64) -> (i64, Option<i64>) {
        let run_at = self
            .opts
            .run_at
            .unwrap_or_else(|| now.saturating_add(self.delay_s()));
        let expires = self
            .opts
            .expires_in
            .map(|e| run_at.max(now).saturating_add(secs(e)));
        (run_at, expires)
    }

    /// Visibility timeout in seconds.
    pub fn visibility_timeout_s(&self) -> i64 {
        secs(self.queue_opts.visibility_timeout)
    }

    /// Backoff base in seconds.
    pub fn backoff_base_s(&self) -> i64 {
        secs(self.queue_opts.backoff_base)
    }

    /// Dead-letter retention in seconds.
    pub fn dead_letter_retention_s(&self) -> Option<i64> {
        self.queue_opts.dead_letter_retention.map(secs)
    }

    /// How long to keep the job once acked, in seconds (`None`: delete it).
    pub fn keep_completed_s(&self) -> Option<i64> {
        self.queue_opts.keep_completed.map(secs)
    }

    /// The tags as stored (see [`tags_json`]).
    pub fn tags_json(&self) -> Option<String> {
        tags_json(&self.opts.tags)
    }

    /// The metadata as stored (see [`meta_json`]).
    pub fn meta_json(&self) -> Option<String> {
        meta_json(&self.opts.meta)
    }
}

/// The result of one enqueue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enqueued {
    /// A new row with this id.
    Inserted(i64),
    /// A live job with the same queue and unique key already exists.
    Duplicate(i64),
}

impl Enqueued {
    /// The job's id, new or existing.
    pub fn id(&self) -> i64 {
        match self {
            Enqueued::Inserted(id) | Enqueued::Duplicate(id) => *id,
        }
    }
}

/// The result of `job_enqueue_claimed`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnqueuedClaimed {
    /// The enqueue's outcome, as `job_enqueue` would give it.
    pub enqueued: Enqueued,
    /// The new job, claimed for the worker; `None` when it was left pending
    /// (not due yet, it has a unique key, its queue is paused, or another due
    /// job is ahead of it), in which case wake hints went out as for any
    /// enqueue.
    pub claimed: Option<Job>,
}

/// A claimed job, handed to exactly one worker until its claim expires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// Job id (never reused).
    pub id: i64,
    /// Queue name.
    pub queue: String,
    /// Payload bytes as enqueued.
    pub payload: Vec<u8>,
    /// Priority.
    pub priority: i64,
    /// This attempt's number, starting at 1.
    pub attempt: u32,
    /// Attempts allowed.
    pub max_attempts: u32,
    /// The claiming worker.
    pub worker: String,
    /// When this claim lapses (unix seconds, the engine's clock).
    pub claim_expires_at: i64,
    /// When it was claimed (unix seconds, the engine's clock): with
    /// `claim_expires_at` it gives the claim's length without reading the
    /// worker host's clock.
    pub claimed_at: i64,
    /// When the job became due (unix seconds).
    pub run_at: i64,
    /// When it was enqueued (unix seconds).
    pub created_at: i64,
    /// Its unique key, if any.
    pub unique_key: Option<String>,
    /// Its tags, as enqueued.
    pub tags: Vec<String>,
    /// Its metadata, as enqueued.
    pub meta: serde_json::Map<String, serde_json::Value>,
    /// This claim's token: the job's claim count, which grows on every claim
    /// (release and snooze give the attempt back, never the token).
    pub claim_token: i64,
}

impl Job {
    /// The contract's claim order: priority DESC, then run_at, then id.
    /// Engines sort claimed rows with it (`RETURNING` has no order).
    pub fn claim_order(a: &Job, b: &Job) -> std::cmp::Ordering {
        b.priority
            .cmp(&a.priority)
            .then(a.run_at.cmp(&b.run_at))
            .then(a.id.cmp(&b.id))
    }

    /// The proof of this claim that ack, retry, fail, snooze, heartbeat and
    /// release need.
    pub fn claim(&self) -> Claim {
        Claim {
            id: self.id,
            worker: self.worker.clone(),
            token: self.claim_token,
        }
    }
}

/// Proof of a claim: a job id, its worker and the claim's token. Every claim
/// of a job gets a new token (the job's claim count), so a claim that expired,
/// was released or was snoozed never matches the row again, even when the
/// same worker name claims the job once more.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Claim {
    /// Job id.
    pub id: i64,
    /// The worker that claimed it.
    pub worker: String,
    /// The claim's token ([`Job::claim_token`]).
    pub token: i64,
}

impl Claim {
    /// Validate against the contract.
    pub fn validate(&self) -> Result<()> {
        validate_worker(&self.worker)
    }
}

/// Longest error text kept per attempt; longer texts are cut (on a character
/// boundary) so a handler's huge error cannot bloat the row.
pub const MAX_ERROR_BYTES: usize = 4096;

/// Attempt errors kept per job (the most recent ones).
pub const MAX_ERRORS_KEPT: usize = 20;

/// Cut `error` to [`MAX_ERROR_BYTES`] on a character boundary, with any NUL
/// replaced by U+FFFD: PostgreSQL cannot store NUL in text, and a failure
/// report (often a program's raw output) must not be refused for one.
pub fn truncate_error(mut error: String) -> String {
    if error.contains('\0') {
        error = error.replace('\0', "\u{FFFD}");
    }
    if error.len() > MAX_ERROR_BYTES {
        let mut end = MAX_ERROR_BYTES;
        while !error.is_char_boundary(end) {
            end -= 1;
        }
        error.truncate(end);
    }
    error
}
