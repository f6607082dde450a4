//! Consumer groups through the facade: a [`Group`] handle to inspect one
//! group, and a [`GroupRunner`] that runs a handler over the group's share
//! of a stream's buckets, with every other worker of the group.
//!
//! Start the same program N times, with no coordinator: each worker
//! renews its leases every heartbeat, claims buckets (one per pass) while
//! below its fair share `ceil(N / live workers)`, releases its surplus when
//! a worker joins, and takes over a dead worker's buckets once their leases
//! lapse by the database's clock. Per owned bucket a reader handles the
//! bucket's events in offset order and checkpoints under the lease's epoch,
//! so a worker that lost a bucket can move nothing.
//!
//! A plain handler ([`GroupRunner::handler`]) is at least once. A
//! transactional one ([`GroupRunner::handler_tx`]) writes through the transaction that
//! commits the bucket's checkpoint, in batches: its writes land exactly
//! once, even when a worker is frozen past its lease or killed mid-batch
//! (see `examples/projection.rs` for a read model kept this way).

// Layout: `runner` is the builder and `run_until`; `coordinator` renews, claims
// and releases leases every heartbeat and starts and stops the bucket
// tasks; `fetch` reads the owned buckets' events and hands them out;
// `bucket` is one owned bucket's task (handler runs, retries, dead
// letters, checkpoints); `options` and `shared` are leaves the others
// import (the options; the types they pass between them).

mod bucket;
mod coordinator;
mod fetch;
mod options;
mod runner;
mod shared;

// Everything but the driver trait, whose method names would clash with
// `GroupEngine`'s in a glob import.
pub use alkstore_core::group::{
    bucket_of, bucket_of_offset, hashtextextended, rebalance, ttl_ms, BucketEvent, BucketLease,
    BucketStatus, GroupCheckpointParams, GroupClaimParams, GroupDead, GroupDeadAddParams,
    GroupDeadListParams, GroupDeadPurgeParams, GroupDeadRequeueParams, GroupDeadResolveParams,
    GroupDeadTakeParams, GroupEnsureParams, GroupHandoffs, GroupHandoffsParams, GroupInfo,
    GroupLeaveParams, GroupReadParams, GroupReleaseParams, GroupRenewParams, GroupResize,
    GroupResizeParams, GroupStatus, GroupStatusParams, HandoffCause, Rebalance, Renewal,
    MAX_BUCKETS, MAX_LEASE_TTL,
};
pub use options::GroupOpts;
pub use runner::GroupRunner;
pub use shared::{GroupEvent, GroupReport};

use crate::runs::Runs;
use alkstore_core::Writes as _;
use alkstore_core::{GroupEngine, Result};

use crate::Store;

/// A handle to one consumer group of a store: its status and dead
/// letters, and checkpoints (on a transaction too). A worker of the group
/// is a [`GroupRunner`]:
///
/// ```no_run
/// # async fn demo(store: alkstore::Store) -> alkstore::Result<()> {
/// use alkstore::group::{GroupEvent, GroupRunner};
/// let report = GroupRunner::new(store.clone(), "projections", "orders")
///     .buckets(16)
///     .handler(|e: GroupEvent<serde_json::Value>| async move {
///         println!("bucket {} offset {}: {}", e.bucket(), e.offset(), e.payload());
///         Ok::<(), std::io::Error>(())
///     })
///     .run_until(alkstore::shutdown_signal())
///     .await?;
/// let status = store.group("projections").status().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Group<R: Runs = Store> {
    store: R,
    name: String,
}

/// `checkpoint` runs where the handle was made (see [`Runs`]); inside a
/// transaction (`tx.group(name).checkpoint(..)`) the lease stays the
/// caller's until the transaction ends, so the handler's writes and the
/// checkpoint commit together or not at all.
impl<R: Runs> Group<R> {
    pub(crate) fn new(store: R, name: String) -> Group<R> {
        Group { store, name }
    }

    /// The group's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Save `bucket`'s checkpoint at `offset`, under the lease `worker`
    /// holds with `epoch` (forward only); the checkpoint after the call.
    /// [`Error::NotHeld`](crate::Error::NotHeld) when the lease is no
    /// longer the worker's (inside a transaction: it poisons it).
    pub async fn checkpoint(
        &self,
        bucket: u32,
        worker: &str,
        epoch: i64,
        offset: i64,
    ) -> Result<i64> {
        let params = GroupCheckpointParams::new(self.name.clone(), bucket, worker, epoch, offset);
        self.store.place().group_checkpoint(params).await
    }
}

impl Group {
    /// Every bucket: owner, epoch, lease expiry, checkpoint, lag.
    pub async fn status(&self) -> Result<GroupStatus> {
        self.store.engine().group_status(self.name.as_str()).await
    }

    /// Every bucket's owner and epoch, without the lag (which costs a
    /// count per bucket): the group's layout, cheaply.
    pub async fn status_without_lag(&self) -> Result<GroupStatus> {
        self.store
            .engine()
            .group_status(GroupStatusParams::without_lag(self.name.clone()))
            .await
    }

    /// Up to `limit` dead letters after offset `after`.
    pub async fn dead_letters(&self, after: i64, limit: u32) -> Result<Vec<GroupDead>> {
        self.store
            .engine()
            .group_dead_list(GroupDeadListParams::new(self.name.clone(), after, limit))
            .await
    }

