use alkstore_core::group::{
    BucketEvent, BucketLease, GroupCheckpointParams, GroupClaimParams, GroupDead,
    GroupDeadAddParams, GroupDeadListParams, GroupDeadPurgeParams, GroupDeadRequeueParams,
    GroupDeadResolveParams, GroupDeadTakeParams, GroupDriver, GroupEnsureParams, GroupInfo,
    GroupLeaveParams, GroupReadParams, GroupReleaseParams, GroupRenewParams, GroupResize,
    GroupResizeParams, GroupStatus, GroupStatusParams, Renewal,
};
use alkstore_core::lock::{
    LockAcquireParams, LockDriver, LockGrant, LockInfo, LockReleaseParams, LockReleased,
    LockRenewParams, LockRenewed,
};
use alkstore_core::notify::{Notification, NotifyDriver, NotifyParams, NotifyPollParams};
use alkstore_core::queue::{
    DeadCountParams, DeadPurgeParams, DeadRequeueParams, EnqueuedClaimed, JobAckParams,
    JobCancelParams, JobCancelRequestsParams, JobEnqueueClaimedParams, JobEnqueueParams,
    JobGetParams, JobHeartbeatParams, JobReleaseParams, JobSettleParams, JobUnclaimParams,
    QueuePauseParams, QueueStatsParams, QueueThroughput, QueueThroughputParams,
};
use alkstore_core::rate::{RateAcquireParams, RateDecision, RateDriver};
use alkstore_core::results::{JobOutput, ResultDriver, ResultGetParams, ResultSaveParams};
use alkstore_core::schedule::{
    FireReport, ScheduleDriver, ScheduleFireParams, ScheduleInfo, ScheduleNameParams,
    ScheduleSetParams,
};
use alkstore_core::stream::{
    ConsumerOffset, Event, StreamDriver, StreamInfo, StreamOffsetCommitParams,
    StreamOffsetGetParams, StreamOffsetsParams, StreamPublishParams, StreamReadParams,
    StreamRetentionParams, StreamStats, StreamStatsParams, StreamTrimParams,
};
use alkstore_core::{
    CancelOutcome, Capabilities, Checked, DeadListParams, Engine, Enqueued, Job, JobClaimParams,
    JobInfo, JobListParams, Limits, QueueDriver, QueueStats, Result, Settlement, SweepParams,
    SweepReport, WakeHub,
};
#[cfg(feature = "postgres")]
use alkstore_postgres::PgEngine;
#[cfg(feature = "sqlite")]
use alkstore_sqlite::SqliteEngine;

#[cfg(not(any(feature = "sqlite", feature = "postgres")))]
compile_error!("alkstore needs at least one engine: enable the `sqlite` or `postgres` feature");

/// Either engine, chosen at open time by URL.
///
/// It is a driver like the engines it holds: it only picks the engine. The
/// traits callers use (`QueueEngine`, `QueueAdmin`) come from core's one
/// wrapper, which validates, traces, records metrics and hints once per
/// call, then lands here.
#[derive(Debug, Clone)]
pub enum AnyEngine {
    /// The embedded SQLite engine.
    #[cfg(feature = "sqlite")]
    Sqlite(SqliteEngine),
    /// The PostgreSQL engine.
    #[cfg(feature = "postgres")]
    Postgres(PgEngine),
}

/// Pick the engine and call its driver method.
macro_rules! dispatch {
    ($self:ident . $method:ident ( $($arg:expr),* )) => {
        match $self {
            #[cfg(feature = "sqlite")]
            AnyEngine::Sqlite(e) => e.$method($($arg),*),
            #[cfg(feature = "postgres")]
            AnyEngine::Postgres(e) => e.$method($($arg),*),
        }
    };
}

/// Pick the engine and await one of its driver methods (named with its
/// trait: the public traits have methods of the same names).
macro_rules! drive {
    ($self:ident . $method:ident ( $($arg:expr),* )) => {
        drive!(QueueDriver, $self.$method($($arg),*))
    };
    ($driver:ident, $self:ident . $method:ident ( $($arg:expr),* )) => {
        match $self {
            #[cfg(feature = "sqlite")]
            AnyEngine::Sqlite(e) => $driver::$method(e, $($arg),*).await,
            #[cfg(feature = "postgres")]
            AnyEngine::Postgres(e) => $driver::$method(e, $($arg),*).await,
        }
    };
}

