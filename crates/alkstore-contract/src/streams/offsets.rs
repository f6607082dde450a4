//! Consumer offsets: unset until committed, monotone, never past the head.

use alkstore_core::stream::{StreamOffsetCommitParams, StreamOffsetGetParams};
use alkstore_core::Writes as _;
use alkstore_core::{Clock, ErrorKind, StreamEngine};

use super::support::{publish_one, settle};
use crate::{writer, Harness, Where};

fn commit(stream: &str, consumer: &str, offset: i64) -> StreamOffsetCommitParams {
    StreamOffsetCommitParams::new(stream, consumer, offset)
}

/// Three events of stream `s`, readable; their offsets.
async fn three_readable<E: StreamEngine + alkstore_core::AllOps>(e: &E) -> Vec<i64> {
    let o = vec![
        publish_one(e, "s", "1").await,
        publish_one(e, "s", "2").await,
        publish_one(e, "s", "3").await,
    ];
    settle(e, "s").await;
    o
}

/// A consumer has no offset until it commits one (distinct from 0); a
/// commit below the saved offset is ignored and returns the saved one.
pub async fn offsets_start_unset_and_only_move_forward<H: Harness>(h: &H, at: Where) {
    let e = h.engine();
    assert_eq!(
        e.stream_offset_get(StreamOffsetGetParams::new("s", "c"))
            .await
            .expect("get"),
        None
    );
    assert_eq!(
        writer(h, at)
            .stream_offset_commit(commit("s", "c", 0))
            .await
            .expect("0"),
        0
    );
    assert_eq!(
        e.stream_offset_get(StreamOffsetGetParams::new("s", "c"))
            .await
            .expect("get"),
        Some(0)
    );
    let o = three_readable(e).await;
    assert_eq!(
        writer(h, at)
            .stream_offset_commit(commit("s", "c", o[1]))
            .await
            .expect("o2"),
        o[1]
    );
    assert_eq!(
        writer(h, at)
            .stream_offset_commit(commit("s", "c", o[0]))
            .await
            .expect("back"),
        o[1],
        "a backward commit is ignored"
    );
    assert_eq!(
        e.stream_offset_get(StreamOffsetGetParams::new("s", "c"))
            .await
            .expect("get"),
        Some(o[1])
    );
    assert_eq!(
        writer(h, at)
            .stream_offset_commit(commit("s", "c", o[2]))
            .await
            .expect("o3"),
        o[2]
    );
    // Consumers are independent.
    assert_eq!(
        e.stream_offset_get(StreamOffsetGetParams::new("s", "other"))
            .await
            .expect("get"),
        None
    );
}

/// A commit beyond the stream's head is refused and saves nothing.
pub async fn committing_beyond_the_head_is_refused<H: Harness>(h: &H, at: Where) {
    let e = h.engine();
    let head = publish_one(e, "s", "1").await;
    settle(e, "s").await;
    let err = writer(h, at)
        .stream_offset_commit(commit("s", "c", head + 1))
        .await
        .expect_err("beyond head");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert_eq!(
        e.stream_offset_get(StreamOffsetGetParams::new("s", "c"))
            .await
            .expect("get"),
        None
    );
    let err = writer(h, at)
        .stream_offset_commit(commit("empty", "c", 1))
        .await
        .expect_err("no events at all");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert_eq!(
        e.stream_offset_get(StreamOffsetGetParams::new("empty", "c"))
            .await
            .expect("get"),
        None
    );
    assert_eq!(
        writer(h, at)
            .stream_offset_commit(commit("s", "c", head))
            .await
            .expect("head"),
        head
    );
}

