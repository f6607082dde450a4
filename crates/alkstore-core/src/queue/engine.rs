//! The queue traits callers use: [`QueueEngine`] (the hot path workers
//! use) and [`QueueAdmin`] (inspection, dead letters, operator actions),
//! both on top of the base [`Engine`](crate::Engine). Engines do not
//! implement them: they implement [`QueueDriver`], and both traits are
//! implemented here once for every driver, each method through the one
//! wrapper ([`crate::call`]) that validates, traces, records metrics and
//! sends this process's wake hints.

use std::future::Future;

use crate::call::engine_call;
use crate::{Engine, Result};

use super::driver::QueueDriver;

use super::params::*;
use super::types::*;

/// The queue hot path: what workers call. Every engine has it (through its
/// [`QueueDriver`]); the contract suite in `alkstore-contract` checks that
/// they all behave the same.
///
/// All methods validate input first and return
/// [`Error::InvalidInput`](crate::Error::InvalidInput) (or
/// [`Error::PayloadTooLarge`](crate::Error::PayloadTooLarge)) without writing
/// anything.
///
/// **Unstable**: part of the engines' seam, which changes as the engines
/// do. Applications use the `alkstore` crate's handles (`Store::queue`,
/// `Store::jobs`, …) instead.
pub trait QueueEngine: Engine {
    /// Enqueue one job and, when nothing is ahead of it (it is due now, has
    /// no unique key, its queue is not paused, no other due job of the
    /// queue is pending), claim
    /// it for `worker` in the same write, as `job_claim` would: the
    /// in-process hand-off from an enqueue call to an idle worker, which
    /// saves the claim's round trip. A job left pending is woken for like
    /// any enqueued job.
    ///
    /// ```
    /// # async fn f(e: &(impl alkstore_core::QueueEngine + alkstore_core::AllOps)) -> alkstore_core::Result<()> {
    /// use alkstore_core::{JobEnqueueClaimedParams, NewJob, Writes};
    /// let out = e
    ///     .job_enqueue_claimed(JobEnqueueClaimedParams::new(NewJob::new("mail", b"{}".to_vec()), "w1"))
    ///     .await?;
    /// if let Some(job) = out.claimed {
    ///     e.job_ack(vec![job.claim()]).await?;
    /// }
    /// # Ok(()) }
    /// ```
    fn job_enqueue_claimed(
        &self,
        params: JobEnqueueClaimedParams,
    ) -> impl Future<Output = Result<EnqueuedClaimed>> + Send;

    /// Claim up to `limit` due jobs (priority DESC, run_at, id). Expired claims
    /// are handed out again; an expired claim on its last attempt goes to dead.
    fn job_claim(&self, params: JobClaimParams) -> impl Future<Output = Result<Vec<Job>>> + Send;

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
}

