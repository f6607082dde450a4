//! The consumer-group area on SQLite: the [`GroupDriver`] implementation
//! (here, each call handed to the part that does it) and its SQL
//! functions.
//!
//! - `hash`: PostgreSQL's hash as a SQL function, the bucket expression;
//! - `leases`: create a group, claim, renew, release, leave, resize;
//! - `checkpoint`: save a bucket's checkpoint;
//! - `read`: a group's events, status, list and counts;
//! - `dead`: a group's dead letters.

pub(crate) mod checkpoint;
mod dead;
pub(crate) mod hash;
mod leases;
mod read;

use alkstore_core::group::BucketCount;
use alkstore_core::group::{
    BucketEvent, BucketLease, GroupClaimParams, GroupDead, GroupDeadAddParams, GroupDeadListParams,
    GroupDeadPurgeParams, GroupDeadRequeueParams, GroupDeadResolveParams, GroupDeadTakeParams,
    GroupDriver, GroupEnsureParams, GroupInfo, GroupLeaveParams, GroupReadParams,
    GroupReleaseParams, GroupRenewParams, GroupResize, GroupResizeParams, GroupStatus,
    GroupStatusParams, Renewal,
};
use alkstore_core::{Checked, Result};

use crate::SqliteEngine;

impl GroupDriver for SqliteEngine {
    async fn group_ensure(&self, params: Checked<GroupEnsureParams>) -> Result<()> {
        leases::group_ensure(self, params).await
    }

    async fn group_claim(&self, params: Checked<GroupClaimParams>) -> Result<Vec<BucketLease>> {
        leases::group_claim(self, params).await
    }

    async fn group_renew(&self, params: Checked<GroupRenewParams>) -> Result<Renewal> {
        leases::group_renew(self, params).await
    }

    async fn group_release(&self, params: Checked<GroupReleaseParams>) -> Result<u64> {
        leases::group_release(self, params).await
    }

    async fn group_read(&self, params: Checked<GroupReadParams>) -> Result<Vec<BucketEvent>> {
        read::group_read(self, params).await
    }

    async fn group_status(&self, params: Checked<GroupStatusParams>) -> Result<GroupStatus> {
        read::group_status(self, params).await
    }

    async fn group_list(&self) -> Result<Vec<GroupInfo>> {
        read::group_list(self).await
    }

    async fn group_leave(&self, params: Checked<GroupLeaveParams>) -> Result<u64> {
        leases::group_leave(self, params).await
    }

    async fn group_dead_add(&self, params: Checked<GroupDeadAddParams>) -> Result<()> {
        dead::group_dead_add(self, params).await
    }

    async fn group_dead_list(
        &self,
        params: Checked<GroupDeadListParams>,
    ) -> Result<Vec<GroupDead>> {
        dead::group_dead_list(self, params).await
    }

    async fn group_resize(&self, params: Checked<GroupResizeParams>) -> Result<GroupResize> {
        leases::group_resize(self, params).await
    }

    async fn group_dead_requeue(&self, params: Checked<GroupDeadRequeueParams>) -> Result<u64> {
        dead::group_dead_requeue(self, params).await
    }

    async fn group_dead_purge(&self, params: Checked<GroupDeadPurgeParams>) -> Result<u64> {
        dead::group_dead_purge(self, params).await
    }

    async fn group_dead_take(
        &self,
        params: Checked<GroupDeadTakeParams>,
    ) -> Result<Vec<GroupDead>> {
        dead::group_dead_take(self, params).await
    }

    async fn group_dead_resolve(&self, params: Checked<GroupDeadResolveParams>) -> Result<()> {
        dead::group_dead_resolve(self, params).await
    }

    async fn group_counts(&self, params: Checked<GroupStatusParams>) -> Result<Vec<BucketCount>> {
        read::group_counts(self, params).await
    }

    async fn group_handoffs(
        &self,
        params: Checked<alkstore_core::group::GroupHandoffsParams>,
    ) -> Result<alkstore_core::group::GroupHandoffs> {
        read::group_handoffs(self, params).await
    }
}
