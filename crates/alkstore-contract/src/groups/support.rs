//! Helpers the group rows share.

use std::time::Duration;

use alkstore_core::group::{
    BucketLease, GroupClaimParams, GroupEnsureParams, GroupReleaseParams, GroupRenewParams, Renewal,
};
use alkstore_core::GroupEngine;

/// The lease TTL the rows use: moved past by advancing the clock.
pub(crate) const TTL: Duration = Duration::from_secs(10);

/// Create group `group` on stream `s` with `n` buckets.
pub(super) async fn ensure<E: GroupEngine + alkstore_core::AllOps>(e: &E, group: &str, n: u32) {
    e.group_ensure(GroupEnsureParams::new(group, "s", n))
        .await
        .expect("ensure");
}

/// `worker` claims up to `max` buckets of `group` for [`TTL`].
pub(crate) async fn claim<E: GroupEngine + alkstore_core::AllOps>(
    e: &E,
    group: &str,
    worker: &str,
    max: u32,
) -> Vec<BucketLease> {
    e.group_claim(GroupClaimParams::new(group, worker, TTL, max))
        .await
        .expect("claim")
}

/// `worker` renews its leases in `group` for [`TTL`].
pub(super) async fn renew<E: GroupEngine + alkstore_core::AllOps>(
    e: &E,
    group: &str,
    worker: &str,
) -> Renewal {
    e.group_renew(GroupRenewParams::new(group, worker, TTL))
        .await
        .expect("renew")
}

/// `worker` releases `buckets` of `group`; how many it released.
pub(super) async fn release<E: GroupEngine + alkstore_core::AllOps>(
    e: &E,
    group: &str,
    worker: &str,
    buckets: &[u32],
) -> u64 {
    e.group_release(GroupReleaseParams::new(group, worker, buckets.to_vec()))
        .await
        .expect("release")
}

/// The buckets of `leases`.
pub(super) fn buckets(leases: &[BucketLease]) -> Vec<u32> {
    leases.iter().map(|l| l.bucket).collect()
}

/// Each bucket's owner, by bucket.
pub(super) async fn owners<E: GroupEngine + alkstore_core::AllOps>(
    e: &E,
    group: &str,
) -> Vec<Option<String>> {
    e.group_status(group)
        .await
        .expect("status")
        .buckets
        .into_iter()
        .map(|b| b.owner)
        .collect()
}
