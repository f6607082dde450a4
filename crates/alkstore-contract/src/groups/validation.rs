//! Bad input to group calls: typed errors, nothing written.

use alkstore_core::Writes as _;
use std::time::Duration;

use alkstore_core::group::{
    GroupCheckpointParams, GroupClaimParams, GroupEnsureParams, GroupReadParams,
    GroupReleaseParams, GroupRenewParams, MAX_BUCKETS,
};
use alkstore_core::{ErrorKind, GroupEngine};

use super::support::TTL;
use crate::{Harness, Where};

/// Empty names, N of 0 or above the cap, a TTL of 0, a claim of 0, a
/// negative checkpoint or an epoch below 1, a read limit of 0 and an
/// out-of-range bucket are `InvalidInput`; an unknown group's status and
/// renewal are `NotFound`; nothing is created by any of them.
pub async fn bad_group_input_is_refused_and_writes_nothing<H: Harness>(h: &H, at: Where) {
    let e = h.engine();
    let w = crate::writer(h, at);
    let invalid = [
        e.group_ensure(GroupEnsureParams::new("", "s", 4)).await,
        e.group_ensure(GroupEnsureParams::new("g", "", 4)).await,
        e.group_ensure(GroupEnsureParams::new("g", "s", 0)).await,
        e.group_ensure(GroupEnsureParams::new("g", "s", MAX_BUCKETS + 1))
            .await,
        e.group_claim(GroupClaimParams::new("g", "w", Duration::ZERO, 1))
            .await
            .map(|_| ()),
        e.group_claim(GroupClaimParams::new("g", "w", TTL, 0))
            .await
            .map(|_| ()),
        e.group_claim(GroupClaimParams::new("g", "", TTL, 1))
            .await
            .map(|_| ()),
        e.group_renew(GroupRenewParams::new("g", "w", Duration::ZERO))
            .await
            .map(|_| ()),
        e.group_release(GroupReleaseParams::new("g", "w", vec![MAX_BUCKETS]))
            .await
            .map(|_| ()),
        w.group_checkpoint(GroupCheckpointParams::new("g", 0, "w", 1, -1))
            .await
            .map(|_| ()),
        w.group_checkpoint(GroupCheckpointParams::new("g", 0, "w", 0, 1))
            .await
            .map(|_| ()),
        e.group_read(GroupReadParams::new("g", 0, 0, 0))
            .await
            .map(|_| ()),
    ];
    for (i, r) in invalid.into_iter().enumerate() {
        let err = r.expect_err("refused");
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "case {i}: {err}");
    }
    let err = e.group_status("g").await.expect_err("unknown");
    assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
    let err = e
        .group_renew(GroupRenewParams::new("g", "w", TTL))
        .await
        .expect_err("unknown");
    assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
    assert!(e.group_list().await.expect("list").is_empty());
}

/// The rows above, for [`contract_suite!`](crate::contract_suite).
#[doc(hidden)]
#[macro_export]
macro_rules! __groups_validation {
    ($then:path, $args:tt) => {
        $then! { @places $args groups::validation [
            bad_group_input_is_refused_and_writes_nothing,
        ] }
    };
}
