//! What the queue reads return: a job as shown, pages of jobs and dead
//! letters, a queue's counts, the throughput figures, and the query
//! parameters that page and filter them: what the `GET` routes take and
//! answer, apart from the writes' bodies in `wire`.

use alkstore::{
    queue::{JobInfo, QueueStats, QueueThroughput, THROUGHPUT_BUCKET_S},
    Clock, SystemClock,
};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::payload::decode;

/// Everything known about a job, live or dead.
#[derive(Debug, Serialize, ToSchema)]
pub struct JobView {
    /// Job id: unique and growing, not dense. On SQLite each process takes
    /// ids in blocks of 1,024, so jobs enqueued by different processes jump
    /// by up to 1,024.
    pub id: i64,
    /// Its queue.
    pub queue: String,
    /// As shown: `pending` (due now), `retryable` (waiting out a retry's
    /// backoff after a failed attempt), `scheduled` (first run due later),
    /// `processing`, `dead` or `completed`.
    pub state: String,
    /// The payload (null when not JSON; see `payload_base64`).
    pub payload: serde_json::Value,
    /// The payload's bytes in base64, when they are not JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload_base64: Option<String>,
    /// Priority.
    pub priority: i64,
    /// Attempts started.
    pub attempts: u32,
    /// Attempts allowed.
    pub max_attempts: u32,
    /// When it is (or was) due (unix seconds).
    pub run_at: i64,
    /// When it was enqueued (unix seconds).
    pub created_at: i64,
    /// When a pending job expires (unix seconds).
    pub expires_at: Option<i64>,
    /// The last worker to claim it.
    pub worker: Option<String>,
    /// When the claim lapses (unix seconds): processing jobs only (a dead,
    /// completed or waiting job holds no claim).
    pub claim_expires_at: Option<i64>,
    /// Its unique key.
    pub unique_key: Option<String>,
    /// Its tags.
    pub tags: Vec<String>,
    /// Its metadata (an empty object when none).
    #[schema(value_type = Object)]
    pub meta: serde_json::Map<String, serde_json::Value>,
    /// The last error recorded.
    pub last_error: Option<String>,
    /// Why it died: `failed`, `exhausted`, `expired` or `cancelled`.
    pub dead_reason: Option<String>,
    /// When it died, or was acked (completed jobs), in unix seconds.
    pub died_at: Option<i64>,
    /// Each failed attempt's error, oldest first.
    pub errors: Vec<AttemptErrorView>,
    /// A running job whose cancellation was requested.
    pub cancel_requested: bool,
}

/// One failed attempt.
#[derive(Debug, Serialize, ToSchema)]
pub struct AttemptErrorView {
    /// The attempt's number.
    pub attempt: u32,
    /// When it failed (unix seconds).
    pub at: i64,
    /// What the handler reported.
    pub error: String,
}

impl JobView {
    /// The job as shown at `now` (unix seconds).
    pub(crate) fn new(j: JobInfo, now: i64) -> Self {
        let (payload, payload_base64) = decode(&j.payload);
        JobView {
            state: j.shown_state(now).to_string(),
            claim_expires_at: j.live_claim_expires_at(),
            id: j.id,
            queue: j.queue,
            payload,
            payload_base64,
            priority: j.priority,
            attempts: j.attempts,
            max_attempts: j.max_attempts,
            run_at: j.run_at,
            created_at: j.created_at,
            expires_at: j.expires_at,
            worker: j.worker,
            unique_key: j.unique_key,
            tags: j.tags,
            meta: j.meta,
            last_error: j.last_error,
            dead_reason: j.dead_reason,
            died_at: j.died_at,
            errors: j
                .errors
                .into_iter()
                .map(|e| AttemptErrorView {
                    attempt: e.attempt,
                    at: e.at,
                    error: e.error,
                })
                .collect(),
            cancel_requested: j.cancel_requested,
        }
    }
}

/// A page of jobs.
#[derive(Debug, Serialize, ToSchema)]
pub struct JobPage {
    /// Lowest ids first.
    pub jobs: Vec<JobView>,
    /// Pass as `after_id` for the next page (absent on the last).
    pub next_after_id: Option<i64>,
}

impl JobPage {
    pub(super) fn new(jobs: Vec<JobInfo>, limit: u32) -> JobPage {
        let full = jobs.len() >= limit as usize;
        let next_after_id = if full {
            jobs.last().map(|j| j.id)
        } else {
            None
        };
        let now = SystemClock.now();
        JobPage {
            jobs: jobs.into_iter().map(|j| JobView::new(j, now)).collect(),
            next_after_id,
        }
    }
}

/// A queue's counts.
#[derive(Debug, Serialize, ToSchema)]
pub struct QueueView {
    /// Queue name.
    pub queue: String,
    /// Waiting and due now.
    pub ready: u64,
    /// Waiting, due later (the retryable ones included).
    pub scheduled: u64,
    /// Of `scheduled`: waiting out a retry's backoff.
    pub retryable: u64,
    /// Claimed, claim valid.
    pub processing: u64,
    /// Claimed, claim lapsed (the worker died or hangs).
    pub expired_claims: u64,
    /// Past their expiry, about to be dead.
    pub expired: u64,
    /// Dead letters.
    pub dead: u64,
    /// Of `dead`: cancelled.
    pub cancelled: u64,
    /// Acked and kept.
    pub completed: u64,
    /// Age in seconds of the oldest ready job.
    pub oldest_ready_age_s: Option<i64>,
    /// Paused: nothing is claimed from it.
    pub paused: bool,
}

