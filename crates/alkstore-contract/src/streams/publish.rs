//! Publishing: offsets, batches all or none, the caller's transaction.

use alkstore_core::stream::NewEvent;
use alkstore_core::Writes as _;
use alkstore_core::{Clock, ErrorKind, StreamEngine};

use super::support::{ev, payloads, publish_one, read_all, settle};
use crate::{writer, Harness, Where};

/// Publish returns each event's offset; offsets grow in the order given,
/// and a read returns the events exactly as published.
pub async fn publish_returns_increasing_offsets<H: Harness>(h: &H, at: Where) {
    let e = h.engine();
    let first = publish_one(e, "orders", "a").await;
    let batch = writer(h, at)
        .stream_publish(vec![
            ev("orders", "b").key("k1"),
            ev("orders", "c"),
            ev("orders", "d").key("k2"),
        ])
        .await
        .expect("batch");
    assert_eq!(batch.len(), 3);
    assert!(first > 0, "offsets are positive");
    let mut all = vec![first];
    all.extend(&batch);
    assert!(all.windows(2).all(|w| w[0] < w[1]), "{all:?}");
    settle(e, "orders").await;
    let read = read_all(e, "orders", 0).await;
    assert_eq!(read.iter().map(|e| e.offset).collect::<Vec<_>>(), all);
    assert_eq!(payloads(&read), ["a", "b", "c", "d"]);
    assert_eq!(
        read.iter().map(|e| e.key.as_deref()).collect::<Vec<_>>(),
        [None, Some("k1"), None, Some("k2")]
    );
    assert!(read.iter().all(|e| &*e.stream == "orders"));
    assert!(read.iter().all(|e| e.created_at == h.clock().now()));
}

