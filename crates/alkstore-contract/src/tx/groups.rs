//! Consumer-group checkpoints in a transaction, fenced by the lease epoch.

use alkstore_core::Writes as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use alkstore_core::group::{GroupCheckpointParams, GroupEnsureParams};
use alkstore_core::GroupEngine;

use super::support::{
    assert_refused_and_rolled_back, assert_rows, begin_with_row, committed_row, three_events, End,
};
use crate::groups::support::{claim, TTL};
use crate::Harness;

/// A group of one bucket on stream `s` holding three events, readable
/// (so a checkpoint may reach them); their offsets.
async fn group_with_events<H: Harness>(h: &H, group: &str, s: &str) -> Vec<i64> {
    let e = h.engine();
    e.group_ensure(GroupEnsureParams::new(group, s, 1))
        .await
        .expect("ensure");
    three_events(h, s).await
}

/// The bucket's saved checkpoint.
async fn checkpoint<E: GroupEngine + alkstore_core::AllOps>(e: &E, group: &str) -> i64 {
    e.group_status(group).await.expect("status").buckets[0].checkpoint
}

/// Save a checkpoint in a transaction under the lease held: rolled back
/// or dropped, the bucket's checkpoint is as it was; committed, it moved,
/// with the application's row.
pub async fn group_checkpoint_commits_with_the_business_row_or_not_at_all<H: Harness>(h: &H) {
    let e = h.engine();
    let group = "tx-checkpoint";
    let offsets = group_with_events(h, group, "tx-checkpoint-s").await;
    let lease = claim(e, group, "w", 1).await.pop().expect("a lease");
    for end in End::ALL {
        let tx = begin_with_row(h, &end.key(group)).await;
        let saved = tx
            .group_checkpoint(GroupCheckpointParams::new(
                group,
                lease.bucket,
                "w",
                lease.epoch,
                offsets[1],
            ))
            .await
            .expect("checkpoint");
        assert_eq!(saved, offsets[1]);
        end.finish::<H>(tx).await;
        let at = checkpoint(e, group).await;
        if end.commits() {
            assert_eq!(at, offsets[1], "saved with the commit");
        } else {
            assert_eq!(at, lease.checkpoint, "{end:?} saves nothing");
            assert_rows(h, &[], &format!("after {end:?}")).await;
        }
    }
    assert_rows(h, &committed_row(group), "at the end").await;
}

/// A lease that lapsed and was claimed by another worker (a new epoch)
/// refuses the old holder's checkpoint in a transaction with `NotHeld`:
/// the transaction rolls back whole, the application's row with it, and
/// the bucket's checkpoint is the new holder's to move.
pub async fn a_stale_lease_epoch_refuses_the_checkpoint_and_rolls_back_everything<H: Harness>(
    h: &H,
) {
    let e = h.engine();
    let group = "tx-stale-lease";
    let offsets = group_with_events(h, group, "tx-stale-lease-s").await;
    let old = claim(e, group, "a", 1).await.pop().expect("a's lease");
    h.clock().advance(TTL);
    let new = claim(e, group, "b", 1)
        .await
        .pop()
        .expect("b takes it over");
    assert!(new.epoch > old.epoch);
    let key = "tx-stale-lease:refused";
    let tx = begin_with_row(h, key).await;
    let refused = tx
        .group_checkpoint(GroupCheckpointParams::new(
            group, old.bucket, "a", old.epoch, offsets[2],
        ))
        .await;
    assert_refused_and_rolled_back(h, tx, refused, key).await;
    assert_eq!(checkpoint(e, group).await, old.checkpoint, "unmoved");
    let moved = e
        .group_checkpoint(GroupCheckpointParams::new(
            group, new.bucket, "b", new.epoch, offsets[0],
        ))
        .await
        .expect("the new holder's checkpoint");
    assert_eq!(moved, offsets[0]);
}

/// A bucket checkpointed in an open transaction is not taken over while
/// it is open, even once its lease lapsed by the store's clock: another
/// worker's claim (started meanwhile) waits for the transaction (SQLite:
/// its write lock) or skips the bucket (PostgreSQL: its locked lease
/// row). The checkpoint commits; a takeover, if any, comes after the
/// commit and starts from that checkpoint.
pub async fn a_checkpointed_bucket_is_not_taken_over_while_its_transaction_is_open<H: Harness>(
    h: &H,
) {
    let e = h.engine();
    let group = "tx-lease-held";
    let offsets = group_with_events(h, group, "tx-lease-held-s").await;
    let a = claim(e, group, "a", 1).await.pop().expect("a's lease");
    let key = "tx-lease-held:a";
    let tx = begin_with_row(h, key).await;
    tx.group_checkpoint(GroupCheckpointParams::new(
        group, a.bucket, "a", a.epoch, offsets[1],
    ))
    .await
    .expect("checkpoint");
    // The lease lapses while the transaction is open.
    h.clock().advance(TTL + Duration::from_secs(1));
    let done = AtomicBool::new(false);
    let other = async {
        let got = claim(e, group, "b", 1).await;
        done.store(true, Ordering::SeqCst);
        got
    };
    let holder = async {
        // Long enough for the other claim to have been sent and, were the
        // bucket not held, to have taken it.
        tokio::time::sleep(Duration::from_millis(200)).await;
        let early = done.load(Ordering::SeqCst);
        tx.commit().await.expect("the checkpoint commits");
        early
    };
    let (got, early) = tokio::join!(other, holder);
    for lease in &got {
        assert!(
            !early,
            "the bucket was taken over while the transaction was open: {lease:?}"
        );
        assert!(lease.epoch > a.epoch, "{lease:?}");
        assert_eq!(
            lease.checkpoint, offsets[1],
            "the new holder starts from the committed checkpoint"
        );
    }
    assert_eq!(checkpoint(e, group).await, offsets[1], "committed");
    assert_rows(h, &[key.to_string()], "at the end").await;
}

/// The rows above, for [`contract_suite!`](crate::contract_suite): list each
/// `pub async fn …<H: Harness>` here, next to where it is written.
#[doc(hidden)]
#[macro_export]
macro_rules! __tx_groups {
    ($then:path, $args:tt) => {
        $then! { @rows $args tx::groups [
            group_checkpoint_commits_with_the_business_row_or_not_at_all,
            a_stale_lease_epoch_refuses_the_checkpoint_and_rolls_back_everything,
            a_checkpointed_bucket_is_not_taken_over_while_its_transaction_is_open,
        ] }
    };
}