impl QueueView {
    pub(super) fn new(s: QueueStats, paused: bool) -> QueueView {
        QueueView {
            queue: s.queue,
            ready: s.ready,
            scheduled: s.scheduled,
            retryable: s.retryable,
            processing: s.processing,
            expired_claims: s.expired_claims,
            expired: s.expired,
            dead: s.dead,
            cancelled: s.cancelled,
            completed: s.completed,
            oldest_ready_age_s: s.oldest_ready_age_s,
            paused,
        }
    }
}

/// Every queue with its counts.
#[derive(Debug, Serialize, ToSchema)]
pub struct QueueList {
    /// By name.
    pub queues: Vec<QueueView>,
}

/// Paging through jobs.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct PageQuery {
    /// Only this state: `pending` (waiting: also the jobs shown
    /// `retryable` or `scheduled`), `processing` or `completed` (job
    /// listing only).
    #[param(pattern = "^(pending|processing|completed)$")]
    pub state: Option<String>,
    /// Only jobs carrying this tag.
    pub tag: Option<String>,
    /// Start after this id.
    pub after_id: Option<i64>,
    /// 1 to 1,000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u32>,
}

/// Which throughput to read.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ThroughputQuery {
    /// Only this queue (default: every queue).
    #[param(min_length = 1, max_length = 200)]
    pub queue: Option<String>,
    /// Seconds back from now, 1 to 604,800 (a week; default 300). Within
    /// the last hour buckets are 10 s; before it, 5 minutes.
    #[param(minimum = 1, maximum = 604800)]
    pub window_s: Option<u64>,
}

/// Jobs of one queue finished within one bucket.
#[derive(Debug, Serialize, ToSchema)]
pub struct ThroughputBucketView {
    /// Queue name.
    pub queue: String,
    /// The bucket's start (unix seconds, a multiple of `span_s`).
    pub start: i64,
    /// The bucket's span in seconds: 10 within the last hour, 300 before
    /// (older buckets are folded coarser, and kept a week).
    pub span_s: i64,
    /// Jobs acked.
    pub completed: u64,
    /// Attempts that ended in a retry or a failure.
    pub failed: u64,
}

/// One queue's finished jobs since the store began counting.
#[derive(Debug, Serialize, ToSchema)]
pub struct QueueTotalsView {
    /// Queue name.
    pub queue: String,
    /// Jobs acked.
    pub completed: u64,
    /// Attempts that ended in a retry or a failure.
    pub failed: u64,
}

/// Recent buckets and all-time totals.
#[derive(Debug, Serialize, ToSchema)]
pub struct ThroughputView {
    /// The store's clock (unix seconds): the newest bucket may still be
    /// filling.
    pub now: i64,
    /// Seconds per bucket within the last hour (each bucket says its own
    /// span: older ones are coarser).
    pub bucket_s: i64,
    /// Buckets within the window, oldest first, then by queue; a bucket in
    /// which nothing finished is absent.
    pub buckets: Vec<ThroughputBucketView>,
    /// Every selected queue's totals, by name.
    pub totals: Vec<QueueTotalsView>,
}

impl From<QueueThroughput> for ThroughputView {
    fn from(t: QueueThroughput) -> Self {
        ThroughputView {
            now: t.now,
            bucket_s: THROUGHPUT_BUCKET_S,
            buckets: t
                .buckets
                .into_iter()
                .map(|b| ThroughputBucketView {
                    queue: b.queue,
                    start: b.start,
                    span_s: b.span_s,
                    completed: b.completed,
                    failed: b.failed,
                })
                .collect(),
            totals: t
                .totals
                .into_iter()
                .map(|q| QueueTotalsView {
                    queue: q.queue,
                    completed: q.completed,
                    failed: q.failed,
                })
                .collect(),
        }
    }
}

/// Paging through dead letters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct DeadPageQuery {
    /// Only dead letters carrying this tag.
    pub tag: Option<String>,
    /// Start after this id.
    pub after_id: Option<i64>,
    /// 1 to 1,000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u32>,
}

/// Which depth samples to read.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct DepthQuery {
    /// Only this queue (default: every queue).
    #[param(min_length = 1, max_length = 200)]
    pub queue: Option<String>,
    /// Seconds back from now, 1 to 604,800 (a week; default 86,400).
    #[param(minimum = 1, maximum = 604800)]
    pub window_s: Option<u64>,
}

/// One queue's counts at one moment.
#[derive(Debug, Serialize, ToSchema)]
pub struct DepthSampleView {
    /// Queue name.
    pub queue: String,
    /// When (unix seconds).
    pub at: i64,
    /// Waiting and due.
    pub ready: u64,
    /// Waiting, due later.
    pub scheduled: u64,
    /// Claimed.
    pub processing: u64,
    /// Dead letters.
    pub dead: u64,
}

/// Queue depth over time.
#[derive(Debug, Serialize, ToSchema)]
pub struct DepthView {
    /// Oldest first, then by queue: one per queue each time the
    /// maintenance sweep ran (once a minute by default).
    pub samples: Vec<DepthSampleView>,
}
