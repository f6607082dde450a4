//! Options: a queue's, an enqueue's, and the tags and metadata a job carries.

use std::time::Duration;

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
pub(super) fn distinct_tags(tags: &[String]) -> Vec<&str> {
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
pub(super) fn holds_nul(v: &serde_json::Value) -> bool {
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
