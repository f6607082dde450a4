//! Events in a transaction: publish (one, batch) and a consumer's offset.

use alkstore_core::Writes as _;
use std::time::Duration;

use alkstore_core::stream::{StreamOffsetCommitParams, StreamOffsetGetParams};
use alkstore_core::{Engine, StreamEngine, Wake};

use super::support::{
    assert_refused_and_rolled_back, assert_rows, begin_with_row, committed_row, three_events,
    woken, End,
};
use crate::streams::support::{ev, payloads, read_all, settle};
use crate::Harness;

/// Publish in a transaction: rolled back or dropped, no event and no
/// application row; committed, both, this process's readers are woken for
/// the stream, and a read finds the events at the offsets the publish
/// reported. `batch` events per transaction.
async fn publish<H: Harness>(h: &H, s: &str, batch: usize) {
    let e = h.engine();
    for end in End::ALL {
        let mut rx = e.wake_subscribe();
        let tx = begin_with_row(h, &end.key(s)).await;
        let events = (0..batch)
            .map(|i| ev(s, &format!("{end:?} {i}")))
            .collect::<Vec<_>>();
        let offsets = tx.stream_publish(events).await.expect("publish");
        assert_eq!(offsets.len(), batch);
        end.finish::<H>(tx).await;
        // Readable once no transaction open anywhere could still fill an
        // offset below them (PostgreSQL's gap safety).
        settle(e, s).await;
        let read = read_all(e, s, 0).await;
        if end.commits() {
            assert!(
                woken(&mut rx, |w| *w == Wake::Stream(s.into())).await,
                "the commit wakes the stream's readers"
            );
            let got: Vec<i64> = read.iter().map(|e| e.offset).collect();
            assert_eq!(got, offsets, "every event, at its offset");
            let want: Vec<String> = (0..batch).map(|i| format!("Commit {i}")).collect();
            assert_eq!(payloads(&read), want);
        } else {
            assert!(read.is_empty(), "{end:?} leaves no event: {read:?}");
            assert_rows(h, &[], &format!("after {end:?}")).await;
        }
    }
    assert_rows(h, &committed_row(s), "at the end").await;
}

/// One event: see `publish`.
pub async fn publish_one_commits_with_the_business_row_or_not_at_all<H: Harness>(h: &H) {
    publish(h, "tx-publish-one", 1).await;
}

/// A batch, all or none with the application's row: see `publish`.
pub async fn publish_batch_commits_all_or_nothing_with_the_business_row<H: Harness>(h: &H) {
    publish(h, "tx-publish-batch", 5).await;
}

/// A consumer's offset saved in a transaction: rolled back or dropped, the
/// offset is as it was; committed, it is saved with the application's
/// row (and stays monotone: a lower one later changes nothing).
pub async fn offset_commit_commits_with_the_business_row_or_not_at_all<H: Harness>(h: &H) {
    let e = h.engine();
    let s = "tx-offsets";
    let offsets = three_events(h, s).await;
    let saved = |e: H::Engine| async move {
        e.stream_offset_get(StreamOffsetGetParams::new(s, "c"))
            .await
            .expect("offset")
    };
    for end in End::ALL {
        let tx = begin_with_row(h, &end.key(s)).await;
        let at = tx
            .stream_offset_commit(StreamOffsetCommitParams::new(s, "c", offsets[1]))
            .await
            .expect("offset commit");
        assert_eq!(at, offsets[1]);
        end.finish::<H>(tx).await;
        if end.commits() {
            assert_eq!(saved(e.clone()).await, Some(offsets[1]));
        } else {
            assert_eq!(saved(e.clone()).await, None, "{end:?} saves nothing");
            assert_rows(h, &[], &format!("after {end:?}")).await;
        }
    }
    let tx = begin_with_row(h, "tx-offsets:lower").await;
    let at = tx
        .stream_offset_commit(StreamOffsetCommitParams::new(s, "c", offsets[0]))
        .await
        .expect("a lower offset");
    assert_eq!(at, offsets[1], "monotone: the saved offset stays");
    tx.commit().await.expect("commit");
    assert_eq!(saved(e.clone()).await, Some(offsets[1]));
    assert_rows(
        h,
        &[End::Commit.key(s), "tx-offsets:lower".to_string()],
        "at the end",
    )
    .await;
}

