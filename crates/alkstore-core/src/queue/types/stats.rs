//! What inspection reads: a job's state and record, the queue's counts,
//! throughput and depth, and the retry backoff.

use super::*;

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
