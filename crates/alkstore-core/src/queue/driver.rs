//! [`QueueDriver`]: what an engine implements for queues — SQL and nothing
//! else. Validation, spans, metrics and wake hints are the wrapper's
//! ([`crate::call`]), which implements [`QueueEngine`](super::QueueEngine)
//! and [`QueueAdmin`](super::QueueAdmin) for every driver.

use std::future::Future;

use crate::{Checked, Engine, Result};

use super::params::*;
use super::types::*;

/// The queue statements of one engine. Each method takes [`Checked`]
/// parameters (validated against the store's limits) and runs its SQL;
/// callers use [`QueueEngine`](super::QueueEngine) and
/// [`QueueAdmin`](super::QueueAdmin), whose methods document the behaviour
/// each driver method must have (the contract suite checks it).
///
/// Batch methods are never called with an empty batch.
///
/// **Unstable**: part of the engines' seam, which changes as the engines
/// do. Applications use the `alkstore` crate's handles (`Store::queue`,
/// `Store::jobs`, …) instead.
pub trait QueueDriver: Engine {
    /// See [`QueueEngine::job_enqueue_claimed`](super::QueueEngine::job_enqueue_claimed):
    /// the insert and the claim in one statement or transaction; the
    /// wrapper sends the wake hint of a job left pending.
    fn job_enqueue_claimed(
        &self,
        params: Checked<JobEnqueueClaimedParams>,
    ) -> impl Future<Output = Result<EnqueuedClaimed>> + Send;

    /// See [`QueueEngine::job_claim`](super::QueueEngine::job_claim).
    fn job_claim(
        &self,
        params: Checked<JobClaimParams>,
    ) -> impl Future<Output = Result<Vec<Job>>> + Send;

    /// See [`QueueEngine::job_heartbeat`](super::QueueEngine::job_heartbeat).
    fn job_heartbeat(
        &self,
        params: Checked<JobHeartbeatParams>,
    ) -> impl Future<Output = Result<Option<i64>>> + Send;

