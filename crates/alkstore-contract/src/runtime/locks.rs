//! Lock guards: renewing in the background, reporting loss, releasing on
//! drop.

use std::time::Duration;

use alkstore::lock::{LockReleaseParams, LockReleased};
use alkstore::prelude::LockEngine;

use crate::RuntimeHarness;

/// Short enough that the guard must renew several times within a row, long
/// enough that a loaded test machine's stalls do not outlast it.
const TTL: Duration = Duration::from_secs(1);

/// A guard keeps its lock well past one TTL by renewing it; dropping the
/// guard releases it, and the next holder's token is higher.
pub async fn a_guard_renews_its_lock_and_releases_it_on_drop<H: RuntimeHarness>(h: &H) {
    let store = h.store();
    let guard = store
        .lock("singleton")
        .ttl(TTL)
        .try_acquire()
        .await
        .expect("acquire")
        .expect("free");
    let rival = store.lock("singleton").owner("rival").ttl(TTL);
    for _ in 0..5 {
        tokio::time::sleep(TTL / 2).await;
        assert!(guard.is_held());
        assert!(rival.try_acquire().await.expect("try").is_none(), "renewed");
    }
    let first = guard.token();
    drop(guard);
    // Held for a minute unless released: only the drop can free it in time.
    let rival = rival.ttl(Duration::from_secs(60));
    let second = acquired_within_10s(&rival).await;
    assert!(second.token() > first);
    drop(second);
    let third = acquired_within_10s(&rival).await;
    assert_eq!(
        third.release().await.expect("release"),
        LockReleased::Released
    );
}

async fn acquired_within_10s(lock: &alkstore::lock::Lock) -> alkstore::lock::LockGuard {
    lock.acquire_within(Duration::from_secs(10), Duration::from_millis(10))
        .await
        .expect("acquire")
        .expect("released within 10 s")
}

/// A guard whose lock is taken from it (here: released behind its back
/// with its token) reports the loss: `lost()` resolves, `is_held()` turns
/// false, and its release is `NotHeld`.
pub async fn a_guard_reports_a_lost_lock<H: RuntimeHarness>(h: &H) {
    let store = h.store();
    let mut guard = store
        .lock("fragile")
        .ttl(TTL)
        .try_acquire()
        .await
        .expect("acquire")
        .expect("free");
    let params = LockReleaseParams::new("fragile", guard.owner(), guard.token());
    assert_eq!(
        store.engine().lock_release(params).await.expect("release"),
        LockReleased::Released
    );
    tokio::time::timeout(Duration::from_secs(10), guard.lost())
        .await
        .expect("the loss is reported");
    assert!(!guard.is_held());
    let thief = store
        .lock("fragile")
        .owner("thief")
        .try_acquire()
        .await
        .expect("acquire")
        .expect("free");
    assert!(thief.token() > guard.token());
    assert_eq!(
        guard.release().await.expect("release"),
        LockReleased::NotHeld
    );
    assert_eq!(
        thief.release().await.expect("release"),
        LockReleased::Released
    );
}

/// The rows above, for [`contract_suite!`](crate::contract_suite): list each
/// `pub async fn …<H: RuntimeHarness>` here, next to where it is written.
#[doc(hidden)]
#[macro_export]
macro_rules! __runtime_locks {
    ($then:path, $args:tt) => {
        $then! { @rows $args runtime::locks [
            a_guard_renews_its_lock_and_releases_it_on_drop,
            a_guard_reports_a_lost_lock,
        ] }
    };
}