/// Queue inspection and operator actions: look up, list and count jobs,
/// cancel or release them, and manage dead letters. Off the hot path.
///
/// **Unstable**: part of the engines' seam, which changes as the engines
/// do. Applications use the `alkstore` crate's handles (`Store::queue`,
/// `Store::jobs`, …) instead.
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

    /// Make waiting jobs due now: scheduled ones (first run later) and
    /// retryable ones (waiting out a backoff) run at once; the attempt
    /// count is kept. Jobs not pending (processing, dead, gone) are left
    /// alone. How many were moved.
    fn job_run_now(&self, params: JobRunNowParams) -> impl Future<Output = Result<u64>> + Send;

    /// Delete pending jobs for good (a running job is not deleted: cancel
    /// it). How many were deleted.
    fn job_delete(&self, params: JobDeleteParams) -> impl Future<Output = Result<u64>> + Send;

    /// Queue depth samples (ready, scheduled, processing, dead) over the
    /// last `window`, oldest first: the maintenance sweep takes one per
    /// queue each time it runs (once a minute by default) and keeps a
    /// week of them.
    fn queue_depth_history(
        &self,
        params: QueueDepthParams,
    ) -> impl Future<Output = Result<Vec<QueueDepthSample>>> + Send;

    /// Counts for one queue.
    fn queue_stats(
        &self,
        params: impl Into<QueueStatsParams> + Send,
    ) -> impl Future<Output = Result<QueueStats>> + Send;

    /// Jobs finished per queue: completions and failed attempts in buckets
    /// of [`THROUGHPUT_BUCKET_S`] seconds over the last `window`, and each
    /// queue's totals. Counted by the store on every ack, retry and failure,
    /// so it covers every worker of every process and host.
    fn queue_throughput(
        &self,
        params: QueueThroughputParams,
    ) -> impl Future<Output = Result<QueueThroughput>> + Send;

    /// Names of every queue with live, dead or kept completed jobs, or with
    /// jobs finished within the last hour (a drained queue stays listed
    /// while its recent throughput does).
    fn queue_list(&self) -> impl Future<Output = Result<Vec<String>>> + Send;

    /// Counts for every queue [`queue_list`](QueueAdmin::queue_list)
    /// names, by name, read together: what an operator's overview polls,
    /// in one call however many queues there are.
    fn queue_stats_all(&self) -> impl Future<Output = Result<Vec<QueueStats>>> + Send;

    /// Stop claims from a queue, on every worker of the store: a claim
    /// from a paused queue returns nothing (jobs can still be enqueued;
    /// running ones finish). `true` when it was not paused yet.
    fn queue_pause(
        &self,
        params: impl Into<QueuePauseParams> + Send,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// Let claims from a paused queue go on (this process's workers are
    /// woken at once; others find its jobs within a poll). `true` when it
    /// was paused.
    fn queue_resume(
        &self,
        params: impl Into<QueuePauseParams> + Send,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// Names of the paused queues.
    fn queue_paused(&self) -> impl Future<Output = Result<Vec<String>>> + Send;

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

impl<D: QueueDriver> QueueEngine for D {
    async fn job_enqueue_claimed(
        &self,
        params: JobEnqueueClaimedParams,
    ) -> Result<EnqueuedClaimed> {
        engine_call!(self, job_enqueue_claimed, params => JobEnqueueClaimedParams, |p| async move {
            let queue = p.job.queue.clone();
            let out = QueueDriver::job_enqueue_claimed(self, p).await?;
            if out.claimed.is_none() {
                self.wake_hub().queue(&queue);
            }
            Ok(out)
        })
    }

    async fn job_claim(&self, params: JobClaimParams) -> Result<Vec<Job>> {
        engine_call!(self, job_claim, params => JobClaimParams, |p| QueueDriver::job_claim(self, p))
    }

    async fn job_heartbeat(
        &self,
        params: impl Into<JobHeartbeatParams> + Send,
    ) -> Result<Option<i64>> {
        engine_call!(self, job_heartbeat, params => JobHeartbeatParams, |p| {
            QueueDriver::job_heartbeat(self, p)
        })
    }

    async fn job_release(&self, params: impl Into<JobReleaseParams> + Send) -> Result<bool> {
        engine_call!(self, job_release, params => JobReleaseParams, |p| async move {
            let released = QueueDriver::job_release(self, p).await?;
            if released {
                self.wake_hub().all();
            }
            Ok(released)
        })
    }

    async fn job_cancel_requests(
        &self,
        params: impl Into<JobCancelRequestsParams> + Send,
    ) -> Result<Vec<i64>> {
        engine_call!(self, job_cancel_requests, params => JobCancelRequestsParams, |p| async move {
            if p.ids.is_empty() {
                return Ok(Vec::new());
            }
            QueueDriver::job_cancel_requests(self, p).await
        })
    }
}

impl<D: QueueDriver> QueueAdmin for D {
    async fn job_get(&self, params: impl Into<JobGetParams> + Send) -> Result<Option<JobInfo>> {
        engine_call!(self, job_get, params => JobGetParams, |p| QueueDriver::job_get(self, p))
    }

    async fn job_list(&self, params: JobListParams) -> Result<Vec<JobInfo>> {
        engine_call!(self, job_list, params => JobListParams, |p| QueueDriver::job_list(self, p))
    }

    async fn job_cancel(&self, params: impl Into<JobCancelParams> + Send) -> Result<CancelOutcome> {
        engine_call!(self, job_cancel, params => JobCancelParams, |p| QueueDriver::job_cancel(self, p))
    }

    async fn job_unclaim(&self, params: impl Into<JobUnclaimParams> + Send) -> Result<bool> {
        engine_call!(self, job_unclaim, params => JobUnclaimParams, |p| async move {
            let released = QueueDriver::job_unclaim(self, p).await?;
            if released {
                self.wake_hub().all();
            }
            Ok(released)
        })
    }

    async fn job_run_now(&self, params: JobRunNowParams) -> Result<u64> {
        engine_call!(self, job_run_now, params => JobRunNowParams, |p| async move {
            let moved = QueueDriver::job_run_now(self, p).await?;
            if moved > 0 {
                self.wake_hub().all();
            }
            Ok(moved)
        })
    }

    async fn queue_depth_history(&self, params: QueueDepthParams) -> Result<Vec<QueueDepthSample>> {
        engine_call!(self, queue_depth_history, params => QueueDepthParams, |p| {
            QueueDriver::queue_depth_history(self, p)
        })
    }

    async fn job_delete(&self, params: JobDeleteParams) -> Result<u64> {
        engine_call!(self, job_delete, params => JobDeleteParams, |p| QueueDriver::job_delete(self, p))
    }

    async fn queue_stats(&self, params: impl Into<QueueStatsParams> + Send) -> Result<QueueStats> {
        engine_call!(self, queue_stats, params => QueueStatsParams, |p| {
            QueueDriver::queue_stats(self, p)
        })
    }

    async fn queue_throughput(&self, params: QueueThroughputParams) -> Result<QueueThroughput> {
        engine_call!(self, queue_throughput, params => QueueThroughputParams, |p| {
            QueueDriver::queue_throughput(self, p)
        })
    }

    async fn queue_list(&self) -> Result<Vec<String>> {
        engine_call!(self, queue_list, () => (), |_p| QueueDriver::queue_list(self))
    }

    async fn queue_stats_all(&self) -> Result<Vec<QueueStats>> {
        engine_call!(self, queue_stats_all, () => (), |_p| QueueDriver::queue_stats_all(self))
    }

    async fn queue_pause(&self, params: impl Into<QueuePauseParams> + Send) -> Result<bool> {
        engine_call!(self, queue_pause, params => QueuePauseParams, |p| {
            QueueDriver::queue_set_paused(self, p, crate::PauseState::Paused)
        })
    }

    async fn queue_resume(&self, params: impl Into<QueuePauseParams> + Send) -> Result<bool> {
        engine_call!(self, queue_resume, params => QueuePauseParams, |p| async move {
            let queue = p.queue.clone();
            let resumed = QueueDriver::queue_set_paused(self, p, crate::PauseState::Running).await?;
            self.wake_hub().queue(&queue);
            Ok(resumed)
        })
    }

    async fn queue_paused(&self) -> Result<Vec<String>> {
        engine_call!(self, queue_paused, () => (), |_p| QueueDriver::queue_paused(self))
    }

    async fn dead_list(&self, params: DeadListParams) -> Result<Vec<JobInfo>> {
        engine_call!(self, dead_list, params => DeadListParams, |p| QueueDriver::dead_list(self, p))
    }

    async fn dead_requeue(&self, params: DeadRequeueParams) -> Result<u64> {
        engine_call!(self, dead_requeue, params => DeadRequeueParams, |p| async move {
            let n = QueueDriver::dead_requeue(self, p).await?;
            if n > 0 {
                self.wake_hub().all();
            }
            Ok(n)
        })
    }

    async fn dead_purge(&self, params: DeadPurgeParams) -> Result<u64> {
        engine_call!(self, dead_purge, params => DeadPurgeParams, |p| QueueDriver::dead_purge(self, p))
    }

    async fn dead_count(&self, params: DeadCountParams) -> Result<u64> {
        engine_call!(self, dead_count, params => DeadCountParams, |p| QueueDriver::dead_count(self, p))
    }
}
