//! The value shapes that cross the queue engine traits.

use std::time::Duration;

use crate::validate::{
    secs, validate_duration, validate_queue_name, validate_text, validate_time, validate_worker,
};
use crate::{Error, Limits, Result};

/// The attempts a job gets when neither its queue's options
/// ([`QueueOpts::max_attempts`]) nor its enqueue
/// ([`EnqueueOpts::max_attempts`]) say otherwise.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;

/// Per-queue options, stamped on every row at enqueue so a job keeps the
/// policy it was created with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueOpts {
    /// How long a claim lasts before the job may be claimed again (default 300 s).
    pub visibility_timeout: Duration,
    /// Attempts before a job is dead-lettered (default
    /// [`DEFAULT_MAX_ATTEMPTS`], 3).
    pub max_attempts: u32,
    /// Base of the exponential retry backoff (default 5 s).
    pub backoff_base: Duration,
    /// How long dead letters are kept; `None` keeps them forever (default 7 days).
    pub dead_letter_retention: Option<Duration>,
    /// Keep acked jobs this long (state `completed`) so an operator can see
    /// what ran; pruned by the maintenance sweep. `None` (the default)
    /// deletes a job when it is acked.
    pub keep_completed: Option<Duration>,
}

impl Default for QueueOpts {
    fn default() -> Self {
        QueueOpts {
            visibility_timeout: Duration::from_secs(300),
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            backoff_base: Duration::from_secs(5),
            dead_letter_retention: Some(Duration::from_secs(7 * 24 * 3600)),
            keep_completed: None,
        }
    }
}

/// Options of one enqueue.
///
/// ```
/// use alkstore_core::EnqueueOpts;
/// use std::time::Duration;
/// let opts = EnqueueOpts::default().priority(5).delay(Duration::from_secs(60)).unique_key("user-7");
/// assert_eq!(opts.priority, 5);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnqueueOpts {
    /// Higher runs first (default 0).
    pub priority: i32,
    /// Run no earlier than this long after enqueue.
    pub delay: Option<Duration>,
    /// Run no earlier than this unix time (seconds); wins over `delay`.
    pub run_at: Option<i64>,
    /// Overrides the queue's max attempts for this job.
    pub max_attempts: Option<u32>,
    /// A job not started within this long after it became due moves to dead
    /// as `expired`.
    pub expires_in: Option<Duration>,
    /// At most one live job per queue and unique key.
    pub unique_key: Option<String>,
    /// Labels an operator filters jobs by (at most [`MAX_TAGS`], each a
    /// non-empty text of at most 200 bytes; repeats are kept once).
    pub tags: Vec<String>,
    /// Free-form facts about the job (who asked, a trace id) kept beside
    /// the payload and shown with it; at most [`MAX_META_BYTES`] as JSON.
    /// Empty stores nothing.
    pub meta: serde_json::Map<String, serde_json::Value>,
}

impl EnqueueOpts {
    /// Set the priority (higher runs first).
    #[must_use]
    pub fn priority(mut self, priority: i32) -> Self {
        self.priority = priority;
        self
    }
    /// Delay the first run.
    #[must_use]
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = Some(delay);
        self
    }
    /// Run at a unix time (seconds).
    #[must_use]
    pub fn run_at(mut self, unix_seconds: i64) -> Self {
        self.run_at = Some(unix_seconds);
        self
    }
    /// Override max attempts.
    #[must_use]
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = Some(attempts);
        self
    }
    /// Expire the job if it has not started within `after`.
    #[must_use]
    pub fn expires_in(mut self, after: Duration) -> Self {
        self.expires_in = Some(after);
        self
    }
    /// Deduplicate on a key among live jobs of the queue.
    #[must_use]
    pub fn unique_key(mut self, key: impl Into<String>) -> Self {
        self.unique_key = Some(key.into());
        self
    }
    /// Add a tag.
    #[must_use]
    pub fn tag(mut self, tag: impl Into<String>) -> Self {
        self.tags.push(tag.into());
        self
    }
    /// Set one metadata entry.
    ///
    /// ```
    /// use alkstore_core::EnqueueOpts;
    /// let opts = EnqueueOpts::default().tag("billing").meta("requested_by", "ops@example.com");
    /// assert_eq!(opts.meta["requested_by"], "ops@example.com");
    /// ```
    #[must_use]
    pub fn meta(mut self, key: impl Into<String>, value: impl Into<serde_json::Value>) -> Self {
        self.meta.insert(key.into(), value.into());
        self
    }
}

