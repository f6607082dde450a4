//! Stream stats and the stream list.

use alkstore_core::stream::StreamOffsetCommitParams;
use alkstore_core::StreamEngine;
use alkstore_core::Writes as _;

use super::support::{publish_one, settle};
use crate::Harness;

/// Stats give the head, the first offset, the count, each consumer's lag
/// and no hold-back when nothing is open; the list names every stream.
pub async fn stats_and_list_describe_streams<H: Harness>(h: &H) {
    let e = h.engine();
    let empty = e.stream_stats("s").await.expect("stats of nothing");
    assert_eq!((empty.head, empty.first, empty.events), (None, None, 0));
    let mut o = Vec::new();
    for i in 0..3 {
        o.push(publish_one(e, "s", &i.to_string()).await);
    }
    let t = publish_one(e, "t", "x").await;
    settle(e, "s").await;
    settle(e, "t").await;
    e.stream_offset_commit(StreamOffsetCommitParams::new("s", "c", o[0]))
        .await
        .expect("commit");
    let stats = e.stream_stats("s").await.expect("stats");
    assert_eq!(stats.stream, "s");
    assert_eq!(
        (stats.head, stats.first, stats.events),
        (Some(o[2]), Some(o[0]), 3)
    );
    assert_eq!(stats.held_back, 0);
    assert_eq!(stats.held_back_by_s, None);
    assert_eq!(stats.consumers.len(), 1);
    assert_eq!(
        (stats.consumers[0].offset, stats.consumers[0].lag),
        (o[0], 2)
    );
    let list = e.stream_list().await.expect("list");
    let got: Vec<(&str, Option<i64>, u64)> = list
        .iter()
        .map(|s| (s.stream.as_str(), s.head, s.events))
        .collect();
    assert_eq!(got, [("s", Some(o[2]), 3), ("t", Some(t), 1)]);
}

/// The rows above, for [`contract_suite!`](crate::contract_suite).
#[doc(hidden)]
#[macro_export]
macro_rules! __streams_stats {
    ($then:path, $args:tt) => {
        $then! { @rows $args streams::stats [
            stats_and_list_describe_streams,
        ] }
    };
}
