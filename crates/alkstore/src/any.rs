use std::future::Future;

use alkstore_core::group::{
    BucketCount, BucketEvent, BucketLease, GroupClaimParams, GroupDead, GroupDeadAddParams,
    GroupDeadListParams, GroupDeadPurgeParams, GroupDeadRequeueParams, GroupDeadResolveParams,
    GroupDeadTakeParams, GroupDriver, GroupEnsureParams, GroupHandoffs, GroupHandoffsParams,
    GroupInfo, GroupLeaveParams, GroupReadParams, GroupReleaseParams, GroupRenewParams,
    GroupResize, GroupResizeParams, GroupStatus, GroupStatusParams, Renewal,
};
use alkstore_core::lock::{
    LockAcquireParams, LockDriver, LockGrant, LockInfo, LockReleaseParams, LockReleased,
    LockRenewParams, LockRenewed,
};
use alkstore_core::notify::{Notification, NotifyDriver, NotifyPollParams};
use alkstore_core::process::{
    ProcessBeatParams, ProcessDriver, ProcessInfo, ProcessOrder, ProcessOrderParams,
    ProcessRemoveParams,
};
use alkstore_core::queue::{
    DeadCountParams, DeadPurgeParams, DeadRequeueParams, EnqueuedClaimed, JobCancelParams,
    JobCancelRequestsParams, JobDeleteParams, JobEnqueueClaimedParams, JobGetParams,
    JobHeartbeatParams, JobReleaseParams, JobRunNowParams, JobUnclaimParams, QueueDepthParams,
    QueueDepthSample, QueuePauseParams, QueueStatsParams, QueueThroughput, QueueThroughputParams,
};
use alkstore_core::rate::{RateAcquireParams, RateDecision, RateDriver};
use alkstore_core::results::{JobOutput, ResultDriver, ResultGetParams, ResultSaveParams};
use alkstore_core::schedule::{
    FireReport, Fired, ScheduleDriver, ScheduleFire, ScheduleFireParams, ScheduleFiresParams,
    ScheduleInfo, ScheduleNameParams,
};
use alkstore_core::stream::{
    ConsumerOffset, Event, StreamDriver, StreamInfo, StreamOffsetGetParams, StreamOffsetsParams,
    StreamReadParams, StreamRetentionParams, StreamStats, StreamStatsParams, StreamTrimParams,
};
use alkstore_core::{At, Drive, Op, TxConn};
use alkstore_core::{
    CancelOutcome, Capabilities, Checked, DeadListParams, Engine, EngineState, Job, JobClaimParams,
    JobInfo, JobListParams, PauseState, QueueDriver, QueueStats, Result, SweepParams, SweepReport,
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

impl Engine for AnyEngine {
    fn capabilities(&self) -> Capabilities {
        dispatch!(self.capabilities())
    }

    fn state(&self) -> &EngineState {
        dispatch!(self.state())
    }

    fn close(&self) {
        dispatch!(self.close())
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

/// Implement driver trait `$driver` for [`AnyEngine`] from one list of its
/// methods: each picks the engine and awaits the same method on it.
macro_rules! forward {
    ($driver:ident { $( fn $method:ident ( $($arg:ident : $ty:ty),* ) -> $ret:ty; )* }) => {
        impl $driver for AnyEngine {
            $(
                async fn $method(&self, $($arg: $ty),*) -> Result<$ret> {
                    match self {
                        #[cfg(feature = "sqlite")]
                        AnyEngine::Sqlite(e) => $driver::$method(e, $($arg),*).await,
                        #[cfg(feature = "postgres")]
                        AnyEngine::Postgres(e) => $driver::$method(e, $($arg),*).await,
                    }
                }
            )*
        }
    };
}

forward!(QueueDriver {
    fn job_enqueue_claimed(p: Checked<JobEnqueueClaimedParams>) -> EnqueuedClaimed;
    fn job_claim(p: Checked<JobClaimParams>) -> Vec<Job>;
    fn job_heartbeat(p: Checked<JobHeartbeatParams>) -> Option<i64>;
    fn job_release(p: Checked<JobReleaseParams>) -> bool;
    fn job_cancel_requests(p: Checked<JobCancelRequestsParams>) -> Vec<i64>;
    fn job_get(p: Checked<JobGetParams>) -> Option<JobInfo>;
    fn job_list(p: Checked<JobListParams>) -> Vec<JobInfo>;
    fn job_cancel(p: Checked<JobCancelParams>) -> CancelOutcome;
    fn job_unclaim(p: Checked<JobUnclaimParams>) -> bool;
    fn job_run_now(p: Checked<JobRunNowParams>) -> u64;
    fn queue_depth_history(p: Checked<QueueDepthParams>) -> Vec<QueueDepthSample>;
    fn job_delete(p: Checked<JobDeleteParams>) -> u64;
    fn queue_stats(p: Checked<QueueStatsParams>) -> QueueStats;
    fn queue_throughput(p: Checked<QueueThroughputParams>) -> QueueThroughput;
    fn queue_list() -> Vec<String>;
    fn queue_stats_all() -> Vec<QueueStats>;
    fn queue_set_paused(p: Checked<QueuePauseParams>, to: PauseState) -> bool;
    fn queue_paused() -> Vec<String>;
    fn dead_list(p: Checked<DeadListParams>) -> Vec<JobInfo>;
    fn dead_requeue(p: Checked<DeadRequeueParams>) -> u64;
    fn dead_purge(p: Checked<DeadPurgeParams>) -> u64;
    fn dead_count(p: Checked<DeadCountParams>) -> u64;
});

forward!(StreamDriver {
    fn stream_read(p: Checked<StreamReadParams>) -> Vec<Event>;
    fn stream_offset_get(p: Checked<StreamOffsetGetParams>) -> Option<i64>;
    fn stream_offsets(p: Checked<StreamOffsetsParams>) -> Vec<ConsumerOffset>;
    fn stream_stats(p: Checked<StreamStatsParams>) -> StreamStats;
    fn stream_list() -> Vec<StreamInfo>;
    fn stream_trim(p: Checked<StreamTrimParams>) -> u64;
    fn stream_retention_set(p: Checked<StreamRetentionParams>) -> ();
});

forward!(GroupDriver {
    fn group_ensure(p: Checked<GroupEnsureParams>) -> ();
    fn group_claim(p: Checked<GroupClaimParams>) -> Vec<BucketLease>;
    fn group_renew(p: Checked<GroupRenewParams>) -> Renewal;
    fn group_release(p: Checked<GroupReleaseParams>) -> u64;
    fn group_read(p: Checked<GroupReadParams>) -> Vec<BucketEvent>;
    fn group_status(p: Checked<GroupStatusParams>) -> GroupStatus;
    fn group_list() -> Vec<GroupInfo>;
    fn group_leave(p: Checked<GroupLeaveParams>) -> u64;
    fn group_dead_add(p: Checked<GroupDeadAddParams>) -> ();
    fn group_dead_list(p: Checked<GroupDeadListParams>) -> Vec<GroupDead>;
    fn group_resize(p: Checked<GroupResizeParams>) -> GroupResize;
    fn group_dead_requeue(p: Checked<GroupDeadRequeueParams>) -> u64;
    fn group_dead_purge(p: Checked<GroupDeadPurgeParams>) -> u64;
    fn group_dead_take(p: Checked<GroupDeadTakeParams>) -> Vec<GroupDead>;
    fn group_dead_resolve(p: Checked<GroupDeadResolveParams>) -> ();
    fn group_counts(p: Checked<GroupStatusParams>) -> Vec<BucketCount>;
    fn group_handoffs(p: Checked<GroupHandoffsParams>) -> GroupHandoffs;
});

forward!(ProcessDriver {
    fn process_beat(p: Checked<ProcessBeatParams>) -> ProcessOrder;
    fn process_order(p: Checked<ProcessOrderParams>) -> bool;
    fn process_remove(p: Checked<ProcessRemoveParams>) -> bool;
    fn process_list() -> Vec<ProcessInfo>;
});

forward!(LockDriver {
    fn lock_acquire(p: Checked<LockAcquireParams>) -> Option<LockGrant>;
    fn lock_renew(p: Checked<LockRenewParams>) -> LockRenewed;
    fn lock_release(p: Checked<LockReleaseParams>) -> LockReleased;
    fn lock_list() -> Vec<LockInfo>;
});

forward!(ScheduleDriver {
    fn schedule_list() -> Vec<ScheduleInfo>;
    fn schedule_fire_due(p: Checked<ScheduleFireParams>) -> FireReport;
    fn schedule_run_now(p: Checked<ScheduleNameParams>) -> Option<Fired>;
    fn schedule_fires(p: Checked<ScheduleFiresParams>) -> Vec<ScheduleFire>;
});

forward!(RateDriver {
    fn rate_acquire(p: Checked<RateAcquireParams>) -> RateDecision;
});

forward!(NotifyDriver {
    fn notify_poll(p: Checked<NotifyPollParams>) -> Vec<Notification>;
    fn notify_ready() -> ();
    fn notify_head() -> i64;
});

forward!(ResultDriver {
    fn result_save(p: Checked<ResultSaveParams>) -> JobOutput;
    fn result_get(p: Checked<ResultGetParams>) -> Option<JobOutput>;
});

/// A connection inside a transaction of either engine.
#[derive(Debug)]
pub enum AnyConn<'c> {
    /// SQLite's.
    #[cfg(feature = "sqlite")]
    Sqlite(&'c alkstore_sqlite::rusqlite::Connection),
    /// PostgreSQL's.
    #[cfg(feature = "postgres")]
    Postgres(alkstore_postgres::PgConn<'c>),
}

impl TxConn for AnyEngine {
    type Conn<'c> = AnyConn<'c>;
}

/// Every operation both engines drive, driven by the one the store
/// opened: the one place `AnyEngine` dispatches writes. The engine's call
/// is made before the future is built, so the future holds no borrow of
/// SQLite's `!Sync` connection.
macro_rules! drive_either {
    ($($bound:tt)*) => {
        impl<P: Op> Drive<P> for AnyEngine
        where
            $($bound)*
        {
            fn drive<'a>(
                &'a self,
                at: At<AnyConn<'a>>,
                params: Checked<P>,
            ) -> impl Future<Output = Result<P::Output>> + Send + 'a {
                #[cfg(feature = "sqlite")]
                let mut sqlite = None;
                #[cfg(feature = "postgres")]
                let mut postgres = None;
                #[allow(unreachable_patterns)]
                match (self, at) {
                    #[cfg(feature = "sqlite")]
                    (AnyEngine::Sqlite(e), At::Auto) => sqlite = Some(e.drive(At::Auto, params)),
                    #[cfg(feature = "sqlite")]
                    (AnyEngine::Sqlite(e), At::Tx(AnyConn::Sqlite(c))) => {
                        sqlite = Some(e.drive(At::Tx(c), params))
                    }
                    #[cfg(feature = "postgres")]
                    (AnyEngine::Postgres(e), At::Auto) => postgres = Some(e.drive(At::Auto, params)),
                    #[cfg(feature = "postgres")]
                    (AnyEngine::Postgres(e), At::Tx(AnyConn::Postgres(c))) => {
                        postgres = Some(e.drive(At::Tx(c), params))
                    }
                    _ => {}
                }
                async move {
                    #[cfg(feature = "sqlite")]
                    if let Some(run) = sqlite {
                        return run.await;
                    }
                    #[cfg(feature = "postgres")]
                    if let Some(run) = postgres {
                        return run.await;
                    }
                    Err(alkstore_core::Error::database(
                        P::NAME,
                        "a transaction of one engine was used on another",
                    ))
                }
            }
        }
    };
}

#[cfg(all(feature = "sqlite", feature = "postgres"))]
drive_either!(SqliteEngine: Drive<P>, PgEngine: Drive<P>);
#[cfg(all(feature = "sqlite", not(feature = "postgres")))]
drive_either!(SqliteEngine: Drive<P>);
#[cfg(all(feature = "postgres", not(feature = "sqlite")))]
drive_either!(PgEngine: Drive<P>);