/// Most tags one job carries.
pub const MAX_TAGS: usize = 20;

/// Largest job metadata, as compact JSON.
pub const MAX_META_BYTES: usize = 8 * 1024;

/// Tags as stored: a JSON array with repeats dropped, or `None` for none.
pub fn tags_json(tags: &[String]) -> Option<String> {
    if tags.is_empty() {
        return None;
    }
    serde_json::to_string(&distinct_tags(tags)).ok()
}

/// The tags with repeats dropped, in first-seen order.
fn distinct_tags(tags: &[String]) -> Vec<&str> {
    let mut kept: Vec<&str> = Vec::with_capacity(tags.len());
    for t in tags {
        if !kept.contains(&t.as_str()) {
            kept.push(t);
        }
    }
    kept
}

/// Metadata as stored: a JSON object, or `None` when empty.
pub fn meta_json(meta: &serde_json::Map<String, serde_json::Value>) -> Option<String> {
    if meta.is_empty() {
        return None;
    }
    serde_json::to_string(meta).ok()
}

/// Whether a JSON value holds a NUL character in a string or a key.
fn holds_nul(v: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::String(s) => s.contains('\0'),
        serde_json::Value::Array(a) => a.iter().any(holds_nul),
        serde_json::Value::Object(m) => m.iter().any(|(k, v)| k.contains('\0') || holds_nul(v)),
        _ => false,
    }
}

/// Read stored tags back (`None` or unreadable text: no tags).
pub fn parse_tags(json: Option<&str>) -> Vec<String> {
    json.and_then(|j| serde_json::from_str(j).ok())
        .unwrap_or_default()
}

/// Read stored metadata back (`None` or unreadable text: empty).
pub fn parse_meta(json: Option<&str>) -> serde_json::Map<String, serde_json::Value> {
    json.and_then(|j| serde_json::from_str(j).ok())
        .unwrap_or_default()
}

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

/// What a retry did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryOutcome {
    /// Rescheduled to run at this unix time.
    Scheduled(i64),
    /// Out of attempts: moved to dead.
    Dead,
    /// The job's cancellation was requested while it ran: moved to dead as
    /// `cancelled` instead of being retried.
    Cancelled,
    /// The caller's claim is no longer valid; nothing changed.
    NotHeld,
}

/// What one [`Settle`](super::Settle) did, in the order given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settled {
    /// What the retry did.
    Retried(RetryOutcome),
    /// Whether the job moved to dead (false: the claim was not held).
    Failed(bool),
    /// The snoozed job's new due time (`None`: not held, or cancelled).
    Snoozed(Option<i64>),
}

/// What an engine's [`Writes::job_settle`](crate::Writes::job_settle)
/// reports: the outcomes, and whether any left its job claimable at once
/// (a retry or snooze due now by the engine's clock), so the wrapper wakes
/// this process's workers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settlement {
    /// One outcome per [`Settle`](super::Settle), in the order given.
    pub outcomes: Vec<Settled>,
    /// Whether a job is claimable now because of this batch.
    pub claimable_now: bool,
}

/// What a cancel did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelOutcome {
    /// The job was pending: it moved to dead as `cancelled`.
    Cancelled,
    /// The job is running: its cancellation is requested. The worker tells
    /// the handler (cooperative cancel); the job then ends in dead as
    /// `cancelled`, or is acked if the handler finished anyway.
    Requested,
    /// No live job has this id.
    NotFound,
}

/// One failed attempt, as kept on the job.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AttemptError {
    /// The attempt's number.
    pub attempt: u32,
    /// When it failed (unix seconds, the engine's clock).
    pub at: i64,
    /// What the handler reported.
    pub error: String,
}

/// Parse the stored JSON list of attempt errors (empty when absent or bad).
pub fn parse_attempt_errors(json: Option<&str>) -> Vec<AttemptError> {
    json.and_then(|j| serde_json::from_str(j).ok())
        .unwrap_or_default()
}

/// Where a job is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobState {
    /// Waiting (possibly not yet due).
    Pending,
    /// Claimed by a worker.
    Processing,
    /// In the dead-letter table.
    Dead,
    /// Acked and kept (queues with [`QueueOpts::keep_completed`]).
    Completed,
}

