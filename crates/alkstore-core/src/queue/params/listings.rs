//! Parameters of the listings and bulk selections: jobs by state, dead
//! letters, throughput and depth history.

use std::time::Duration;

use crate::validate::{validate_queue_name, validate_text};
use crate::Error;
use crate::{Limits, Result};

use crate::queue::types::{JobState, THROUGHPUT_HISTORY};

/// Which live jobs to list.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct JobListParams {
    /// Only this queue (all queues when `None`).
    pub queue: Option<String>,
    /// Only jobs in this state (`Pending`, `Processing` or `Completed`; all
    /// live jobs when `None`).
    pub state: Option<JobState>,
    /// Only jobs carrying this tag.
    pub tag: Option<String>,
    /// Only ids greater than this (for paging).
    pub after_id: Option<i64>,
    /// Most rows to return (1..=10,000).
    pub limit: u32,
}

impl JobListParams {
    /// Up to `limit` live jobs of every queue and state.
    pub fn new(limit: u32) -> Self {
        JobListParams {
            queue: None,
            state: None,
            tag: None,
            after_id: None,
            limit,
        }
    }

    /// Only jobs of `queue`.
    #[must_use]
    pub fn queue(mut self, queue: impl Into<String>) -> Self {
        self.queue = Some(queue.into());
        self
    }

    /// Only jobs in `state`.
    #[must_use]
    pub fn state(mut self, state: JobState) -> Self {
        self.state = Some(state);
        self
    }

    /// Only jobs carrying `tag`.
    #[must_use]
    pub fn tag(mut self, tag: impl Into<String>) -> Self {
        self.tag = Some(tag.into());
        self
    }

    /// Only ids greater than `id` (the last id of the previous page).
    #[must_use]
    pub fn after_id(mut self, id: i64) -> Self {
        self.after_id = Some(id);
        self
    }

    /// Validate against the contract and `limits`.
    pub fn validate(&self, limits: &Limits) -> Result<()> {
        if let Some(q) = &self.queue {
            validate_queue_name(q)?;
        }
        if let Some(t) = &self.tag {
            validate_text("tag", t)?;
        }
        if self.state == Some(JobState::Dead) {
            return Err(Error::invalid(
                "state",
                "dead jobs are listed with dead_list",
            ));
        }
        limits.check_page("limit", self.limit)
    }
}

/// Which dead letters to list.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeadListParams {
    /// Only this queue (all queues when `None`).
    pub queue: Option<String>,
    /// Only dead letters carrying this tag.
    pub tag: Option<String>,
    /// Only ids greater than this (for paging).
    pub after_id: Option<i64>,
    /// Most rows to return (1..=10,000).
    pub limit: u32,
}

/// Which dead letters to requeue or purge.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeadSelect {
    /// Only this queue (all queues when `None`).
    pub queue: Option<String>,
    /// Only these ids (all matching the queue when `None`).
    pub ids: Option<Vec<i64>>,
    /// Act on at most this many (lowest ids first) in one transaction, so a
    /// bulk operation can run in bounded batches with commits between
    /// (1..=10,000; all at once when `None`).
    pub limit: Option<u32>,
}

impl DeadListParams {
    /// Up to `limit` dead letters of every queue.
    pub fn new(limit: u32) -> Self {
        DeadListParams {
            queue: None,
            tag: None,
            after_id: None,
            limit,
        }
    }

    /// Only dead letters of `queue`.
    #[must_use]
    pub fn queue(mut self, queue: impl Into<String>) -> Self {
        self.queue = Some(queue.into());
        self
    }

    /// Only dead letters carrying `tag`.
    #[must_use]
    pub fn tag(mut self, tag: impl Into<String>) -> Self {
        self.tag = Some(tag.into());
        self
    }

    /// Only ids greater than `id` (the last id of the previous page).
    #[must_use]
    pub fn after_id(mut self, id: i64) -> Self {
        self.after_id = Some(id);
        self
    }

    /// Validate against the contract and `limits`.
    pub fn validate(&self, limits: &Limits) -> Result<()> {
        if let Some(q) = &self.queue {
            validate_queue_name(q)?;
        }
        if let Some(t) = &self.tag {
            validate_text("tag", t)?;
        }
        limits.check_page("limit", self.limit)
    }
}