impl Engine for AnyEngine {
    fn capabilities(&self) -> Capabilities {
        dispatch!(self.capabilities())
    }

    fn limits(&self) -> &Limits {
        dispatch!(self.limits())
    }

    fn wake_hub(&self) -> &WakeHub {
        dispatch!(self.wake_hub())
    }

    fn close(&self) {
        dispatch!(self.close())
    }

    fn is_closed(&self) -> bool {
        dispatch!(self.is_closed())
    }

    fn wake_subscribe(&self) -> tokio::sync::broadcast::Receiver<alkstore_core::Wake> {
        dispatch!(self.wake_subscribe())
    }

    async fn flush(&self) {
        match self {
            #[cfg(feature = "sqlite")]
            AnyEngine::Sqlite(e) => e.flush().await,
            #[cfg(feature = "postgres")]
            AnyEngine::Postgres(e) => e.flush().await,
        }
    }

    async fn reclaim(&self) -> Result<u64> {
        match self {
            #[cfg(feature = "sqlite")]
            AnyEngine::Sqlite(e) => e.reclaim().await,
            #[cfg(feature = "postgres")]
            AnyEngine::Postgres(e) => e.reclaim().await,
        }
    }

    async fn sweep_if_due(&self, params: Checked<SweepParams>) -> Result<Option<SweepReport>> {
        match self {
            #[cfg(feature = "sqlite")]
            AnyEngine::Sqlite(e) => e.sweep_if_due(params).await,
            #[cfg(feature = "postgres")]
            AnyEngine::Postgres(e) => e.sweep_if_due(params).await,
        }
    }
}

impl QueueDriver for AnyEngine {
    async fn job_enqueue(&self, p: Checked<JobEnqueueParams>) -> Result<Vec<Enqueued>> {
        drive!(self.job_enqueue(p))
    }

    async fn job_enqueue_claimed(
        &self,
        p: Checked<JobEnqueueClaimedParams>,
    ) -> Result<EnqueuedClaimed> {
        drive!(self.job_enqueue_claimed(p))
    }

    async fn job_claim(&self, p: Checked<JobClaimParams>) -> Result<Vec<Job>> {
        drive!(self.job_claim(p))
    }

    async fn job_ack(&self, p: Checked<JobAckParams>) -> Result<Vec<bool>> {
        drive!(self.job_ack(p))
    }

    async fn job_settle(&self, p: Checked<JobSettleParams>) -> Result<Settlement> {
        drive!(self.job_settle(p))
    }

    async fn job_heartbeat(&self, p: Checked<JobHeartbeatParams>) -> Result<Option<i64>> {
        drive!(self.job_heartbeat(p))
    }

    async fn job_release(&self, p: Checked<JobReleaseParams>) -> Result<bool> {
        drive!(self.job_release(p))
    }

    async fn job_cancel_requests(&self, p: Checked<JobCancelRequestsParams>) -> Result<Vec<i64>> {
        drive!(self.job_cancel_requests(p))
    }

    async fn job_get(&self, p: Checked<JobGetParams>) -> Result<Option<JobInfo>> {
        drive!(self.job_get(p))
    }

    async fn job_list(&self, p: Checked<JobListParams>) -> Result<Vec<JobInfo>> {
        drive!(self.job_list(p))
    }

    async fn job_cancel(&self, p: Checked<JobCancelParams>) -> Result<CancelOutcome> {
        drive!(self.job_cancel(p))
    }

    async fn job_unclaim(&self, p: Checked<JobUnclaimParams>) -> Result<bool> {
        drive!(self.job_unclaim(p))
    }

    async fn queue_stats(&self, p: Checked<QueueStatsParams>) -> Result<QueueStats> {
        drive!(self.queue_stats(p))
    }

    async fn queue_throughput(&self, p: Checked<QueueThroughputParams>) -> Result<QueueThroughput> {
        drive!(self.queue_throughput(p))
    }

    async fn queue_list(&self) -> Result<Vec<String>> {
        drive!(self.queue_list())
    }

