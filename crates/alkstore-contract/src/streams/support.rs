//! Helpers the stream rows share.

use alkstore_core::stream::{Event, NewEvent, StreamReadParams};
use alkstore_core::StreamEngine;
use alkstore_core::Writes as _;

/// An event of `stream` with `payload` and no key.
pub(crate) fn ev(stream: &str, payload: &str) -> NewEvent {
    NewEvent::new(stream, payload.as_bytes().to_vec())
}

/// Every readable event of `stream` after `after`, page by page.
pub(crate) async fn read_all<E: StreamEngine + alkstore_core::AllOps>(
    e: &E,
    stream: &str,
    after: i64,
) -> Vec<Event> {
    let mut out: Vec<Event> = Vec::new();
    let mut after = after;
    loop {
        let page = e
            .stream_read(StreamReadParams::new(stream, after, 100))
            .await
            .expect("read");
        let Some(last) = page.last() else {
            return out;
        };
        after = last.offset;
        out.extend(page);
    }
}

/// The payloads of `events` as text.
pub(crate) fn payloads(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|e| String::from_utf8_lossy(&e.payload).into_owned())
        .collect()
}

/// Publish one event; its offset.
pub(super) async fn publish_one<E: StreamEngine + alkstore_core::AllOps>(
    e: &E,
    stream: &str,
    payload: &str,
) -> i64 {
    e.stream_publish(ev(stream, payload))
        .await
        .expect("publish")[0]
}

/// Wait (up to 10 s) until no committed event of `stream` is held back by
/// an open transaction. On PostgreSQL an open publisher older than an
/// event holds it back, another test's included (in the same store only,
/// and only one that holds the event table's lock; a transaction that ends
/// during a stats call's look at the locks holds that call back too). Once
/// settled, reads of what the row published are final.
pub async fn settle<E: StreamEngine + alkstore_core::AllOps>(e: &E, stream: &str) {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let held = e.stream_stats(stream).await.expect("stats").held_back;
        if held == 0 {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{held} events of {stream} still held back after 10 s"
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}
