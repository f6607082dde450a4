//! Acquire, renew, release, expiry by the store's clock, and fencing
//! tokens that only grow per lock name.

use std::time::Duration;

use alkstore_core::lock::{
    LockAcquireParams, LockGrant, LockReleaseParams, LockReleased, LockRenewParams, LockRenewed,
};
use alkstore_core::{Clock, LockEngine};

use crate::{Harness, Where};

pub(crate) const TTL: Duration = Duration::from_secs(10);

pub(crate) async fn acquire<H: Harness>(h: &H, name: &str, owner: &str) -> Option<LockGrant> {
    h.engine()
        .lock_acquire(LockAcquireParams::new(name, owner, TTL))
        .await
        .expect("acquire")
}

async fn renew<H: Harness>(h: &H, g: &LockGrant, owner: &str) -> LockRenewed {
    h.engine()
        .lock_renew(LockRenewParams::new(&g.name, owner, g.token, TTL))
        .await
        .expect("renew")
}

async fn release<H: Harness>(h: &H, g: &LockGrant, owner: &str) -> LockReleased {
    h.engine()
        .lock_release(LockReleaseParams::new(&g.name, owner, g.token))
        .await
        .expect("release")
}

/// One holder at a time; nobody else (nor the holder again) acquires, renews
/// or releases it; after a release the next acquire gets a higher token;
/// other names are independent.
pub async fn only_the_holder_renews_or_releases_and_tokens_grow<H: Harness>(h: &H) {
    let a = acquire(h, "report", "a").await.expect("free");
    assert_eq!(a.owner, "a");
    assert_eq!(a.expires_at_ms, h.clock().now_ms() + 10_000);
    assert_eq!(acquire(h, "report", "b").await, None, "held by a");
    assert_eq!(acquire(h, "report", "a").await, None, "not re-entrant");
    let other = acquire(h, "other", "b")
        .await
        .expect("another name is free");
    assert_eq!(renew(h, &a, "b").await, LockRenewed::NotHeld, "b is not a");
    assert_eq!(release(h, &a, "b").await, LockReleased::NotHeld);
    let wrong_token = LockGrant {
        token: a.token + 1,
        ..a.clone()
    };
    assert_eq!(release(h, &wrong_token, "a").await, LockReleased::NotHeld);
    h.clock().advance(Duration::from_secs(4));
    match renew(h, &a, "a").await {
        LockRenewed::Held(g) => {
            assert_eq!(g.token, a.token);
            assert_eq!(g.expires_at_ms, h.clock().now_ms() + 10_000);
        }
        LockRenewed::NotHeld => panic!("the holder renews"),
    }
    assert_eq!(release(h, &a, "a").await, LockReleased::Released);
    assert_eq!(release(h, &a, "a").await, LockReleased::NotHeld, "once");
    assert_eq!(renew(h, &a, "a").await, LockRenewed::NotHeld, "released");
    let b = acquire(h, "report", "b").await.expect("free after release");
    assert!(b.token > a.token, "{} > {}", b.token, a.token);
    let a2 = {
        assert_eq!(release(h, &b, "b").await, LockReleased::Released);
        acquire(h, "report", "a").await.expect("free again")
    };
    assert!(a2.token > b.token, "tokens grow across owners");
    let list = h.engine().lock_list().await.expect("list");
    let names: Vec<(&str, Option<&str>, i64)> = list
        .iter()
        .map(|l| (l.name.as_str(), l.owner.as_deref(), l.token))
        .collect();
    assert_eq!(
        names,
        [
            ("other", Some("b"), other.token),
            ("report", Some("a"), a2.token)
        ]
    );
}

