//! [`GroupEngine`]: the consumer-group calls, implemented once for every
//! [`GroupDriver`] through the one wrapper ([`crate::call`]).

use std::future::Future;

use crate::call::engine_call;
use crate::{Engine, Result};

use super::driver::GroupDriver;
use super::params::*;
use super::types::*;

/// Leases on the buckets of consumer groups, their fenced checkpoints, and
/// bucket reads. Every engine has it (through its [`GroupDriver`]); the
/// contract suite checks they behave the same. Bad input is a typed error
/// and writes nothing. Expiry is decided by the database's clock.
///
/// **Unstable**: part of the engines' seam, which changes as the engines
/// do. Applications use the `alkstore` crate's handles (`Store::queue`,
/// `Store::jobs`, …) instead.
pub trait GroupEngine: Engine {
    /// Make sure the group's N bucket rows exist (idempotent: safe on every
    /// worker start). A group that exists with another N or another stream
    /// is a [`GroupMismatch`](crate::Error::GroupMismatch) error, raised
    /// before anything is written.
    fn group_ensure(&self, params: GroupEnsureParams) -> impl Future<Output = Result<()>> + Send;

    /// Take up to `max` buckets that are unowned or whose lease has lapsed,
    /// lowest first; each claim bumps the bucket's epoch. Two claimers never
    /// win the same bucket. Returns the leases taken (possibly none).
    fn group_claim(
        &self,
        params: GroupClaimParams,
    ) -> impl Future<Output = Result<Vec<BucketLease>>> + Send;

    /// Renew every lease the worker still holds and report them, with the
    /// number of live workers (the caller is one: renewing also renews its
    /// membership); a bucket missing from `held` was taken over.
    fn group_renew(&self, params: GroupRenewParams)
        -> impl Future<Output = Result<Renewal>> + Send;

    /// Give buckets back at once (clean shutdown, surplus). Only buckets the
    /// worker still holds are touched; returns how many were released.
    fn group_release(&self, params: GroupReleaseParams)
        -> impl Future<Output = Result<u64>> + Send;

    /// Up to `limit` readable events of the given buckets after an offset,
    /// in offset order, each with its bucket (gap-safe like
    /// [`stream_read`](crate::StreamEngine::stream_read)).
    /// A keyed event is in bucket `(((hashtextextended(key, 0) % N) + N) % N)`,
    /// one without a key in `offset % N`. A group or bucket that does not
    /// exist reads nothing.
    fn group_read(
        &self,
        params: GroupReadParams,
    ) -> impl Future<Output = Result<Vec<BucketEvent>>> + Send;

    /// Every bucket of a group: owner, epoch, expiry, checkpoint, lag. A
    /// group that does not exist is [`NotFound`](crate::Error::NotFound).
    fn group_status(
        &self,
        params: impl Into<GroupStatusParams> + Send,
    ) -> impl Future<Output = Result<GroupStatus>> + Send;

    /// A group's rows per bucket count, by count: one entry of `N` buckets
    /// with `N` rows for a sound group; several would mean mixed counts (which
    /// `group_ensure` and `group_resize` never leave behind). Empty for an
    /// unknown group.
    fn group_counts(
        &self,
        params: impl Into<GroupStatusParams> + Send,
    ) -> impl Future<Output = Result<Vec<BucketCount>>> + Send;

    /// A group's lease history: its latest handoffs (who took which bucket
    /// from whom, and why: a first lease, a rebalance, a leave, or a lapse
    /// — a failover), newest first, kept for
    /// [`HANDOFF_RETENTION`](super::HANDOFF_RETENTION); and every handoff
    /// counted by cause since the group was created.
    fn group_handoffs(
        &self,
        params: GroupHandoffsParams,
    ) -> impl Future<Output = Result<GroupHandoffs>> + Send;

    /// Every group, by name.
    fn group_list(&self) -> impl Future<Output = Result<Vec<GroupInfo>>> + Send;

    /// A worker's clean exit: release every bucket it holds and drop it from
    /// the group's live workers. Returns how many buckets it released.
    fn group_leave(&self, params: GroupLeaveParams) -> impl Future<Output = Result<u64>> + Send;

    /// Record an event the handler gave up on, with its error, so the bucket
    /// can go on. Fenced like a checkpoint: only the bucket's holder under
    /// `epoch`, else [`NotHeld`](crate::Error::NotHeld). Recording the same
    /// event again replaces the record.
    fn group_dead_add(&self, params: GroupDeadAddParams)
        -> impl Future<Output = Result<()>> + Send;

    /// Change a group's bucket count N. Refused with
    /// [`Conflict`](crate::Error::Conflict) while any bucket's lease is live
    /// (stop the group's workers first, or let their leases lapse), and
    /// [`NotFound`](crate::Error::NotFound) for an unknown group. Every new
    /// bucket starts from the lowest old checkpoint, so no event is skipped:
    /// the events between that and a bucket's own old checkpoint are
    /// delivered again. Epochs carry on from the highest old one, so no
    /// fencing token from before the resize is ever current again.
    fn group_resize(
        &self,
        params: GroupResizeParams,
    ) -> impl Future<Output = Result<GroupResize>> + Send;

    /// Ask for dead letters to run again (the given offsets, or all of the
    /// group's); returns how many were marked. The holder of each one's
    /// bucket takes it within a poll interval, runs it (out of offset order:
    /// after the events it has already handled), and deletes it on success;
    /// a failure records the new error and leaves it dead again. A worker
    /// that dies while running one leaves it dead, to be requeued again.
    fn group_dead_requeue(
        &self,
        params: GroupDeadRequeueParams,
    ) -> impl Future<Output = Result<u64>> + Send;