    async fn queue_set_paused(&self, p: Checked<QueuePauseParams>, paused: bool) -> Result<bool> {
        drive!(self.queue_set_paused(p, paused))
    }

    async fn queue_paused(&self) -> Result<Vec<String>> {
        drive!(self.queue_paused())
    }

    async fn dead_list(&self, p: Checked<DeadListParams>) -> Result<Vec<JobInfo>> {
        drive!(self.dead_list(p))
    }

    async fn dead_requeue(&self, p: Checked<DeadRequeueParams>) -> Result<u64> {
        drive!(self.dead_requeue(p))
    }

    async fn dead_purge(&self, p: Checked<DeadPurgeParams>) -> Result<u64> {
        drive!(self.dead_purge(p))
    }

    async fn dead_count(&self, p: Checked<DeadCountParams>) -> Result<u64> {
        drive!(self.dead_count(p))
    }
}

impl StreamDriver for AnyEngine {
    async fn stream_publish(&self, p: Checked<StreamPublishParams>) -> Result<Vec<i64>> {
        drive!(StreamDriver, self.stream_publish(p))
    }

    async fn stream_read(&self, p: Checked<StreamReadParams>) -> Result<Vec<Event>> {
        drive!(StreamDriver, self.stream_read(p))
    }

    async fn stream_offset_get(&self, p: Checked<StreamOffsetGetParams>) -> Result<Option<i64>> {
        drive!(StreamDriver, self.stream_offset_get(p))
    }

    async fn stream_offset_commit(&self, p: Checked<StreamOffsetCommitParams>) -> Result<i64> {
        drive!(StreamDriver, self.stream_offset_commit(p))
    }

    async fn stream_offsets(&self, p: Checked<StreamOffsetsParams>) -> Result<Vec<ConsumerOffset>> {
        drive!(StreamDriver, self.stream_offsets(p))
    }

    async fn stream_stats(&self, p: Checked<StreamStatsParams>) -> Result<StreamStats> {
        drive!(StreamDriver, self.stream_stats(p))
    }

    async fn stream_list(&self) -> Result<Vec<StreamInfo>> {
        drive!(StreamDriver, self.stream_list())
    }

    async fn stream_trim(&self, p: Checked<StreamTrimParams>) -> Result<u64> {
        drive!(StreamDriver, self.stream_trim(p))
    }

    async fn stream_retention_set(&self, p: Checked<StreamRetentionParams>) -> Result<()> {
        drive!(StreamDriver, self.stream_retention_set(p))
    }
}

impl GroupDriver for AnyEngine {
    async fn group_ensure(&self, p: Checked<GroupEnsureParams>) -> Result<()> {
        drive!(GroupDriver, self.group_ensure(p))
    }

    async fn group_claim(&self, p: Checked<GroupClaimParams>) -> Result<Vec<BucketLease>> {
        drive!(GroupDriver, self.group_claim(p))
    }

    async fn group_renew(&self, p: Checked<GroupRenewParams>) -> Result<Renewal> {
        drive!(GroupDriver, self.group_renew(p))
    }

    async fn group_release(&self, p: Checked<GroupReleaseParams>) -> Result<u64> {
        drive!(GroupDriver, self.group_release(p))
    }

    async fn group_checkpoint(&self, p: Checked<GroupCheckpointParams>) -> Result<i64> {
        drive!(GroupDriver, self.group_checkpoint(p))
    }

    async fn group_read(&self, p: Checked<GroupReadParams>) -> Result<Vec<BucketEvent>> {
        drive!(GroupDriver, self.group_read(p))
    }

    async fn group_status(&self, p: Checked<GroupStatusParams>) -> Result<GroupStatus> {
        drive!(GroupDriver, self.group_status(p))
    }

    async fn group_list(&self) -> Result<Vec<GroupInfo>> {
        drive!(GroupDriver, self.group_list())
    }

    async fn group_leave(&self, p: Checked<GroupLeaveParams>) -> Result<u64> {
        drive!(GroupDriver, self.group_leave(p))
    }

    async fn group_dead_add(&self, p: Checked<GroupDeadAddParams>) -> Result<()> {
        drive!(GroupDriver, self.group_dead_add(p))
    }