/// A consumer's offset as saved.
async fn saved_offset<E: StreamEngine + alkstore_core::AllOps>(
    e: &E,
    s: &str,
    consumer: &str,
) -> Option<i64> {
    e.stream_offset_get(StreamOffsetGetParams::new(s, consumer))
        .await
        .expect("offset")
}

/// An offset commit expecting an offset that another instance of the
/// consumer has since moved on is refused with `NotHeld`: the
/// transaction rolls back whole, the application's row for those events
/// with it, and the offset stays where the other instance left it. The
/// instance that expects the saved offset commits.
pub async fn a_moved_offset_refuses_the_expected_commit_and_rolls_back_everything<H: Harness>(
    h: &H,
) {
    let e = h.engine();
    let s = "tx-offset-moved";
    let o = three_events(h, s).await;
    // Both instances read nothing saved; the other one got there first.
    e.stream_offset_commit(StreamOffsetCommitParams::new(s, "c", o[1]).expecting(0))
        .await
        .expect("the other instance's commit");
    let key = "tx-offset-moved:stale";
    let tx = begin_with_row(h, key).await;
    let refused = tx
        .stream_offset_commit(StreamOffsetCommitParams::new(s, "c", o[0]).expecting(0))
        .await;
    assert_refused_and_rolled_back(h, tx, refused, key).await;
    assert_eq!(saved_offset(e, s, "c").await, Some(o[1]), "unmoved");

    let key = "tx-offset-moved:current";
    let tx = begin_with_row(h, key).await;
    let at = tx
        .stream_offset_commit(StreamOffsetCommitParams::new(s, "c", o[2]).expecting(o[1]))
        .await
        .expect("expects the saved offset");
    assert_eq!(at, o[2]);
    tx.commit().await.expect("commit");
    assert_eq!(saved_offset(e, s, "c").await, Some(o[2]));
    assert_rows(h, &[key.to_string()], "at the end").await;
}

/// Two instances of a consumer handle the same events at once, each in a
/// transaction that commits its offset expecting the one it read: while
/// the first is open, the second's commit waits (SQLite: for the write
/// lock; PostgreSQL: for the consumer's row) and is then refused with
/// `NotHeld`, so only the first one's application row commits.
pub async fn a_concurrent_expected_commit_waits_and_is_refused<H: Harness>(h: &H) {
    let e = h.engine();
    let s = "tx-offset-race";
    let o = three_events(h, s).await;
    let first = "tx-offset-race:first";
    let a = begin_with_row(h, first).await;
    a.stream_offset_commit(StreamOffsetCommitParams::new(s, "c", o[1]).expecting(0))
        .await
        .expect("the first instance's commit");
    let second = "tx-offset-race:second";
    let b = async {
        let b = begin_with_row(h, second).await;
        let refused = b
            .stream_offset_commit(StreamOffsetCommitParams::new(s, "c", o[1]).expecting(0))
            .await;
        (b, refused)
    };
    let holder = async {
        // Long enough for the second instance to be waiting (were it not
        // held up, it would have moved the offset first).
        tokio::time::sleep(Duration::from_millis(200)).await;
        a.commit().await.expect("the first instance commits");
    };
    let ((b, refused), ()) = tokio::join!(b, holder);
    assert_refused_and_rolled_back(h, b, refused, second).await;
    assert_eq!(saved_offset(e, s, "c").await, Some(o[1]));
    assert_rows(h, &[first.to_string()], "at the end").await;
}

/// The rows above, for [`contract_suite!`](crate::contract_suite): list each
/// `pub async fn …<H: Harness>` here, next to where it is written.
#[doc(hidden)]
#[macro_export]
macro_rules! __tx_streams {
    ($then:path, $args:tt) => {
        $then! { @rows $args tx::streams [
            publish_one_commits_with_the_business_row_or_not_at_all,
            publish_batch_commits_all_or_nothing_with_the_business_row,
            offset_commit_commits_with_the_business_row_or_not_at_all,
            a_moved_offset_refuses_the_expected_commit_and_rolls_back_everything,
            a_concurrent_expected_commit_waits_and_is_refused,
        ] }
    };
}