    /// See [`QueueEngine::job_release`](super::QueueEngine::job_release).
    fn job_release(
        &self,
        params: Checked<JobReleaseParams>,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// See [`QueueEngine::job_cancel_requests`](super::QueueEngine::job_cancel_requests).
    fn job_cancel_requests(
        &self,
        params: Checked<JobCancelRequestsParams>,
    ) -> impl Future<Output = Result<Vec<i64>>> + Send;

    /// See [`QueueAdmin::job_get`](super::QueueAdmin::job_get).
    fn job_get(
        &self,
        params: Checked<JobGetParams>,
    ) -> impl Future<Output = Result<Option<JobInfo>>> + Send;

    /// See [`QueueAdmin::job_list`](super::QueueAdmin::job_list).
    fn job_list(
        &self,
        params: Checked<JobListParams>,
    ) -> impl Future<Output = Result<Vec<JobInfo>>> + Send;

    /// See [`QueueAdmin::job_cancel`](super::QueueAdmin::job_cancel).
    fn job_cancel(
        &self,
        params: Checked<JobCancelParams>,
    ) -> impl Future<Output = Result<CancelOutcome>> + Send;

    /// See [`QueueAdmin::job_unclaim`](super::QueueAdmin::job_unclaim).
    fn job_unclaim(
        &self,
        params: Checked<JobUnclaimParams>,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// See [`QueueAdmin::job_run_now`](super::QueueAdmin::job_run_now).
    fn job_run_now(
        &self,
        params: Checked<JobRunNowParams>,
    ) -> impl Future<Output = Result<u64>> + Send;

    /// See [`QueueAdmin::job_delete`](super::QueueAdmin::job_delete).
    fn job_delete(
        &self,
        params: Checked<JobDeleteParams>,
    ) -> impl Future<Output = Result<u64>> + Send;

    /// See [`QueueAdmin::queue_stats`](super::QueueAdmin::queue_stats).
    fn queue_stats(
        &self,
        params: Checked<QueueStatsParams>,
    ) -> impl Future<Output = Result<QueueStats>> + Send;

    /// See [`QueueAdmin::queue_throughput`](super::QueueAdmin::queue_throughput).
    fn queue_throughput(
        &self,
        params: Checked<QueueThroughputParams>,
    ) -> impl Future<Output = Result<QueueThroughput>> + Send;

    /// See [`QueueAdmin::queue_depth_history`](super::QueueAdmin::queue_depth_history).
    fn queue_depth_history(
        &self,
        params: Checked<QueueDepthParams>,
    ) -> impl Future<Output = Result<Vec<QueueDepthSample>>> + Send;

    /// See [`QueueAdmin::queue_list`](super::QueueAdmin::queue_list).
    fn queue_list(&self) -> impl Future<Output = Result<Vec<String>>> + Send;

    /// See [`QueueAdmin::queue_stats_all`](super::QueueAdmin::queue_stats_all).
    fn queue_stats_all(&self) -> impl Future<Output = Result<Vec<QueueStats>>> + Send;

    /// See [`QueueAdmin::queue_pause`](super::QueueAdmin::queue_pause)
    /// (`PauseState::Paused`) and `queue_resume` (`PauseState::Running`).
    fn queue_set_paused(
        &self,
        params: Checked<QueuePauseParams>,
        to: crate::PauseState,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// See [`QueueAdmin::queue_paused`](super::QueueAdmin::queue_paused).
    fn queue_paused(&self) -> impl Future<Output = Result<Vec<String>>> + Send;

    /// See [`QueueAdmin::dead_list`](super::QueueAdmin::dead_list).
    fn dead_list(
        &self,
        params: Checked<DeadListParams>,
    ) -> impl Future<Output = Result<Vec<JobInfo>>> + Send;

    /// See [`QueueAdmin::dead_requeue`](super::QueueAdmin::dead_requeue).
    fn dead_requeue(
        &self,
        params: Checked<DeadRequeueParams>,
    ) -> impl Future<Output = Result<u64>> + Send;

    /// See [`QueueAdmin::dead_purge`](super::QueueAdmin::dead_purge).
    fn dead_purge(
        &self,
        params: Checked<DeadPurgeParams>,
    ) -> impl Future<Output = Result<u64>> + Send;

    /// See [`QueueAdmin::dead_count`](super::QueueAdmin::dead_count).
    fn dead_count(
        &self,
        params: Checked<DeadCountParams>,
    ) -> impl Future<Output = Result<u64>> + Send;
}

/// Implements [`QueueDriver`](crate::queue::QueueDriver) for `$engine` the way both engines lay their
/// queue area out: each call handed to the same-named function of the
/// area's part — `enqueue`, `claim`, `settle`, `admin`, `throughput`,
/// `dead` — modules at the place of the call. Each function takes the
/// engine and the call's [`Checked`](crate::Checked) parameters (`queue_set_paused` a
/// `paused` flag as well).
///
/// Written once here so that the engines' files keep one shape: an engine
/// laid out otherwise implements the trait by hand.
#[macro_export]
macro_rules! queue_driver_by_parts {
    ($engine:ty) => {
        impl $crate::queue::QueueDriver for $engine {
            async fn job_enqueue_claimed(
                &self,
                params: $crate::Checked<$crate::queue::JobEnqueueClaimedParams>,
            ) -> $crate::Result<$crate::queue::EnqueuedClaimed> {
                enqueue::job_enqueue_claimed(self, params).await
            }

            async fn job_claim(
                &self,
                params: $crate::Checked<$crate::queue::JobClaimParams>,
            ) -> $crate::Result<Vec<$crate::queue::Job>> {
                claim::job_claim(self, params).await
            }

            async fn job_heartbeat(
                &self,
                params: $crate::Checked<$crate::queue::JobHeartbeatParams>,
            ) -> $crate::Result<Option<i64>> {
                claim::job_heartbeat(self, params).await
            }

            async fn job_release(
                &self,
                params: $crate::Checked<$crate::queue::JobReleaseParams>,
            ) -> $crate::Result<bool> {
                settle::job_release(self, params).await
            }

            async fn job_cancel_requests(
                &self,
                params: $crate::Checked<$crate::queue::JobCancelRequestsParams>,
            ) -> $crate::Result<Vec<i64>> {
                claim::job_cancel_requests(self, params).await
            }

            async fn job_unclaim(
                &self,
                params: $crate::Checked<$crate::queue::JobUnclaimParams>,
            ) -> $crate::Result<bool> {
                settle::job_unclaim(self, params).await
            }

            async fn job_cancel(
                &self,
                params: $crate::Checked<$crate::queue::JobCancelParams>,
            ) -> $crate::Result<$crate::queue::CancelOutcome> {
                admin::job_cancel(self, params).await
            }

            async fn job_get(
                &self,
                params: $crate::Checked<$crate::queue::JobGetParams>,
            ) -> $crate::Result<Option<$crate::queue::JobInfo>> {
                admin::job_get(self, params).await
            }

            async fn job_list(
                &self,
                params: $crate::Checked<$crate::queue::JobListParams>,
            ) -> $crate::Result<Vec<$crate::queue::JobInfo>> {
                admin::job_list(self, params).await
            }

            async fn job_run_now(
                &self,
                params: $crate::Checked<$crate::queue::JobRunNowParams>,
            ) -> $crate::Result<u64> {
                admin::job_run_now(self, params).await
            }

            async fn job_delete(
                &self,
                params: $crate::Checked<$crate::queue::JobDeleteParams>,
            ) -> $crate::Result<u64> {
                admin::job_delete(self, params).await
            }

            async fn queue_stats(
                &self,
                params: $crate::Checked<$crate::queue::QueueStatsParams>,
            ) -> $crate::Result<$crate::queue::QueueStats> {
                admin::queue_stats(self, params).await
            }

            async fn queue_throughput(
                &self,
                params: $crate::Checked<$crate::queue::QueueThroughputParams>,
            ) -> $crate::Result<$crate::queue::QueueThroughput> {
                throughput::queue_throughput(self, params).await
            }

            async fn queue_list(&self) -> $crate::Result<Vec<String>> {
                admin::queue_list(self).await
            }

            async fn queue_stats_all(&self) -> $crate::Result<Vec<$crate::queue::QueueStats>> {
                admin::queue_stats_all(self).await
            }

            async fn queue_depth_history(
                &self,
                params: $crate::Checked<$crate::queue::QueueDepthParams>,
            ) -> $crate::Result<Vec<$crate::queue::QueueDepthSample>> {
                throughput::queue_depth_history(self, params).await
            }

            async fn queue_set_paused(
                &self,
                params: $crate::Checked<$crate::queue::QueuePauseParams>,
                to: $crate::PauseState,
            ) -> $crate::Result<bool> {
                let paused = to.is_paused();
                admin::queue_set_paused(self, params, paused).await
            }

            async fn queue_paused(&self) -> $crate::Result<Vec<String>> {
                admin::queue_paused(self).await
            }

            async fn dead_list(
                &self,
                params: $crate::Checked<$crate::queue::DeadListParams>,
            ) -> $crate::Result<Vec<$crate::queue::JobInfo>> {
                dead::dead_list(self, params).await
            }

            async fn dead_requeue(
                &self,
                params: $crate::Checked<$crate::queue::DeadRequeueParams>,
            ) -> $crate::Result<u64> {
                dead::dead_requeue(self, params).await
            }

            async fn dead_purge(
                &self,
                params: $crate::Checked<$crate::queue::DeadPurgeParams>,
            ) -> $crate::Result<u64> {
                dead::dead_purge(self, params).await
            }

            async fn dead_count(
                &self,
                params: $crate::Checked<$crate::queue::DeadCountParams>,
            ) -> $crate::Result<u64> {
                dead::dead_count(self, params).await
            }
        }
    };
}