/// A commit with an expectation is a compare-and-set: it moves the offset
/// only from exactly the expected one (no saved offset counts as 0) and
/// otherwise fails with `NotHeld` and saves nothing, even moving forward;
/// the head still bounds it. Without an expectation, commits stay
/// monotone.
pub async fn an_expected_commit_moves_only_from_the_expected_offset<H: Harness>(h: &H, at: Where) {
    let e = h.engine();
    let o = three_readable(e).await;
    let saved = || async {
        e.stream_offset_get(StreamOffsetGetParams::new("s", "c"))
            .await
            .expect("get")
    };
    let refused = |expected: i64, offset: i64| async move {
        let err = writer(h, at)
            .stream_offset_commit(commit("s", "c", offset).expecting(expected))
            .await
            .expect_err("the saved offset is not the expected one");
        assert_eq!(err.kind(), ErrorKind::NotHeld, "{err}");
    };
    // Nothing saved counts as 0.
    refused(o[0], o[1]).await;
    assert_eq!(saved().await, None, "nothing saved");
    assert_eq!(
        writer(h, at)
            .stream_offset_commit(commit("s", "c", o[0]).expecting(0))
            .await
            .expect("from nothing"),
        o[0]
    );
    assert_eq!(saved().await, Some(o[0]));
    // Another instance moved it on: a commit from the old offset, even a
    // further one, is refused and changes nothing.
    assert_eq!(
        writer(h, at)
            .stream_offset_commit(commit("s", "c", o[1]).expecting(o[0]))
            .await
            .expect("from o1"),
        o[1]
    );
    refused(o[0], o[2]).await;
    refused(0, o[2]).await;
    assert_eq!(saved().await, Some(o[1]), "unmoved by the refused commits");
    // The head still bounds it; then the expected commit moves it.
    let err = writer(h, at)
        .stream_offset_commit(commit("s", "c", o[2] + 1).expecting(o[1]))
        .await
        .expect_err("beyond the head");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert_eq!(
        writer(h, at)
            .stream_offset_commit(commit("s", "c", o[1]).expecting(o[1]))
            .await
            .expect("where it is"),
        o[1],
        "expecting where it is and staying there holds"
    );
    assert_eq!(
        writer(h, at)
            .stream_offset_commit(commit("s", "c", o[2]).expecting(o[1]))
            .await
            .expect("from o2"),
        o[2]
    );
    // A saved 0 is 0 too; without an expectation nothing changed.
    writer(h, at)
        .stream_offset_commit(commit("s", "zero", 0))
        .await
        .expect("0");
    assert_eq!(
        writer(h, at)
            .stream_offset_commit(commit("s", "zero", o[0]).expecting(0))
            .await
            .expect("from a saved 0"),
        o[0]
    );
    assert_eq!(
        writer(h, at)
            .stream_offset_commit(commit("s", "c", o[0]))
            .await
            .expect("monotone"),
        o[2],
        "without an expectation a backward commit is still ignored"
    );
}

/// Offsets list every consumer with its lag (events after its offset).
pub async fn offsets_list_consumers_with_their_lag<H: Harness>(h: &H, at: Where) {
    let e = h.engine();
    let mut o = Vec::new();
    for i in 0..4 {
        o.push(publish_one(e, "s", &i.to_string()).await);
    }
    settle(e, "s").await;
    writer(h, at)
        .stream_offset_commit(commit("s", "slow", o[0]))
        .await
        .expect("slow");
    writer(h, at)
        .stream_offset_commit(commit("s", "fast", o[3]))
        .await
        .expect("fast");
    let list = e.stream_offsets("s").await.expect("offsets");
    let got: Vec<(&str, i64, u64)> = list
        .iter()
        .map(|c| (c.consumer.as_str(), c.offset, c.lag))
        .collect();
    assert_eq!(got, [("fast", o[3], 0), ("slow", o[0], 3)]);
    assert!(list.iter().all(|c| c.updated_at == h.clock().now()));
}

/// The rows above, for [`contract_suite!`](crate::contract_suite).
#[doc(hidden)]
#[macro_export]
macro_rules! __streams_offsets {
    ($then:path, $args:tt) => {
        $then! { @places $args streams::offsets [
            offsets_start_unset_and_only_move_forward,
            committing_beyond_the_head_is_refused,
            an_expected_commit_moves_only_from_the_expected_offset,
            offsets_list_consumers_with_their_lag,
        ] }
    };
}
