//! The parameters of queue engine calls, each validating itself against
//! the store's [`Limits`].

use std::time::Duration;

use crate::validate::{validate_duration, validate_queue_name, validate_worker};
use crate::Error;
use crate::{Limits, Result};

use crate::queue::types::{Claim, NewJob};

mod listings;
pub use listings::*;

/// Parameters of a claim.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct JobClaimParams {
    /// The queue to claim from.
    pub queue: String,
    /// Who claims (recorded on the row).
    pub worker: String,
    /// Most jobs to return (1..=`Limits::max_claim`).
    pub limit: u32,
}

impl JobClaimParams {
    /// Claim up to `limit` jobs of `queue` for `worker`.
    pub fn new(queue: impl Into<String>, worker: impl Into<String>, limit: u32) -> Self {
        JobClaimParams {
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

/// Parameters of `job_enqueue_claimed`: one job, and the worker to claim it
/// for when nothing is ahead of it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct JobEnqueueClaimedParams {
    /// The job.
    pub job: NewJob,
    /// Who claims it (recorded on the row, as by a claim).
    pub worker: String,
}

impl JobEnqueueClaimedParams {
    /// Enqueue `job`, claimed for `worker` when it can be.
    pub fn new(job: NewJob, worker: impl Into<String>) -> Self {
        JobEnqueueClaimedParams {
            job,
            worker: worker.into(),
        }
    }

    /// Validate against the contract and `limits`.
    pub fn validate(&self, limits: &Limits) -> Result<()> {
        NewJob::validate_batch(std::slice::from_ref(&self.job), limits)?;
        validate_worker(&self.worker)
    }
}

/// Parameters of a retry.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct JobRetryParams {
    /// The caller's claim.
    pub claim: Claim,
    /// Why the attempt failed (kept on the row and in dead letters).
    pub error: String,
    /// Overrides the computed backoff.
    pub delay: Option<Duration>,
}

impl JobRetryParams {
    /// Retry the job held by `claim` after the computed backoff, recording
    /// `error`.
    pub fn new(claim: Claim, error: impl Into<String>) -> Self {
        JobRetryParams {
            claim,
            error: error.into(),
            delay: None,
        }
    }

    /// Retry after `delay` instead of the computed backoff.
    #[must_use]
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = Some(delay);
        self
    }

    /// Validate against the contract (the same limits as every delay).
    pub fn validate(&self, _limits: &Limits) -> Result<()> {
        self.claim.validate()?;
        validate_duration("retry delay", self.delay)
    }
}

/// One finished attempt that did not end in an ack, for
/// [`Writes::job_settle`](crate::Writes::job_settle).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settle {
    /// As [`Writes::job_retry`](crate::Writes::job_retry).
    Retry(JobRetryParams),
    /// As [`Writes::job_fail`](crate::Writes::job_fail).
    Fail {
        /// The caller's claim.
        claim: Claim,
        /// Why (kept on the dead letter).
        error: String,
    },
    /// As [`Writes::job_snooze`](crate::Writes::job_snooze).
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

    /// Validate against the contract and `limits`.
    pub fn validate(&self, limits: &Limits) -> Result<()> {
        match self {
            Settle::Retry(p) => p.validate(limits),
            Settle::Fail { claim, .. } => claim.validate(),
            Settle::Snooze { claim, delay } => {
                claim.validate()?;
                validate_duration("snooze delay", Some(*delay))
            }
        }
    }
}

impl From<JobRetryParams> for Settle {
    fn from(p: JobRetryParams) -> Self {
        Settle::Retry(p)
    }
}

impl From<JobFailParams> for Settle {
    fn from(JobFailParams { claim, error }: JobFailParams) -> Self {
        Settle::Fail { claim, error }
    }
}

impl From<JobSnoozeParams> for Settle {
    fn from(JobSnoozeParams { claim, delay }: JobSnoozeParams) -> Self {
        Settle::Snooze { claim, delay }
    }
}

