//! Consumer offsets: unset until committed, monotone, never past the head.

use alkstore_core::stream::StreamOffsetCommitParams;
use alkstore_core::{Clock, ErrorKind, StreamEngine};

use super::support::{publish_one, settle};
use crate::Harness;

fn commit(stream: &str, consumer: &str, offset: i64) -> StreamOffsetCommitParams {
    StreamOffsetCommitParams::new(stream, consumer, offset)
}

/// A consumer has no offset until it commits one (distinct from 0); a
/// commit below the saved offset is ignored and returns the saved one.
pub async fn offsets_start_unset_and_only_move_forward<H: Harness>(h: &H) {
    let e = h.engine();
    assert_eq!(e.stream_offset_get(("s", "c")).await.expect("get"), None);
    assert_eq!(
        e.stream_offset_commit(commit("s", "c", 0))
            .await
            .expect("0"),
        0
    );
    assert_eq!(e.stream_offset_get(("s", "c")).await.expect("get"), Some(0));
    let o: Vec<i64> = [
        publish_one(e, "s", "1").await,
        publish_one(e, "s", "2").await,
        publish_one(e, "s", "3").await,
    ]
    .to_vec();
    settle(e, "s").await;
    assert_eq!(
        e.stream_offset_commit(commit("s", "c", o[1]))
            .await
            .expect("o2"),
        o[1]
    );
    assert_eq!(
        e.stream_offset_commit(commit("s", "c", o[0]))
            .await
            .expect("back"),
        o[1],
        "a backward commit is ignored"
    );
    assert_eq!(
        e.stream_offset_get(("s", "c")).await.expect("get"),
        Some(o[1])
    );
    assert_eq!(
        e.stream_offset_commit(commit("s", "c", o[2]))
            .await
            .expect("o3"),
        o[2]
    );
    // Consumers are independent.
    assert_eq!(
        e.stream_offset_get(("s", "other")).await.expect("get"),
        None
    );
}

/// A commit beyond the stream's head is refused and saves nothing.
pub async fn committing_beyond_the_head_is_refused<H: Harness>(h: &H) {
    let e = h.engine();
    let head = publish_one(e, "s", "1").await;
    settle(e, "s").await;
    let err = e
        .stream_offset_commit(commit("s", "c", head + 1))
        .await
        .expect_err("beyond head");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert_eq!(e.stream_offset_get(("s", "c")).await.expect("get"), None);
    let err = e
        .stream_offset_commit(commit("empty", "c", 1))
        .await
        .expect_err("no events at all");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert_eq!(
        e.stream_offset_get(("empty", "c")).await.expect("get"),
        None
    );
    assert_eq!(
        e.stream_offset_commit(commit("s", "c", head))
            .await
            .expect("head"),
        head
    );
}

/// Offsets list every consumer with its lag (events after its offset).
pub async fn offsets_list_consumers_with_their_lag<H: Harness>(h: &H) {
    let e = h.engine();
    let mut o = Vec::new();
    for i in 0..4 {
        o.push(publish_one(e, "s", &i.to_string()).await);
    }
    settle(e, "s").await;
    e.stream_offset_commit(commit("s", "slow", o[0]))
        .await
        .expect("slow");
    e.stream_offset_commit(commit("s", "fast", o[3]))
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
        $then! { @rows $args streams::offsets [
            offsets_start_unset_and_only_move_forward,
            committing_beyond_the_head_is_refused,
            offsets_list_consumers_with_their_lag,
        ] }
    };
}