impl JobState {
    /// The state as stored (`pending`, `processing`, `dead`, `completed`).
    pub fn as_str(&self) -> &'static str {
        match self {
            JobState::Pending => "pending",
            JobState::Processing => "processing",
            JobState::Dead => "dead",
            JobState::Completed => "completed",
        }
    }

    /// Parse a stored state.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "pending" => Some(JobState::Pending),
            "processing" => Some(JobState::Processing),
            "dead" => Some(JobState::Dead),
            "completed" => Some(JobState::Completed),
            _ => None,
        }
    }
}

/// Everything known about a live or dead job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobInfo {
    /// Job id.
    pub id: i64,
    /// Queue name.
    pub queue: String,
    /// Pending, processing or dead.
    pub state: JobState,
    /// Payload bytes.
    pub payload: Vec<u8>,
    /// Priority.
    pub priority: i64,
    /// Attempts started so far.
    pub attempts: u32,
    /// Attempts allowed.
    pub max_attempts: u32,
    /// When it is (or was) due.
    pub run_at: i64,
    /// When it was enqueued.
    pub created_at: i64,
    /// When a pending job expires.
    pub expires_at: Option<i64>,
    /// The last worker to claim it.
    pub worker: Option<String>,
    /// When the current (or last) claim lapses.
    pub claim_expires_at: Option<i64>,
    /// Its unique key.
    pub unique_key: Option<String>,
    /// Its tags.
    pub tags: Vec<String>,
    /// Its metadata.
    pub meta: serde_json::Map<String, serde_json::Value>,
    /// The last error recorded by retry or fail.
    pub last_error: Option<String>,
    /// Why it died (`failed`, `exhausted`, `expired`, `cancelled`), for dead
    /// jobs.
    pub dead_reason: Option<String>,
    /// When it died (dead jobs) or was acked (completed jobs).
    pub died_at: Option<i64>,
    /// Every failed attempt's error, oldest first (at most
    /// [`MAX_ERRORS_KEPT`], the most recent).
    pub errors: Vec<AttemptError>,
    /// A running job whose cancellation was requested.
    pub cancel_requested: bool,
}

impl JobInfo {
    /// The state to show people at `now` (unix seconds): a pending job due
    /// later is `retryable` when it has run before (it waits out a retry's
    /// backoff) and `scheduled` when its first run is due later; otherwise
    /// the stored state (so `pending` is due now). Only the display
    /// differs: the store keeps one `pending` state, and listing by
    /// `pending` returns all three.
    pub fn shown_state(&self, now: i64) -> &'static str {
        match self.state {
            JobState::Pending if self.run_at > now && self.attempts > 0 => "retryable",
            JobState::Pending if self.run_at > now => "scheduled",
            state => state.as_str(),
        }
    }

    /// When the current claim lapses: only a processing job holds one. A
    /// dead, completed or pending job shows none, whatever its last claim's
    /// expiry was ([`claim_expires_at`](Self::claim_expires_at) keeps that).
    pub fn live_claim_expires_at(&self) -> Option<i64> {
        match self.state {
            JobState::Processing => self.claim_expires_at,
            _ => None,
        }
    }
}

/// The span of one throughput bucket: completions and failures are counted
/// per queue in buckets of this many seconds of the store's clock.
pub const THROUGHPUT_BUCKET_S: i64 = 10;

/// How long throughput buckets are kept one by one; the maintenance sweep
/// folds older ones into coarse buckets of [`THROUGHPUT_COARSE_S`].
pub const THROUGHPUT_RETENTION: std::time::Duration = std::time::Duration::from_secs(3600);

/// The span of a coarse throughput bucket: what the sweep folds buckets
/// past [`THROUGHPUT_RETENTION`] into.
pub const THROUGHPUT_COARSE_S: i64 = 300;

/// How long coarse throughput buckets are kept (a week); the sweep folds
/// older ones into each queue's all-time totals. Also how long queue depth
/// samples are kept.
pub const THROUGHPUT_HISTORY: std::time::Duration = std::time::Duration::from_secs(7 * 86_400);

/// One queue's counts at one moment, sampled by the maintenance sweep (so
/// a chart opened now shows the past week).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueDepthSample {
    /// Queue name.
    pub queue: String,
    /// When (unix seconds, the store's clock).
    pub at: i64,
    /// Pending and due.
    pub ready: u64,
    /// Pending, due later.
    pub scheduled: u64,
    /// Claimed.
    pub processing: u64,
    /// Dead letters.
    pub dead: u64,
}