    /// Hand the dead letters at `offsets` (empty: every one of the group's)
    /// back to their buckets' holders to run again; how many.
    pub async fn requeue_dead(&self, offsets: Vec<i64>) -> Result<u64> {
        self.store
            .engine()
            .group_dead_requeue(GroupDeadRequeueParams::new(self.name.clone(), offsets))
            .await
    }

    /// Delete the dead letters at `offsets` (empty: every one of the
    /// group's); how many.
    pub async fn purge_dead(&self, offsets: Vec<i64>) -> Result<u64> {
        self.store
            .engine()
            .group_dead_purge(GroupDeadPurgeParams::new(self.name.clone(), offsets))
            .await
    }

    /// The last `limit` bucket handoffs (who took a bucket from whom, and
    /// why) and the totals per cause.
    pub async fn handoffs(&self, limit: u32) -> Result<GroupHandoffs> {
        self.store
            .engine()
            .group_handoffs(GroupHandoffsParams::new(self.name.clone(), limit))
            .await
    }

    /// Change the group's bucket count to `buckets` (every bucket restarts
    /// from the lowest checkpoint). Refused with
    /// [`ErrorKind::Conflict`](crate::ErrorKind::Conflict) while any lease
    /// is live: stop the group's workers first.
    pub async fn resize(&self, buckets: u32) -> Result<GroupResize> {
        self.store
            .engine()
            .group_resize(GroupResizeParams::new(self.name.clone(), buckets))
            .await
    }

    /// Create the group over `stream` with `buckets` buckets, or check that
    /// it exists with them ([`ErrorKind::GroupMismatch`](crate::ErrorKind::GroupMismatch)
    /// otherwise; nothing is written).
    pub async fn ensure(&self, stream: impl Into<String>, buckets: u32) -> Result<()> {
        self.store
            .engine()
            .group_ensure(GroupEnsureParams::new(self.name.clone(), stream, buckets))
            .await
    }

    /// The group as member `worker` drives it by hand: renew, claim and
    /// release bucket leases, read the held buckets' events, checkpoint,
    /// leave. A [`GroupRunner`] does all this for a handler; this is for a
    /// member that runs elsewhere (the HTTP member protocol).
    pub fn member(&self, worker: impl Into<String>) -> Member {
        Member {
            store: self.store.clone(),
            group: self.name.clone(),
            worker: worker.into(),
        }
    }
}

/// One member of a consumer group, driven by hand (see [`Group::member`]).
/// Its checkpoints are fenced by the lease's epoch, as the runner's are; a
/// read is not (it reads whichever buckets it is given), so read only the
/// buckets the last `renew` or `claim` says the member holds.
#[derive(Debug, Clone)]
pub struct Member {
    store: Store,
    group: String,
    worker: String,
}

impl Member {
    /// The member's id.
    pub fn worker(&self) -> &str {
        &self.worker
    }

    /// Extend every lease the member holds by `ttl`; what it still holds,
    /// and how many members are live (for [`rebalance`]).
    pub async fn renew(&self, ttl: std::time::Duration) -> Result<Renewal> {
        self.store
            .engine()
            .group_renew(GroupRenewParams::new(&*self.group, &*self.worker, ttl))
            .await
    }

    /// Take up to `want` free or lapsed buckets for `ttl`.
    pub async fn claim(&self, ttl: std::time::Duration, want: u32) -> Result<Vec<BucketLease>> {
        self.store
            .engine()
            .group_claim(GroupClaimParams::new(
                &*self.group,
                &*self.worker,
                ttl,
                want,
            ))
            .await
    }

    /// Give `buckets` back at once (the others take them without waiting
    /// for the TTL); how many were held.
    pub async fn release(&self, buckets: Vec<u32>) -> Result<u64> {
        self.store
            .engine()
            .group_release(GroupReleaseParams::new(
                &*self.group,
                &*self.worker,
                buckets,
            ))
            .await
    }

    /// Up to `limit` events of `buckets` after offset `after`, in offset
    /// order, each with its bucket.
    pub async fn read(
        &self,
        buckets: Vec<u32>,
        after: i64,
        limit: u32,
    ) -> Result<Vec<alkstore_core::group::BucketEvent>> {
        self.store
            .engine()
            .group_read(GroupReadParams::buckets(
                &*self.group,
                buckets,
                after,
                limit,
            ))
            .await
    }

    /// Save `bucket`'s checkpoint at `offset` under the lease's `epoch`
    /// ([`ErrorKind::NotHeld`](crate::ErrorKind::NotHeld) when the bucket
    /// has a newer holder); the saved checkpoint.
    pub async fn checkpoint(&self, bucket: u32, epoch: i64, offset: i64) -> Result<i64> {
        let params = GroupCheckpointParams::new(&*self.group, bucket, &*self.worker, epoch, offset);
        self.store.place().group_checkpoint(params).await
    }

    /// Leave the group: every lease given back; how many.
    pub async fn leave(&self) -> Result<u64> {
        self.store
            .engine()
            .group_leave(GroupLeaveParams::new(&*self.group, &*self.worker))
            .await
    }
}