    /// Delete dead letters for good (the given offsets, or all of the
    /// group's, requeued or not); returns how many were deleted. Their
    /// events stay in the stream; the group's checkpoints do not move.
    fn group_dead_purge(
        &self,
        params: GroupDeadPurgeParams,
    ) -> impl Future<Output = Result<u64>> + Send;

    /// Take up to `limit` requeued dead letters of the buckets the worker
    /// holds, clearing their mark (so no one else takes them).
    fn group_dead_take(
        &self,
        params: GroupDeadTakeParams,
    ) -> impl Future<Output = Result<Vec<GroupDead>>> + Send;

    /// Delete a dead letter that ran successfully. Fenced like a
    /// checkpoint: only the bucket's holder under `epoch`, else
    /// [`NotHeld`](crate::Error::NotHeld) and it stays.
    fn group_dead_resolve(
        &self,
        params: GroupDeadResolveParams,
    ) -> impl Future<Output = Result<()>> + Send;

    /// A group's dead letters after an offset, in offset order.
    fn group_dead_list(
        &self,
        params: GroupDeadListParams,
    ) -> impl Future<Output = Result<Vec<GroupDead>>> + Send;
}

impl<D: GroupDriver> GroupEngine for D {
    async fn group_ensure(&self, params: GroupEnsureParams) -> Result<()> {
        engine_call!(self, group_ensure, params => GroupEnsureParams, |p| {
            GroupDriver::group_ensure(self, p)
        })
    }

    async fn group_claim(&self, params: GroupClaimParams) -> Result<Vec<BucketLease>> {
        engine_call!(self, group_claim, params => GroupClaimParams, |p| {
            GroupDriver::group_claim(self, p)
        })
    }

    async fn group_renew(&self, params: GroupRenewParams) -> Result<Renewal> {
        engine_call!(self, group_renew, params => GroupRenewParams, |p| {
            GroupDriver::group_renew(self, p)
        })
    }

    async fn group_release(&self, params: GroupReleaseParams) -> Result<u64> {
        engine_call!(self, group_release, params => GroupReleaseParams, |p| async move {
            if p.buckets.is_empty() {
                return Ok(0);
            }
            GroupDriver::group_release(self, p).await
        })
    }

    async fn group_read(&self, params: GroupReadParams) -> Result<Vec<BucketEvent>> {
        engine_call!(self, group_read, params => GroupReadParams, |p| async move {
            if p.buckets.is_empty() {
                return Ok(Vec::new());
            }
            GroupDriver::group_read(self, p).await
        })
    }

    async fn group_status(
        &self,
        params: impl Into<GroupStatusParams> + Send,
    ) -> Result<GroupStatus> {
        engine_call!(self, group_status, params => GroupStatusParams, |p| {
            GroupDriver::group_status(self, p)
        })
    }

    async fn group_list(&self) -> Result<Vec<GroupInfo>> {
        engine_call!(self, group_list, () => (), |_p| GroupDriver::group_list(self))
    }

    async fn group_leave(&self, params: GroupLeaveParams) -> Result<u64> {
        engine_call!(self, group_leave, params => GroupLeaveParams, |p| {
            GroupDriver::group_leave(self, p)
        })
    }

    async fn group_dead_add(&self, params: GroupDeadAddParams) -> Result<()> {
        engine_call!(self, group_dead_add, params => GroupDeadAddParams, |p| {
            GroupDriver::group_dead_add(self, p)
        })
    }

    async fn group_dead_list(&self, params: GroupDeadListParams) -> Result<Vec<GroupDead>> {
        engine_call!(self, group_dead_list, params => GroupDeadListParams, |p| {
            GroupDriver::group_dead_list(self, p)
        })
    }

    async fn group_resize(&self, params: GroupResizeParams) -> Result<GroupResize> {
        engine_call!(self, group_resize, params => GroupResizeParams, |p| {
            GroupDriver::group_resize(self, p)
        })
    }

    async fn group_dead_requeue(&self, params: GroupDeadRequeueParams) -> Result<u64> {
        engine_call!(self, group_dead_requeue, params => GroupDeadRequeueParams, |p| {
            GroupDriver::group_dead_requeue(self, p)
        })
    }

    async fn group_dead_purge(&self, params: GroupDeadPurgeParams) -> Result<u64> {
        engine_call!(self, group_dead_purge, params => GroupDeadPurgeParams, |p| {
            GroupDriver::group_dead_purge(self, p)
        })
    }

    async fn group_dead_take(&self, params: GroupDeadTakeParams) -> Result<Vec<GroupDead>> {
        engine_call!(self, group_dead_take, params => GroupDeadTakeParams, |p| {
            GroupDriver::group_dead_take(self, p)
        })
    }

    async fn group_dead_resolve(&self, params: GroupDeadResolveParams) -> Result<()> {
        engine_call!(self, group_dead_resolve, params => GroupDeadResolveParams, |p| {
            GroupDriver::group_dead_resolve(self, p)
        })
    }

    async fn group_counts(
        &self,
        params: impl Into<GroupStatusParams> + Send,
    ) -> Result<Vec<BucketCount>> {
        engine_call!(self, group_counts, params => GroupStatusParams, |p| {
            GroupDriver::group_counts(self, p)
        })
    }

    async fn group_handoffs(&self, params: GroupHandoffsParams) -> Result<GroupHandoffs> {
        engine_call!(self, group_handoffs, params => GroupHandoffsParams, |p| {
            GroupDriver::group_handoffs(self, p)
        })
    }
}