/// Generates a parameter struct for one engine method that takes one value,
/// with `From` so callers can pass the value itself.
macro_rules! one_value_params {
    ($(#[$doc:meta])* $name:ident { $field:ident: $ty:ty } $(, validate: |$p:ident, $l:ident| $check:expr)?) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq)]
        #[non_exhaustive]
        pub struct $name {
            #[doc = concat!("The call's `", stringify!($field), "`.")]
            pub $field: $ty,
        }

        impl From<$ty> for $name {
            fn from($field: $ty) -> Self {
                $name { $field }
            }
        }

        impl $name {
            #[doc = concat!("With this `", stringify!($field), "`.")]
            pub fn new($field: $ty) -> Self {
                $name { $field }
            }

            /// Validate against the contract and `limits`.
            #[allow(unused_variables)]
            pub fn validate(&self, limits: &Limits) -> Result<()> {
                $( let ($p, $l) = (self, limits); return $check; )?
                #[allow(unreachable_code)]
                Ok(())
            }
        }
    };
}

one_value_params! {
    /// Parameters of `job_enqueue`: the jobs, inserted all or none.
    JobEnqueueParams { jobs: Vec<NewJob> },
    validate: |p, l| NewJob::validate_batch(&p.jobs, l)
}

/// One job: a batch of one.
impl From<NewJob> for JobEnqueueParams {
    fn from(job: NewJob) -> Self {
        JobEnqueueParams { jobs: vec![job] }
    }
}

one_value_params! {
    /// Parameters of `job_ack`: the claims of finished jobs.
    JobAckParams { claims: Vec<Claim> },
    validate: |p, _l| p.claims.iter().try_for_each(Claim::validate)
}

impl From<Claim> for JobAckParams {
    fn from(claim: Claim) -> Self {
        JobAckParams {
            claims: vec![claim],
        }
    }
}

one_value_params! {
    /// Parameters of `job_heartbeat`: the claim to extend.
    JobHeartbeatParams { claim: Claim },
    validate: |p, _l| p.claim.validate()
}

one_value_params! {
    /// Parameters of `job_release`: the claim to hand back.
    JobReleaseParams { claim: Claim },
    validate: |p, _l| p.claim.validate()
}

one_value_params! {
    /// Parameters of `job_settle`: the outcomes to record.
    JobSettleParams { batch: Vec<Settle> },
    validate: |p, l| p.batch.iter().try_for_each(|s| s.validate(l))
}

one_value_params! {
    /// Parameters of `job_cancel_requests`: the running jobs to ask about.
    JobCancelRequestsParams { ids: Vec<i64> }
}

one_value_params! {
    /// Parameters of `job_get`: a job id.
    JobGetParams { id: i64 }
}

one_value_params! {
    /// Parameters of `job_cancel`: a job id.
    JobCancelParams { id: i64 }
}

one_value_params! {
    /// Parameters of `job_unclaim`: a job id.
    JobUnclaimParams { id: i64 }
}

one_value_params! {
    /// Parameters of `job_run_now`: the waiting jobs (scheduled, or
    /// retryable) to make due now; 1 to 1,000 ids.
    JobRunNowParams { ids: Vec<i64> },
    validate: |p, _l| check_ids(&p.ids)
}

one_value_params! {
    /// Parameters of `job_delete`: the pending jobs to delete; 1 to 1,000
    /// ids.
    JobDeleteParams { ids: Vec<i64> },
    validate: |p, _l| check_ids(&p.ids)
}

/// The most jobs one operator action names.
pub const MAX_ACTION_IDS: usize = 1_000;

/// 1 to [`MAX_ACTION_IDS`] positive job ids.
fn check_ids(ids: &[i64]) -> Result<()> {
    if ids.is_empty() || ids.len() > MAX_ACTION_IDS {
        return Err(Error::invalid(
            "ids",
            format!("{} ids: name 1 to {MAX_ACTION_IDS}", ids.len()),
        ));
    }
    if let Some(bad) = ids.iter().find(|id| **id < 1) {
        return Err(Error::invalid(
            "ids",
            format!("job ids are positive, not {bad}"),
        ));
    }
    Ok(())
}

one_value_params! {
    /// Parameters of `queue_stats`: the queue.
    QueueStatsParams { queue: String },
    validate: |p, _l| validate_queue_name(&p.queue)
}

impl From<&str> for QueueStatsParams {
    fn from(queue: &str) -> Self {
        QueueStatsParams {
            queue: queue.to_string(),
        }
    }
}

one_value_params! {
    /// Parameters of `queue_pause` and `queue_resume`: the queue.
    QueuePauseParams { queue: String },
    validate: |p, _l| validate_queue_name(&p.queue)
}

impl From<&str> for QueuePauseParams {
    fn from(queue: &str) -> Self {
        QueuePauseParams {
            queue: queue.to_string(),
        }
    }
}

/// Parameters of `job_fail`: the claim and why it failed for good.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct JobFailParams {
    /// The caller's claim.
    pub claim: Claim,
    /// Why (kept on the dead letter).
    pub error: String,
}

impl JobFailParams {
    /// Fail the job held by `claim` for good, because of `error`.
    pub fn new(claim: Claim, error: impl Into<String>) -> Self {
        JobFailParams {
            claim,
            error: error.into(),
        }
    }

    /// Validate against the contract.
    pub fn validate(&self, _limits: &Limits) -> Result<()> {
        self.claim.validate()
    }
}

/// Parameters of `job_snooze`: the claim and how long to wait.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct JobSnoozeParams {
    /// The caller's claim.
    pub claim: Claim,
    /// Run again after this long.
    pub delay: Duration,
}

impl JobSnoozeParams {
    /// Put the job held by `claim` back to run after `delay`.
    pub fn new(claim: Claim, delay: Duration) -> Self {
        JobSnoozeParams { claim, delay }
    }

    /// Validate against the contract (the same limit as every delay).
    pub fn validate(&self, _limits: &Limits) -> Result<()> {
        self.claim.validate()?;
        validate_duration("snooze delay", Some(self.delay))
    }
}

/// Parameters of `dead_requeue`: which dead letters (see [`DeadSelect`]).
pub type DeadRequeueParams = DeadSelect;
/// Parameters of `dead_purge`: which dead letters (see [`DeadSelect`]).
pub type DeadPurgeParams = DeadSelect;
/// Parameters of `dead_count`: which dead letters (see [`DeadSelect`]).
pub type DeadCountParams = DeadSelect;

pub use crate::call::Validate;

macro_rules! impl_validate {
    ($($ty:ty),* $(,)?) => {
        $(impl Validate for $ty {
            fn validate_params(&self, limits: &Limits) -> Result<()> {
                self.validate(limits)
            }
        })*
    };
}

impl_validate!(
    JobEnqueueParams,
    JobEnqueueClaimedParams,
    JobClaimParams,
    JobAckParams,
    JobRetryParams,
    JobFailParams,
    JobSnoozeParams,
    JobHeartbeatParams,
    JobReleaseParams,
    JobSettleParams,
    JobCancelRequestsParams,
    JobGetParams,
    JobListParams,
    JobCancelParams,
    JobUnclaimParams,
    JobRunNowParams,
    JobDeleteParams,
    QueueStatsParams,
    QueueThroughputParams,
    QueueDepthParams,
    QueuePauseParams,
    DeadListParams,
    DeadSelect,
);
