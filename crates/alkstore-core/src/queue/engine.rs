//! The queue traits every engine implements: [`QueueEngine`] (the hot path
//! workers use) and [`QueueAdmin`] (inspection, dead letters, operator
//! actions), both on top of the base [`Engine`](crate::Engine).

use std::future::Future;

use crate::{Engine, Result};

use super::params::*;
use super::types::*;

/// The queue hot path: what workers call. Every engine implements it; the
/// contract suite in `alkstore-contract` checks that they all behave the same.
///
/// All methods validate input first and return
/// [`Error::InvalidInput`](crate::Error::InvalidInput) (or
/// [`Error::PayloadTooLarge`](crate::Error::PayloadTooLarge)) without writing
/// anything.
pub trait QueueEngine: Engine {
    /// Insert jobs atomically: all or none. Returns one outcome per job.
    fn job_enqueue(
        &self,
        params: impl Into<JobEnqueueParams> + Send,
    ) -> impl Future<Output = Result<Vec<Enqueued>>> + Send;

    /// Claim up to `limit` due jobs (priority DESC, run_at, id). Expired claims
    /// are handed out again; an expired claim on its last attempt goes to dead.
    fn job_claim(&self, params: JobClaimParams) -> impl Future<Output = Result<Vec<Job>>> + Send;

    /// Delete finished jobs; one flag per claim, true only where the claim was
    /// still valid.
    fn job_ack(
        &self,
        params: impl Into<JobAckParams> + Send,
    ) -> impl Future<Output = Result<Vec<bool>>> + Send;

    /// Reschedule with backoff, or dead-letter when out of attempts.
    fn job_retry(
        &self,
        params: JobRetryParams,
    ) -> impl Future<Output = Result<RetryOutcome>> + Send;

    /// Move straight to dead as `failed`; false when the claim is not held.
    fn job_fail(
        &self,
        params: impl Into<JobFailParams> + Send,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// Put a claimed job back to pending, due after `delay`, without using an
    /// attempt (the handler asked to run again later). Returns the new due
    /// time, or `None` when the claim is not held. A job whose cancellation
    /// was requested goes to dead as `cancelled` instead.
    fn job_snooze(
        &self,
        params: impl Into<JobSnoozeParams> + Send,
    ) -> impl Future<Output = Result<Option<i64>>> + Send;

    /// Extend a valid claim by the job's visibility timeout from now; returns
    /// the new expiry, or `None` when the claim is not held.
    fn job_heartbeat(
        &self,
        params: impl Into<JobHeartbeatParams> + Send,
    ) -> impl Future<Output = Result<Option<i64>>> + Send;

    /// Hand a claimed job back unfinished (graceful shutdown): it is pending
    /// again at once and the attempt is not counted.
    fn job_release(
        &self,
        params: impl Into<JobReleaseParams> + Send,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// Of these job ids, the ones whose cancellation was requested while
    /// they run (the worker polls this to tell its handlers).
    fn job_cancel_requests(
        &self,
        params: impl Into<JobCancelRequestsParams> + Send,
    ) -> impl Future<Output = Result<Vec<i64>>> + Send;

    /// Record many finished attempts that did not end in an ack (retries,
    /// failures, snoozes) in one transaction: one commit for the batch
    /// instead of one per job. Each behaves exactly as its single call;
    /// the outcomes come back in the order given. Invalid input anywhere
    /// rejects the batch before anything is written.
    fn job_settle(
        &self,
        params: impl Into<JobSettleParams> + Send,
    ) -> impl Future<Output = Result<Vec<Settled>>> + Send;
}

/// Queue inspection and operator actions: look up, list and count jobs,
/// cancel or release them, and manage dead letters. Off the hot path.
pub trait QueueAdmin: Engine {
    /// Look up a live, dead or kept completed job.
    fn job_get(
        &self,
        params: impl Into<JobGetParams> + Send,
    ) -> impl Future<Output = Result<Option<JobInfo>>> + Send;

    /// List live jobs in id order.
    fn job_list(&self, params: JobListParams) -> impl Future<Output = Result<Vec<JobInfo>>> + Send;

    /// Cancel a live job: a pending one moves to dead as `cancelled`; a
    /// running one is flagged, and its worker tells the handler.
    fn job_cancel(
        &self,
        params: impl Into<JobCancelParams> + Send,
    ) -> impl Future<Output = Result<CancelOutcome>> + Send;

    /// Hand a processing job back without its claim (an operator's release
    /// of a job whose worker is stuck or gone): pending again at once, the
    /// attempt not counted, and the old claim's token void. False when the
    /// job is not processing.
    fn job_unclaim(
        &self,
        params: impl Into<JobUnclaimParams> + Send,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// Counts for one queue.
    fn queue_stats(
        &self,
        params: impl Into<QueueStatsParams> + Send,
    ) -> impl Future<Output = Result<QueueStats>> + Send;

    /// Names of every queue with live or dead jobs.
    fn queue_list(&self) -> impl Future<Output = Result<Vec<String>>> + Send;

    /// List dead letters in id order.
    fn dead_list(
        &self,
        params: DeadListParams,
    ) -> impl Future<Output = Result<Vec<JobInfo>>> + Send;

    /// Move dead letters back to pending with fresh attempts; returns how many.
    /// A dead letter whose unique key is taken by a live job stays dead.
    fn dead_requeue(&self, params: DeadRequeueParams) -> impl Future<Output = Result<u64>> + Send;

    /// Delete dead letters; returns how many.
    fn dead_purge(&self, params: DeadPurgeParams) -> impl Future<Output = Result<u64>> + Send;

    /// How many dead letters `select` matches (ignoring its `limit`).
    fn dead_count(&self, params: DeadCountParams) -> impl Future<Output = Result<u64>> + Send;
}
