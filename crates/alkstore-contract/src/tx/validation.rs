//! Refused input in a transaction: a typed error, nothing written, and the
//! transaction goes on (it still commits).

use alkstore_core::group::{GroupCheckpointParams, GroupEnsureParams};
use alkstore_core::schedule::ScheduleSetParams;
use alkstore_core::stream::{StreamOffsetCommitParams, StreamOffsetGetParams};
use alkstore_core::Writes as _;
use alkstore_core::{ErrorKind, GroupEngine, ScheduleEngine, StreamEngine};

use super::support::{assert_rows, begin_with_row};
use crate::groups::support::claim;
use crate::queues::support::{claim as claim_jobs, job};
use crate::streams::support::ev;
use crate::Harness;

/// Every call refuses bad input with `InvalidInput` (names, tokens,
/// offsets, specs; and what only the database can judge: offsets beyond
/// the stream's head), and none of it poisons the transaction: its good
/// writes and the application's row commit, nothing of the refused ones.
pub async fn bad_input_is_refused_without_poisoning_the_transaction<H: Harness>(h: &H) {
    let e = h.engine();
    let s = "tx-bad-s";
    let head = e.stream_publish(ev(s, "1")).await.expect("publish")[0];
    crate::streams::support::settle(e, s).await;
    e.group_ensure(GroupEnsureParams::new("tx-bad-g", s, 1))
        .await
        .expect("ensure");
    let lease = claim(e, "tx-bad-g", "w", 1).await.pop().expect("lease");
    let key = "tx-bad-input";
    let tx = begin_with_row(h, key).await;
    let mut kinds = Vec::new();
    let mut note = |what: &str, kind: Option<ErrorKind>| kinds.push((what.to_string(), kind));
    note(
        "enqueue: empty queue name",
        tx.job_enqueue(vec![job("", "x")])
            .await
            .err()
            .map(|e| e.kind()),
    );
    note(
        "publish: empty stream name",
        tx.stream_publish(ev("", "x")).await.err().map(|e| e.kind()),
    );
    note(
        "notify: empty channel",
        tx.notify(alkstore_core::notify::NotifyParams::new("", "x"))
            .await
            .err()
            .map(|e| e.kind()),
    );
    note(
        "fence: token 0",
        tx.lock_fence(alkstore_core::lock::LockFenceParams::new("tx-bad-lock", 0))
            .await
            .err()
            .map(|e| e.kind()),
    );
    note(
        "schedule: bad spec",
        tx.schedule_set(ScheduleSetParams::new("tx-bad", "every so often", "q"))
            .await
            .err()
            .map(|e| e.kind()),
    );
    note(
        "offset: negative",
        tx.stream_offset_commit(StreamOffsetCommitParams::new(s, "c", -1))
            .await
            .err()
            .map(|e| e.kind()),
    );
    note(
        "offset: beyond the head",
        tx.stream_offset_commit(StreamOffsetCommitParams::new(s, "c", head + 10))
            .await
            .err()
            .map(|e| e.kind()),
    );
    note(
        "checkpoint: beyond the head",
        tx.group_checkpoint(GroupCheckpointParams::new(
            "tx-bad-g",
            lease.bucket,
            "w",
            lease.epoch,
            head + 10,
        ))
        .await
        .err()
        .map(|e| e.kind()),
    );
    for (what, kind) in &kinds {
        assert_eq!(*kind, Some(ErrorKind::InvalidInput), "{what}");
    }
    assert_eq!(tx.poisoned(), None, "refused input does not poison");
    tx.job_enqueue(vec![job("tx-bad-q", "good")])
        .await
        .expect("a good call after them");
    tx.commit().await.expect("the transaction still commits");
    assert_rows(h, &[key.to_string()], "after the commit").await;
    assert_eq!(claim_jobs(e, "tx-bad-q", "w", 5).await.len(), 1);
    let saved = e
        .stream_offset_get(StreamOffsetGetParams::new(s, "c"))
        .await
        .expect("offset");
    assert_eq!(saved, None, "no offset saved");
    let status = e.group_status("tx-bad-g").await.expect("status");
    assert_eq!(status.buckets[0].checkpoint, lease.checkpoint, "unmoved");
    assert!(e.schedule_list().await.expect("list").is_empty());
}

/// The rows above, for [`contract_suite!`](crate::contract_suite): list each
/// `pub async fn …<H: Harness>` here, next to where it is written.
#[doc(hidden)]
#[macro_export]
macro_rules! __tx_validation {
    ($then:path, $args:tt) => {
        $then! { @rows $args tx::validation [
            bad_input_is_refused_without_poisoning_the_transaction,
        ] }
    };
}
