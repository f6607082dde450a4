//! The parameters of queue engine calls, each validating itself against
//! the store's [`Limits`].

use std::time::Duration;

use crate::validate::{validate_duration, validate_queue_name, validate_worker};
use crate::Error;
use crate::{Limits, Result};

use super::types::{Claim, JobState};

/// Parameters of a claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimParams {
    /// The queue to claim from.
    pub queue: String,
    /// Who claims (recorded on the row).
    pub worker: String,
    /// Most jobs to return (1..=`Limits::max_claim`).
    pub limit: u32,
}

impl ClaimParams {
    /// Claim up to `limit` jobs of `queue` for `worker`.
    pub fn new(queue: impl Into<String>, worker: impl Into<String>, limit: u32) -> Self {
        ClaimParams {
            queue: queue.into(),
            worker: worker.into(),
            limit,
        }
    }

    /// Validate against the contract.
    pub fn validate(&self, limits: &Limits) -> Result<()> {
        validate_queue_name(&self.queue)?;
        validate_worker(&self.worker)?;
        if self.limit < 1 || self.limit > limits.max_claim {
            return Err(Error::invalid(
                "claim limit",
                format!("{} is outside 1..={}", self.limit, limits.max_claim),
            ));
        }
        Ok(())
    }
}

/// Parameters of a retry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryParams {
    /// The caller's claim.
    pub claim: Claim,
    /// Why the attempt failed (kept on the row and in dead letters).
    pub error: String,
    /// Overrides the computed backoff.
    pub delay: Option<Duration>,
}

impl RetryParams {
    /// Validate against the contract (the same limits as every delay).
    pub fn validate(&self) -> Result<()> {
        self.claim.validate()?;
        validate_duration("retry delay", self.delay)
    }
}

/// One finished attempt that did not end in an ack, for
/// [`QueueEngine::job_settle`](super::QueueEngine::job_settle).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settle {
    /// As [`QueueEngine::job_retry`](super::QueueEngine::job_retry).
    Retry(RetryParams),
    /// As [`QueueEngine::job_fail`](super::QueueEngine::job_fail).
    Fail {
        /// The caller's claim.
        claim: Claim,
        /// Why (kept on the dead letter).
        error: String,
    },
    /// As [`QueueEngine::job_snooze`](super::QueueEngine::job_snooze).
    Snooze {
        /// The caller's claim.
        claim: Claim,
        /// Run again after this long.
        delay: Duration,
    },
}

impl Settle {
    /// The claim this outcome settles.
    pub fn claim(&self) -> &Claim {
        match self {
            Settle::Retry(p) => &p.claim,
            Settle::Fail { claim, .. } | Settle::Snooze { claim, .. } => claim,
        }
    }

    /// Validate against the contract.
    pub fn validate(&self) -> Result<()> {
        match self {
            Settle::Retry(p) => p.validate(),
            Settle::Fail { claim, .. } => claim.validate(),
            Settle::Snooze { claim, delay } => {
                claim.validate()?;
                validate_duration("snooze delay", Some(*delay))
            }
        }
    }
}

/// Which live jobs to list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobListParams {
    /// Only this queue (all queues when `None`).
    pub queue: Option<String>,
    /// Only jobs in this state (`Pending`, `Processing` or `Completed`; all
    /// live jobs when `None`).
    pub state: Option<JobState>,
    /// Only ids greater than this (for paging).
    pub after_id: Option<i64>,
    /// Most rows to return (1..=10,000).
    pub limit: u32,
}

impl JobListParams {
    /// Validate against the contract and `limits`.
    pub fn validate(&self, limits: &Limits) -> Result<()> {
        if let Some(q) = &self.queue {
            validate_queue_name(q)?;
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
pub struct DeadListParams {
    /// Only this queue (all queues when `None`).
    pub queue: Option<String>,
    /// Only ids greater than this (for paging).
    pub after_id: Option<i64>,
    /// Most rows to return (1..=10,000).
    pub limit: u32,
}

/// Which dead letters to requeue or purge.
#[derive(Debug, Clone, PartialEq, Eq)]
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
    /// Validate against the contract and `limits`.
    pub fn validate(&self, limits: &Limits) -> Result<()> {
        if let Some(q) = &self.queue {
            validate_queue_name(q)?;
        }
        limits.check_page("limit", self.limit)
    }
}

impl DeadSelect {
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