impl DeadSelect {
    /// Every dead letter of every queue.
    pub fn all() -> Self {
        DeadSelect {
            queue: None,
            ids: None,
            limit: None,
        }
    }

    /// Every dead letter of `queue`.
    pub fn queue(queue: impl Into<String>) -> Self {
        DeadSelect {
            queue: Some(queue.into()),
            ids: None,
            limit: None,
        }
    }

    /// These dead letters.
    pub fn ids(ids: Vec<i64>) -> Self {
        DeadSelect {
            queue: None,
            ids: Some(ids),
            limit: None,
        }
    }

    /// Only these ids among them (`DeadSelect::queue(q).with_ids(ids)`:
    /// those of `ids` that are dead letters of `q`).
    #[must_use]
    pub fn with_ids(mut self, ids: Vec<i64>) -> Self {
        self.ids = Some(ids);
        self
    }

    /// At most `n` of them per call (a batch).
    #[must_use]
    pub fn limit(mut self, n: u32) -> Self {
        self.limit = Some(n);
        self
    }

    /// Validate against the contract and `limits`.
    pub fn validate(&self, limits: &Limits) -> Result<()> {
        if let Some(q) = &self.queue {
            validate_queue_name(q)?;
        }
        if let Some(n) = self.limit {
            limits.check_page("batch limit", n)?;
        }
        Ok(())
    }
}

/// Parameters of `queue_throughput`: which queue, and how far back.
///
/// ```
/// use std::time::Duration;
/// use alkstore_core::QueueThroughputParams;
/// let last_5_min = QueueThroughputParams::every_queue(Duration::from_secs(300));
/// assert!(last_5_min.queue.is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct QueueThroughputParams {
    /// One queue, or every queue (`None`).
    pub queue: Option<String>,
    /// The span of buckets to return, back from now (1 s up to
    /// [`THROUGHPUT_HISTORY`]).
    pub window: Duration,
}

impl QueueThroughputParams {
    /// Every queue's buckets over `window`.
    pub fn every_queue(window: Duration) -> Self {
        QueueThroughputParams {
            queue: None,
            window,
        }
    }

    /// One queue's buckets over `window`.
    pub fn queue(queue: impl Into<String>, window: Duration) -> Self {
        QueueThroughputParams {
            queue: Some(queue.into()),
            window,
        }
    }

    /// Validate against the contract.
    pub fn validate(&self, _limits: &Limits) -> Result<()> {
        if let Some(q) = &self.queue {
            validate_queue_name(q)?;
        }
        if self.window < Duration::from_secs(1) || self.window > THROUGHPUT_HISTORY {
            return Err(Error::invalid(
                "throughput window",
                format!(
                    "{:?} is outside 1 s..={} s",
                    self.window,
                    THROUGHPUT_HISTORY.as_secs()
                ),
            ));
        }
        Ok(())
    }

    /// The window in whole seconds (at least 1).
    pub fn window_s(&self) -> i64 {
        i64::try_from(self.window.as_secs()).unwrap_or(i64::MAX)
    }
}

/// Parameters of `queue_depth_history`: which queue's samples, how far
/// back.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct QueueDepthParams {
    /// One queue, or every queue (`None`).
    pub queue: Option<String>,
    /// How far back from now (1 s up to [`THROUGHPUT_HISTORY`]).
    pub window: Duration,
}

impl QueueDepthParams {
    /// Samples of `queue` (every queue when `None`) over `window`.
    pub fn new(queue: Option<String>, window: Duration) -> Self {
        QueueDepthParams { queue, window }
    }

    /// The window in whole seconds (at least 1).
    pub fn window_s(&self) -> i64 {
        i64::try_from(self.window.as_secs()).unwrap_or(i64::MAX)
    }

    /// Validate against the contract.
    pub fn validate(&self, _limits: &Limits) -> Result<()> {
        if let Some(q) = &self.queue {
            validate_queue_name(q)?;
        }
        if self.window < Duration::from_secs(1) || self.window > THROUGHPUT_HISTORY {
            return Err(Error::invalid(
                "depth window",
                format!(
                    "{:?} is outside 1 s..={} s",
                    self.window,
                    THROUGHPUT_HISTORY.as_secs()
                ),
            ));
        }
        Ok(())
    }
}