    async fn group_dead_list(&self, p: Checked<GroupDeadListParams>) -> Result<Vec<GroupDead>> {
        drive!(GroupDriver, self.group_dead_list(p))
    }

    async fn group_resize(&self, p: Checked<GroupResizeParams>) -> Result<GroupResize> {
        drive!(GroupDriver, self.group_resize(p))
    }

    async fn group_dead_requeue(&self, p: Checked<GroupDeadRequeueParams>) -> Result<u64> {
        drive!(GroupDriver, self.group_dead_requeue(p))
    }

    async fn group_dead_purge(&self, p: Checked<GroupDeadPurgeParams>) -> Result<u64> {
        drive!(GroupDriver, self.group_dead_purge(p))
    }

    async fn group_dead_take(&self, p: Checked<GroupDeadTakeParams>) -> Result<Vec<GroupDead>> {
        drive!(GroupDriver, self.group_dead_take(p))
    }

    async fn group_dead_resolve(&self, p: Checked<GroupDeadResolveParams>) -> Result<()> {
        drive!(GroupDriver, self.group_dead_resolve(p))
    }

    async fn group_counts(&self, p: Checked<GroupStatusParams>) -> Result<Vec<(u32, u64)>> {
        drive!(GroupDriver, self.group_counts(p))
    }
}

impl LockDriver for AnyEngine {
    async fn lock_acquire(&self, p: Checked<LockAcquireParams>) -> Result<Option<LockGrant>> {
        drive!(LockDriver, self.lock_acquire(p))
    }

    async fn lock_renew(&self, p: Checked<LockRenewParams>) -> Result<LockRenewed> {
        drive!(LockDriver, self.lock_renew(p))
    }

    async fn lock_release(&self, p: Checked<LockReleaseParams>) -> Result<LockReleased> {
        drive!(LockDriver, self.lock_release(p))
    }

    async fn lock_list(&self) -> Result<Vec<LockInfo>> {
        drive!(LockDriver, self.lock_list())
    }
}

impl ScheduleDriver for AnyEngine {
    async fn schedule_set(&self, p: Checked<ScheduleSetParams>) -> Result<ScheduleInfo> {
        drive!(ScheduleDriver, self.schedule_set(p))
    }

    async fn schedule_remove(&self, p: Checked<ScheduleNameParams>) -> Result<bool> {
        drive!(ScheduleDriver, self.schedule_remove(p))
    }

    async fn schedule_set_paused(
        &self,
        p: Checked<ScheduleNameParams>,
        paused: bool,
    ) -> Result<ScheduleInfo> {
        drive!(ScheduleDriver, self.schedule_set_paused(p, paused))
    }

    async fn schedule_list(&self) -> Result<Vec<ScheduleInfo>> {
        drive!(ScheduleDriver, self.schedule_list())
    }

    async fn schedule_fire_due(&self, p: Checked<ScheduleFireParams>) -> Result<FireReport> {
        drive!(ScheduleDriver, self.schedule_fire_due(p))
    }
}

impl RateDriver for AnyEngine {
    async fn rate_acquire(&self, p: Checked<RateAcquireParams>) -> Result<RateDecision> {
        drive!(RateDriver, self.rate_acquire(p))
    }
}

impl NotifyDriver for AnyEngine {
    async fn notify(&self, p: Checked<NotifyParams>) -> Result<()> {
        drive!(NotifyDriver, self.notify(p))
    }

    async fn notify_poll(&self, p: Checked<NotifyPollParams>) -> Result<Vec<Notification>> {
        drive!(NotifyDriver, self.notify_poll(p))
    }

    async fn notify_ready(&self) -> Result<()> {
        drive!(NotifyDriver, self.notify_ready())
    }

    async fn notify_head(&self) -> Result<i64> {
        drive!(NotifyDriver, self.notify_head())
    }
}

impl ResultDriver for AnyEngine {
    async fn result_save(&self, p: Checked<ResultSaveParams>) -> Result<JobOutput> {
        drive!(ResultDriver, self.result_save(p))
    }

    async fn result_get(&self, p: Checked<ResultGetParams>) -> Result<Option<JobOutput>> {
        drive!(ResultDriver, self.result_get(p))
    }
}
