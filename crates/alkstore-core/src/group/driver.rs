//! [`GroupDriver`]: what an engine implements for consumer groups — SQL
//! and nothing else (see [`crate::call`]).

use std::future::Future;

use crate::{Checked, Engine, Result};

use super::params::*;
use super::types::*;

/// The consumer-group statements of one engine. Each method takes
/// [`Checked`] parameters; callers use [`GroupEngine`](super::GroupEngine),
/// whose methods document the behaviour (the contract suite checks it).
/// Every lease expiry is decided by the database's clock (the engine's
/// injected clock in tests), never by a time the caller passes.
///
/// **Unstable**: part of the engines' seam, which changes as the engines
/// do. Applications use the `alkstore` crate's handles (`Store::queue`,
/// `Store::jobs`, …) instead.
pub trait GroupDriver: Engine {
    /// See [`GroupEngine::group_ensure`](super::GroupEngine::group_ensure).
    fn group_ensure(
        &self,
        params: Checked<GroupEnsureParams>,
    ) -> impl Future<Output = Result<()>> + Send;

    /// See [`GroupEngine::group_claim`](super::GroupEngine::group_claim).
    fn group_claim(
        &self,
        params: Checked<GroupClaimParams>,
    ) -> impl Future<Output = Result<Vec<BucketLease>>> + Send;

    /// See [`GroupEngine::group_renew`](super::GroupEngine::group_renew).
    fn group_renew(
        &self,
        params: Checked<GroupRenewParams>,
    ) -> impl Future<Output = Result<Renewal>> + Send;

    /// See [`GroupEngine::group_release`](super::GroupEngine::group_release).
    fn group_release(
        &self,
        params: Checked<GroupReleaseParams>,
    ) -> impl Future<Output = Result<u64>> + Send;

    /// See [`GroupEngine::group_read`](super::GroupEngine::group_read).
    fn group_read(
        &self,
        params: Checked<GroupReadParams>,
    ) -> impl Future<Output = Result<Vec<BucketEvent>>> + Send;

    /// See [`GroupEngine::group_status`](super::GroupEngine::group_status).
    fn group_status(
        &self,
        params: Checked<GroupStatusParams>,
    ) -> impl Future<Output = Result<GroupStatus>> + Send;

    /// See [`GroupEngine::group_list`](super::GroupEngine::group_list).
    fn group_list(&self) -> impl Future<Output = Result<Vec<GroupInfo>>> + Send;

    /// See [`GroupEngine::group_leave`](super::GroupEngine::group_leave).
    fn group_leave(
        &self,
        params: Checked<GroupLeaveParams>,
    ) -> impl Future<Output = Result<u64>> + Send;

    /// See [`GroupEngine::group_dead_add`](super::GroupEngine::group_dead_add).
    fn group_dead_add(
        &self,
        params: Checked<GroupDeadAddParams>,
    ) -> impl Future<Output = Result<()>> + Send;

    /// See [`GroupEngine::group_dead_list`](super::GroupEngine::group_dead_list).
    fn group_dead_list(
        &self,
        params: Checked<GroupDeadListParams>,
    ) -> impl Future<Output = Result<Vec<GroupDead>>> + Send;

    /// See [`GroupEngine::group_resize`](super::GroupEngine::group_resize).
    fn group_resize(
        &self,
        params: Checked<GroupResizeParams>,
    ) -> impl Future<Output = Result<GroupResize>> + Send;

    /// See [`GroupEngine::group_dead_requeue`](super::GroupEngine::group_dead_requeue).
    fn group_dead_requeue(
        &self,
        params: Checked<GroupDeadRequeueParams>,
    ) -> impl Future<Output = Result<u64>> + Send;

    /// See [`GroupEngine::group_dead_purge`](super::GroupEngine::group_dead_purge).
    fn group_dead_purge(
        &self,
        params: Checked<GroupDeadPurgeParams>,
    ) -> impl Future<Output = Result<u64>> + Send;

    /// See [`GroupEngine::group_dead_take`](super::GroupEngine::group_dead_take).
    fn group_dead_take(
        &self,
        params: Checked<GroupDeadTakeParams>,
    ) -> impl Future<Output = Result<Vec<GroupDead>>> + Send;

    /// See [`GroupEngine::group_dead_resolve`](super::GroupEngine::group_dead_resolve).
    fn group_dead_resolve(
        &self,
        params: Checked<GroupDeadResolveParams>,
    ) -> impl Future<Output = Result<()>> + Send;

    /// See [`GroupEngine::group_counts`](super::GroupEngine::group_counts).
    fn group_counts(
        &self,
        params: Checked<GroupStatusParams>,
    ) -> impl Future<Output = Result<Vec<BucketCount>>> + Send;

    /// See [`GroupEngine::group_handoffs`](super::GroupEngine::group_handoffs).
    fn group_handoffs(
        &self,
        params: Checked<GroupHandoffsParams>,
    ) -> impl Future<Output = Result<GroupHandoffs>> + Send;
}