/// Jobs of one queue finished within one bucket of
/// [`THROUGHPUT_BUCKET_S`] seconds, whoever finished them (any process,
/// any host, the HTTP API).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThroughputBucket {
    /// Queue name.
    pub queue: String,
    /// The bucket's start (unix seconds, a multiple of its span).
    pub start: i64,
    /// Its span in seconds: [`THROUGHPUT_BUCKET_S`] within the last
    /// [`THROUGHPUT_RETENTION`], [`THROUGHPUT_COARSE_S`] before.
    pub span_s: i64,
    /// Jobs acked.
    pub completed: u64,
    /// Attempts that ended in an error reported by their worker: a retry
    /// (the job runs again later or goes to dead when out of attempts) or
    /// a failure (straight to dead). Claims that lapsed are not counted.
    pub failed: u64,
}

/// One queue's finished jobs since the store began counting them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueTotals {
    /// Queue name.
    pub queue: String,
    /// Jobs acked.
    pub completed: u64,
    /// Attempts that ended in a retry or a failure.
    pub failed: u64,
}

/// What `queue_throughput` returns: recent buckets and all-time totals.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueThroughput {
    /// The store's clock when it answered (unix seconds): the last bucket
    /// may still be filling.
    pub now: i64,
    /// Buckets that started within the window, oldest first (then by
    /// queue); a bucket in which nothing finished is absent.
    pub buckets: Vec<ThroughputBucket>,
    /// Every selected queue's totals, by name (monotone: Prometheus
    /// counters).
    pub totals: Vec<QueueTotals>,
}

/// Counts for one queue.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Queue name.
    pub queue: String,
    /// Pending and due now.
    pub ready: u64,
    /// Pending, due later (retryable ones included).
    pub scheduled: u64,
    /// Of `scheduled`: jobs that failed an attempt and wait out their
    /// retry's backoff.
    pub retryable: u64,
    /// Claimed, and the claim is still valid.
    pub processing: u64,
    /// Claimed, but the claim lapsed (its worker died or hangs): the job is
    /// claimed again or dead-lettered by the next claim or sweep.
    pub expired_claims: u64,
    /// Pending past their expiry, waiting to be moved to dead (not ready).
    pub expired: u64,
    /// In the dead-letter table.
    pub dead: u64,
    /// Of `dead`: jobs cancelled (before or while they ran).
    pub cancelled: u64,
    /// Acked and kept ([`QueueOpts::keep_completed`]).
    pub completed: u64,
    /// Age in seconds of the oldest ready job.
    pub oldest_ready_age_s: Option<i64>,
}

impl QueueStats {
    /// Every live job of the queue, whatever its state: ready, scheduled,
    /// processing, with a lapsed claim, or pending past its expiry (zero
    /// means the queue is drained).
    pub fn live(&self) -> u64 {
        self.ready + self.scheduled + self.processing + self.expired_claims + self.expired
    }
}

/// The retry delay in seconds after `attempt` failed: `base * 2^(attempt-1)`,
/// capped at one day, plus up to 25 % jitter derived from `seed` (the job id) so
/// jobs that failed together do not come back together.
///
/// ```
/// use alkstore_core::backoff_delay_s;
/// let d = backoff_delay_s(5, 3, 42);
/// assert!((20..=25).contains(&d));
/// ```
pub fn backoff_delay_s(base_s: i64, attempt: u32, seed: i64) -> i64 {
    const CAP: i64 = 24 * 3600;
    let exp = attempt.saturating_sub(1).min(30);
    let delay = base_s.max(0).saturating_mul(1i64 << exp).min(CAP);
    let jitter_span = delay / 4;
    if jitter_span == 0 {
        return delay;
    }
    // splitmix64 of (seed, attempt): cheap, well spread, no RNG dependency.
    // Bit patterns, not values: reinterpreting the seed is the point.
    let mut z =
        u64::from_ne_bytes(seed.to_ne_bytes()) ^ (u64::from(attempt) << 32) ^ 0x9E37_79B9_7F4A_7C15;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    // jitter_span > 0 here, and the remainder is at most jitter_span.
    let span = u64::try_from(jitter_span).unwrap_or(0) + 1;
    delay + i64::try_from(z % span).unwrap_or(0)
}

#[cfg(test)]
mod tests;
