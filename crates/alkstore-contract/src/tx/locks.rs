//! Writes fenced by a lock: `lock_fence` checks the token is still the
//! holder's and keeps it so until the transaction ends.

use alkstore_core::Writes as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use alkstore_core::lock::LockAcquireParams;
use alkstore_core::LockEngine;

use super::support::{
    assert_refused_and_rolled_back, assert_rows, begin_with_row, committed_row, secs, End,
};
use crate::locks::fencing::{acquire, TTL};
use crate::Harness;

/// Each lock's (owner, token), by name.
async fn holders<E: LockEngine + alkstore_core::AllOps>(
    e: &E,
) -> Vec<(String, Option<String>, i64)> {
    e.lock_list()
        .await
        .expect("list")
        .into_iter()
        .map(|l| (l.name, l.owner, l.token))
        .collect()
}

/// Writes fenced by a lock the caller holds: rolled back or dropped, the
/// application's row is not there; committed, it is; the lock is the
/// holder's throughout, under the same token.
pub async fn lock_fence_commits_with_the_business_row_or_not_at_all<H: Harness>(h: &H) {
    let e = h.engine();
    let name = "tx-fence";
    let a = acquire(h, name, "a").await.expect("free");
    let held = vec![(name.to_string(), Some("a".to_string()), a.token)];
    for end in End::ALL {
        let tx = begin_with_row(h, &end.key(name)).await;
        tx.lock_fence(alkstore_core::lock::LockFenceParams::new(name, a.token))
            .await
            .expect("held");
        end.finish::<H>(tx).await;
        assert_eq!(holders(e).await, held, "still a's after {end:?}");
        if !end.commits() {
            assert_rows(h, &[], &format!("after {end:?}")).await;
        }
    }
    assert_rows(h, &committed_row(name), "at the end").await;
}

/// A lock that expired and passed to another owner refuses the old
/// token's fence with `NotHeld`, and the transaction rolls back whole;
/// so does a lock that expired by the store's clock with nobody taking
/// it yet, and a token the lock never had.
pub async fn a_lost_lock_refuses_the_fence_and_rolls_back_everything<H: Harness>(h: &H) {
    let taken = "tx-lost-lock";
    let a = acquire(h, taken, "a").await.expect("free");
    h.clock().advance(TTL);
    let b = acquire(h, taken, "b").await.expect("lapsed: b takes it");
    let key = "tx-lost-lock:taken";
    let tx = begin_with_row(h, key).await;
    let refused = tx
        .lock_fence(alkstore_core::lock::LockFenceParams::new(taken, a.token))
        .await;
    assert_refused_and_rolled_back(h, tx, refused, key).await;

    let key = "tx-lost-lock:never";
    let tx = begin_with_row(h, key).await;
    let refused = tx
        .lock_fence(alkstore_core::lock::LockFenceParams::new(
            taken,
            b.token + 1,
        ))
        .await;
    assert_refused_and_rolled_back(h, tx, refused, key).await;

    let tx = begin_with_row(h, "tx-lost-lock:b").await;
    tx.lock_fence(alkstore_core::lock::LockFenceParams::new(taken, b.token))
        .await
        .expect("b holds it");
    tx.commit().await.expect("the new holder's fence commits");

    let lapsed = "tx-lapsed-lock";
    let c = acquire(h, lapsed, "c").await.expect("free");
    h.clock().advance(TTL);
    let key = "tx-lost-lock:lapsed";
    let tx = begin_with_row(h, key).await;
    let refused = tx
        .lock_fence(alkstore_core::lock::LockFenceParams::new(lapsed, c.token))
        .await;
    assert_refused_and_rolled_back(h, tx, refused, key).await;
    assert_rows(h, &["tx-lost-lock:b".to_string()], "at the end").await;
}

/// While a transaction that fenced with a lock is open, nobody takes the
/// lock over, even once it has expired by the store's clock: the takeover
/// waits for the transaction to end (SQLite: its write lock; PostgreSQL:
/// the lock's row), and then finds the fenced writes committed.
pub async fn a_takeover_waits_for_the_fencing_transaction<H: Harness>(h: &H) {
    let e = h.engine();
    let name = "tx-fence-held";
    let a = acquire(h, name, "a").await.expect("free");
    let key = "tx-fence-held:a";
    let tx = begin_with_row(h, key).await;
    tx.lock_fence(alkstore_core::lock::LockFenceParams::new(name, a.token))
        .await
        .expect("held");
    // The hold lapses while the transaction is open.
    h.clock().advance(TTL + secs(1));
    let taken = AtomicBool::new(false);
    let takeover = async {
        let grant = e
            .lock_acquire(LockAcquireParams::new(name, "b", TTL))
            .await
            .expect("acquire");
        taken.store(true, Ordering::SeqCst);
        // What the new holder finds once it has the lock.
        (grant, h.business_rows().await)
    };
    let holder = async {
        // Long enough for the takeover to have been sent and, were it not
        // held up, to have won.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let early = taken.load(Ordering::SeqCst);
        tx.commit().await.expect("the fenced transaction commits");
        early
    };
    let ((grant, seen), taken_early) = tokio::join!(takeover, holder);
    assert!(
        !taken_early,
        "the lock was taken over while the fencing transaction was open"
    );
    let grant = grant.expect("b takes the lapsed lock once the transaction ended");
    assert!(grant.token > a.token);
    assert_eq!(
        seen,
        [key],
        "the new holder finds the fenced writes committed"
    );
}

/// Calls made together on one transaction (`join!`) run one at a time, in
/// turn, and all commit: none is refused or lost.
pub async fn calls_made_together_on_one_transaction_take_turns<H: Harness>(h: &H) {
    let e = h.engine();
    let name = "tx-turns";
    let a = acquire(h, name, "a").await.expect("free");
    let tx = begin_with_row(h, &End::Commit.key(name)).await;
    let job = alkstore_core::NewJob::new(name, b"1".to_vec());
    let (enqueued, fenced, notified) = tokio::join!(
        tx.job_enqueue(job),
        tx.lock_fence(alkstore_core::lock::LockFenceParams::new(name, a.token)),
        tx.notify(alkstore_core::notify::NotifyParams::new(name, "x")),
    );
    assert_eq!(enqueued.expect("enqueue").len(), 1);
    fenced.expect("fence");
    notified.expect("notify");
    assert!(tx.poisoned().is_none(), "{:?}", tx.poisoned());
    tx.commit().await.expect("commit");
    let stats = alkstore_core::QueueAdmin::queue_stats(e, name)
        .await
        .expect("stats");
    assert_eq!(stats.ready, 1, "{stats:?}");
    assert_rows(h, &committed_row(name), "committed").await;
}

/// The rows above, for [`contract_suite!`](crate::contract_suite): list each
/// `pub async fn …<H: Harness>` here, next to where it is written.
#[doc(hidden)]
#[macro_export]
macro_rules! __tx_locks {
    ($then:path, $args:tt) => {
        $then! { @rows $args tx::locks [
            lock_fence_commits_with_the_business_row_or_not_at_all,
            a_lost_lock_refuses_the_fence_and_rolls_back_everything,
            a_takeover_waits_for_the_fencing_transaction,
            calls_made_together_on_one_transaction_take_turns,
        ] }
    };
}
