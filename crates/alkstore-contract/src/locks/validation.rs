//! Bad input to lock calls: typed errors, nothing written.

use std::time::Duration;

use alkstore_core::lock::{LockAcquireParams, LockReleaseParams, LockRenewParams};
use alkstore_core::{ErrorKind, LockEngine};

use crate::Harness;

/// Empty or over-long names and owners, a TTL of zero or above a day are
/// `InvalidInput`, and no lock row appears.
pub async fn bad_lock_input_is_refused_and_writes_nothing<H: Harness>(h: &H) {
    let e = h.engine();
    let ttl = Duration::from_secs(1);
    let long = "x".repeat(201);
    let invalid = [
        e.lock_acquire(LockAcquireParams::new("", "a", ttl))
            .await
            .map(|_| ()),
        e.lock_acquire(LockAcquireParams::new(long.as_str(), "a", ttl))
            .await
            .map(|_| ()),
        e.lock_acquire(LockAcquireParams::new("l", "", ttl))
            .await
            .map(|_| ()),
        e.lock_acquire(LockAcquireParams::new("l", "a", Duration::ZERO))
            .await
            .map(|_| ()),
        e.lock_acquire(LockAcquireParams::new(
            "l",
            "a",
            Duration::from_secs(86_401),
        ))
        .await
        .map(|_| ()),
        e.lock_renew(LockRenewParams::new("l", "a", 1, Duration::ZERO))
            .await
            .map(|_| ()),
        e.lock_renew(LockRenewParams::new("", "a", 1, ttl))
            .await
            .map(|_| ()),
        e.lock_release(LockReleaseParams::new("l", "", 1))
            .await
            .map(|_| ()),
    ];
    for (i, r) in invalid.into_iter().enumerate() {
        let err = r.expect_err("refused");
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "case {i}: {err}");
    }
    assert!(e.lock_list().await.expect("list").is_empty());
}

/// The rows above, for [`contract_suite!`](crate::contract_suite).
#[doc(hidden)]
#[macro_export]
macro_rules! __locks_validation {
    ($then:path, $args:tt) => {
        $then! { @rows $args locks::validation [
            bad_lock_input_is_refused_and_writes_nothing,
        ] }
    };
}