/// Eight callers publishing at once, one event or a few per call, to two
/// streams, each get the offsets of exactly their own events, growing in
/// their call order; every event reads back at its offset (an engine may
/// write concurrent calls in one statement and one commit).
pub async fn concurrent_publishes_each_get_their_own_offsets<H: Harness>(h: &H) {
    const CALLERS: usize = 8;
    const CALLS: usize = 20;
    let e = h.engine();
    let mut tasks = Vec::new();
    for t in 0..CALLERS {
        let e = e.clone();
        tasks.push(tokio::spawn(async move {
            let mut mine: Vec<(i64, String, String)> = Vec::new();
            for i in 0..CALLS {
                let events: Vec<NewEvent> = (0..if i % 4 == 3 { 2 } else { 1 })
                    .map(|k| {
                        let stream = if (t + i) % 2 == 0 { "many-x" } else { "many-y" };
                        ev(stream, &format!("{t}/{i}/{k}"))
                    })
                    .collect();
                let expected: Vec<(String, String)> = events
                    .iter()
                    .map(|x| {
                        (
                            x.stream.clone(),
                            String::from_utf8_lossy(&x.payload).into_owned(),
                        )
                    })
                    .collect();
                let offsets = e.stream_publish(events).await.expect("publish");
                assert_eq!(offsets.len(), expected.len(), "one offset per event");
                for (o, (s, p)) in offsets.into_iter().zip(expected) {
                    mine.push((o, s, p));
                }
            }
            mine
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        let mine = t.await.expect("task");
        assert!(
            mine.windows(2).all(|w| w[0].0 < w[1].0),
            "a caller's offsets grow in its call order"
        );
        all.extend(mine);
    }
    let mut read = std::collections::HashMap::new();
    for stream in ["many-x", "many-y"] {
        settle(e, stream).await;
        for x in read_all(e, stream, 0).await {
            read.insert(
                x.offset,
                (
                    x.stream.to_string(),
                    String::from_utf8_lossy(&x.payload).into_owned(),
                ),
            );
        }
    }
    assert_eq!(read.len(), all.len(), "every event reads back");
    for (offset, stream, payload) in &all {
        assert_eq!(
            read.get(offset),
            Some(&(stream.clone(), payload.clone())),
            "offset {offset}"
        );
    }
}

/// A batch with one bad event writes none of them.
pub async fn batch_publish_is_all_or_none<H: Harness>(h: &H, at: Where) {
    let e = h.engine();
    let huge = NewEvent::new("orders", vec![0u8; (1 << 20) + 1]);
    let err = writer(h, at)
        .stream_publish(vec![ev("orders", "ok"), huge])
        .await
        .expect_err("too large");
    assert_eq!(err.kind(), ErrorKind::PayloadTooLarge);
    let err = writer(h, at)
        .stream_publish(vec![ev("orders", "ok"), ev("", "no name")])
        .await
        .expect_err("no stream name");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(read_all(e, "orders", 0).await.is_empty());
    assert!(e.stream_list().await.expect("list").is_empty());
    assert!(writer(h, at)
        .stream_publish(Vec::<NewEvent>::new())
        .await
        .expect("empty")
        .is_empty());
}

/// Publishing inside the caller's transaction commits with it; a rollback
/// leaves nothing, and later events still come after every visible one.
pub async fn outbox_publish_commits_with_the_caller<H: Harness>(h: &H) {
    let e = h.engine();
    let before = publish_one(e, "orders", "before").await;
    let committed = h
        .outbox_publish(vec![ev("orders", "in-tx-1"), ev("orders", "in-tx-2")], true)
        .await
        .expect("outbox commit");
    h.outbox_publish(vec![ev("orders", "rolled-back")], false)
        .await
        .expect("outbox rollback");
    let after = publish_one(e, "orders", "after").await;
    settle(e, "orders").await;
    let read = read_all(e, "orders", 0).await;
    assert_eq!(payloads(&read), ["before", "in-tx-1", "in-tx-2", "after"]);
    let offsets: Vec<i64> = read.iter().map(|e| e.offset).collect();
    assert_eq!(offsets[0], before);
    assert_eq!(offsets[1..3], committed[..]);
    assert_eq!(offsets[3], after);
    assert!(offsets.windows(2).all(|w| w[0] < w[1]), "{offsets:?}");
}

/// Streams are separate logs; offsets are unique across the store.
pub async fn streams_are_separate_logs<H: Harness>(h: &H, at: Where) {
    let e = h.engine();
    let mut offsets = Vec::new();
    for i in 0..5 {
        offsets.push(publish_one(e, "left", &format!("l{i}")).await);
        offsets.push(publish_one(e, "right", &format!("r{i}")).await);
    }
    let mixed = writer(h, at)
        .stream_publish(vec![ev("left", "l5"), ev("right", "r5")])
        .await
        .expect("mixed batch");
    offsets.extend(&mixed);
    settle(e, "left").await;
    settle(e, "right").await;
    let mut unique = offsets.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(
        unique.len(),
        offsets.len(),
        "offsets are unique in the store"
    );
    assert_eq!(
        payloads(&read_all(e, "left", 0).await),
        ["l0", "l1", "l2", "l3", "l4", "l5"]
    );
    assert_eq!(
        payloads(&read_all(e, "right", 0).await),
        ["r0", "r1", "r2", "r3", "r4", "r5"]
    );
}

/// Reads page through a stream in offset order: `after` and `limit`.
pub async fn reads_page_in_offset_order<H: Harness>(h: &H) {
    let e = h.engine();
    let events: Vec<NewEvent> = (0..25).map(|i| ev("pages", &format!("e{i}"))).collect();
    let offsets = e.stream_publish(events).await.expect("publish");
    settle(e, "pages").await;
    let mut after = 0;
    let mut sizes = Vec::new();
    let mut seen = Vec::new();
    loop {
        let page = e
            .stream_read(alkstore_core::stream::StreamReadParams::new(
                "pages", after, 10,
            ))
            .await
            .expect("read");
        sizes.push(page.len());
        let Some(last) = page.last() else { break };
        after = last.offset;
        seen.extend(page.iter().map(|e| e.offset));
    }
    assert_eq!(sizes, [10, 10, 5, 0]);
    assert_eq!(seen, offsets);
    let from_middle = e
        .stream_read(alkstore_core::stream::StreamReadParams::new(
            "pages",
            offsets[19],
            100,
        ))
        .await
        .expect("read");
    assert_eq!(
        from_middle.iter().map(|e| e.offset).collect::<Vec<_>>(),
        offsets[20..]
    );
}

/// The rows above, for [`contract_suite!`](crate::contract_suite).
/// A read with `before` pages back from there, newest first: only the
/// stream's own events, bounded below by `after`, the last page short.
pub async fn reads_page_backwards_from_the_head<H: Harness>(h: &H) {
    use alkstore_core::stream::StreamReadParams;
    let e = h.engine();
    let mut offsets = Vec::new();
    for i in 0..12 {
        // Another stream's events in between are never returned.
        offsets.extend(
            e.stream_publish(ev("back", &format!("b{i}")))
                .await
                .expect("publish"),
        );
        e.stream_publish(ev("back-other", "x"))
            .await
            .expect("publish");
    }
    settle(e, "back").await;
    let newest_first: Vec<i64> = offsets.iter().rev().copied().collect();
    let (mut before, mut sizes, mut seen) = (i64::MAX, Vec::new(), Vec::new());
    loop {
        let page = e
            .stream_read(StreamReadParams::new("back", 0, 5).before(before))
            .await
            .expect("read back");
        sizes.push(page.len());
        let Some(last) = page.last() else { break };
        before = last.offset;
        seen.extend(page.iter().map(|e| e.offset));
    }
    assert_eq!(sizes, [5, 5, 2, 0]);
    assert_eq!(seen, newest_first);
    let newest = e
        .stream_read(StreamReadParams::new("back", 0, 1).before(i64::MAX))
        .await
        .expect("read back");
    assert_eq!(payloads(&newest), ["b11"]);
    // Between two offsets: after bounds it below, before above.
    let middle = e
        .stream_read(StreamReadParams::new("back", offsets[3], 100).before(offsets[7]))
        .await
        .expect("read back");
    assert_eq!(
        middle.iter().map(|e| e.offset).collect::<Vec<_>>(),
        [offsets[6], offsets[5], offsets[4]]
    );
    assert!(e
        .stream_read(StreamReadParams::new("back", offsets[5], 100).before(offsets[5]))
        .await
        .expect("read back")
        .is_empty());
    // The forward read is unchanged.
    assert_eq!(read_all(e, "back", 0).await.len(), 12);
}

#[doc(hidden)]
#[macro_export]
macro_rules! __streams_publish {
    ($then:path, $args:tt) => {
        $then! { @rows $args streams::publish [
            concurrent_publishes_each_get_their_own_offsets,
            outbox_publish_commits_with_the_caller,
            reads_page_in_offset_order,
            reads_page_backwards_from_the_head,
        ] }
        $then! { @places $args streams::publish [
            publish_returns_increasing_offsets,
            batch_publish_is_all_or_none,
            streams_are_separate_logs,
        ] }
    };
}