/// A hold lapses by the store's clock: not a millisecond early, then anyone
/// acquires it with a higher token, and the old holder is fenced — its
/// renew and release get `NotHeld` and change nothing. A lapsed hold nobody
/// took is still its holder's to renew.
pub async fn an_expired_lock_is_taken_over_and_its_old_holder_is_fenced<H: Harness>(h: &H) {
    let a = acquire(h, "job", "a").await.expect("free");
    h.clock().advance(TTL - Duration::from_millis(1));
    assert_eq!(acquire(h, "job", "b").await, None, "1 ms before expiry");
    h.clock().advance(Duration::from_millis(1));
    assert!(
        matches!(renew(h, &a, "a").await, LockRenewed::Held(_)),
        "lapsed but not taken: still a's"
    );
    h.clock().advance(TTL);
    let b = acquire(h, "job", "b").await.expect("lapsed: free");
    assert!(b.token > a.token, "{} > {}", b.token, a.token);
    assert_eq!(renew(h, &a, "a").await, LockRenewed::NotHeld);
    assert_eq!(release(h, &a, "a").await, LockReleased::NotHeld);
    assert!(matches!(renew(h, &b, "b").await, LockRenewed::Held(_)));
    let list = h.engine().lock_list().await.expect("list");
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].owner.as_deref(), Some("b"), "a changed nothing");
    assert_eq!(list[0].token, b.token);
    h.clock().advance(TTL);
    let list = h.engine().lock_list().await.expect("list");
    assert_eq!(list[0].owner, None, "lapsed holds list no owner");
    let c = acquire(h, "job", "c").await.expect("lapsed again");
    assert!(c.token > b.token);
}

/// 8 tasks race for one free lock 20 times over: exactly one wins each
/// round, and every round's token is higher than the last.
pub async fn one_of_8_concurrent_acquirers_wins<H: Harness>(h: &H) {
    let mut last = 0;
    for round in 0..20 {
        let mut tasks = Vec::new();
        for w in 0..8 {
            let e = h.engine().clone();
            tasks.push(tokio::spawn(async move {
                e.lock_acquire(LockAcquireParams::new("race", format!("w{w}"), TTL))
                    .await
                    .expect("acquire")
            }));
        }
        let mut winners = Vec::new();
        for t in tasks {
            if let Some(g) = t.await.expect("task") {
                winners.push(g);
            }
        }
        assert_eq!(winners.len(), 1, "round {round}: {winners:?}");
        let g = winners.remove(0);
        assert!(g.token > last, "round {round}: {} > {last}", g.token);
        last = g.token;
        assert_eq!(
            release(h, &g, &g.owner.clone()).await,
            LockReleased::Released
        );
    }
}

/// A fence passes while the lock is held under the token, whoever checks
/// it, and is `NotHeld` once the lock lapsed, passed on or was released;
/// an empty name is refused.
pub async fn a_fence_passes_only_under_the_current_token<H: Harness>(h: &H, at: Where) {
    use alkstore_core::lock::LockFenceParams;
    use alkstore_core::{ErrorKind, Writes as _};
    let w = crate::writer(h, at);
    let a = acquire(h, "fenced", "a").await.expect("free");
    w.lock_fence(LockFenceParams::new("fenced", a.token))
        .await
        .expect("held under its token");
    let stale = w
        .lock_fence(LockFenceParams::new("fenced", a.token + 1))
        .await
        .expect_err("another token");
    assert_eq!(stale.kind(), ErrorKind::NotHeld, "{stale}");
    h.clock().advance(TTL + Duration::from_secs(1));
    let lapsed = w
        .lock_fence(LockFenceParams::new("fenced", a.token))
        .await
        .expect_err("lapsed");
    assert_eq!(lapsed.kind(), ErrorKind::NotHeld, "{lapsed}");
    let b = acquire(h, "fenced", "b").await.expect("taken over");
    assert!(b.token > a.token);
    w.lock_fence(LockFenceParams::new("fenced", b.token))
        .await
        .expect("the new holder's token");
    assert!(matches!(release(h, &b, "b").await, LockReleased::Released));
    let released = w
        .lock_fence(LockFenceParams::new("fenced", b.token))
        .await
        .expect_err("released");
    assert_eq!(released.kind(), ErrorKind::NotHeld, "{released}");
    let empty = w
        .lock_fence(LockFenceParams::new("", 1))
        .await
        .expect_err("no name");
    assert_eq!(empty.kind(), ErrorKind::InvalidInput, "{empty}");
}

/// The rows above, for [`contract_suite!`](crate::contract_suite).
#[doc(hidden)]
#[macro_export]
macro_rules! __locks_fencing {
    ($then:path, $args:tt) => {
        $then! { @rows $args locks::fencing [
            only_the_holder_renews_or_releases_and_tokens_grow,
            an_expired_lock_is_taken_over_and_its_old_holder_is_fenced,
            one_of_8_concurrent_acquirers_wins,
        ] }
        $then! { @places $args locks::fencing [
            a_fence_passes_only_under_the_current_token,
        ] }
    };
}
