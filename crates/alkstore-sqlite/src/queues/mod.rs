//! The queue area on SQLite: the [`QueueDriver`] implementation (here,
//! each call handed to the part that does it) and row decoding
//! (`rows.rs`).
//!
//! - `enqueue`: inserting jobs;
//! - `claim`: claiming jobs, heartbeats, cancel requests;
//! - `rescue`: handing expired rows back (before a claim, and in the sweep);
//! - `settle`: ack, retry, fail, snooze, release and unclaim;
//! - `bury`: moving rows to the dead table, for the three above;
//! - `throughput`: counting finished jobs, and reading the counts;
//! - `admin`: looking jobs and queues up, pausing, cancelling;
//! - `dead`: the dead-letter calls.

mod admin;
mod bury;
pub(crate) mod claim;
mod dead;
pub(crate) mod enqueue;
pub(crate) mod rescue;
mod rows;
pub(crate) mod settle;
pub(crate) mod throughput;

use alkstore_core::queue::{
    DeadCountParams, DeadPurgeParams, DeadRequeueParams, EnqueuedClaimed, JobAckParams,
    JobCancelParams, JobCancelRequestsParams, JobEnqueueClaimedParams, JobEnqueueParams,
    JobGetParams, JobHeartbeatParams, JobReleaseParams, JobSettleParams, JobUnclaimParams,
    QueuePauseParams, QueueStatsParams, QueueThroughput, QueueThroughputParams,
};
use alkstore_core::{
    CancelOutcome, Checked, DeadListParams, Enqueued, Job, JobClaimParams, JobInfo, JobListParams,
    QueueDriver, QueueStats, Result, Settlement,
};

use crate::SqliteEngine;

impl QueueDriver for SqliteEngine {
    async fn job_enqueue(&self, params: Checked<JobEnqueueParams>) -> Result<Vec<Enqueued>> {
        enqueue::job_enqueue(self, params).await
    }

    async fn job_enqueue_claimed(
        &self,
        params: Checked<JobEnqueueClaimedParams>,
    ) -> Result<EnqueuedClaimed> {
        enqueue::job_enqueue_claimed(self, params).await
    }

    async fn job_claim(&self, params: Checked<JobClaimParams>) -> Result<Vec<Job>> {
        claim::job_claim(self, params).await
    }

    async fn job_ack(&self, params: Checked<JobAckParams>) -> Result<Vec<bool>> {
        settle::job_ack(self, params).await
    }

    async fn job_settle(&self, params: Checked<JobSettleParams>) -> Result<Settlement> {
        settle::job_settle(self, params).await
    }

    async fn job_heartbeat(&self, params: Checked<JobHeartbeatParams>) -> Result<Option<i64>> {
        claim::job_heartbeat(self, params).await
    }

    async fn job_release(&self, params: Checked<JobReleaseParams>) -> Result<bool> {
        settle::job_release(self, params).await
    }

    async fn job_cancel_requests(
        &self,
        params: Checked<JobCancelRequestsParams>,
    ) -> Result<Vec<i64>> {
        claim::job_cancel_requests(self, params).await
    }

    async fn job_unclaim(&self, params: Checked<JobUnclaimParams>) -> Result<bool> {
        settle::job_unclaim(self, params).await
    }

    async fn job_cancel(&self, params: Checked<JobCancelParams>) -> Result<CancelOutcome> {
        admin::job_cancel(self, params).await
    }

    async fn job_get(&self, params: Checked<JobGetParams>) -> Result<Option<JobInfo>> {
        admin::job_get(self, params).await
    }

    async fn job_list(&self, params: Checked<JobListParams>) -> Result<Vec<JobInfo>> {
        admin::job_list(self, params).await
    }

    async fn queue_stats(&self, params: Checked<QueueStatsParams>) -> Result<QueueStats> {
        admin::queue_stats(self, params).await
    }

    async fn queue_throughput(
        &self,
        params: Checked<QueueThroughputParams>,
    ) -> Result<QueueThroughput> {
        throughput::queue_throughput(self, params).await
    }

    async fn queue_list(&self) -> Result<Vec<String>> {
        admin::queue_list(self).await
    }

    async fn queue_set_paused(
        &self,
        params: Checked<QueuePauseParams>,
        to: alkstore_core::PauseState,
    ) -> Result<bool> {
        let paused = to.is_paused();
        admin::queue_set_paused(self, params, paused).await
    }

    async fn queue_paused(&self) -> Result<Vec<String>> {
        admin::queue_paused(self).await
    }

    async fn dead_list(&self, params: Checked<DeadListParams>) -> Result<Vec<JobInfo>> {
        dead::dead_list(self, params).await
    }

    async fn dead_requeue(&self, params: Checked<DeadRequeueParams>) -> Result<u64> {
        dead::dead_requeue(self, params).await
    }

    async fn dead_purge(&self, params: Checked<DeadPurgeParams>) -> Result<u64> {
        dead::dead_purge(self, params).await
    }

    async fn dead_count(&self, params: Checked<DeadCountParams>) -> Result<u64> {
        dead::dead_count(self, params).await
    }
}
