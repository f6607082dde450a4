//! Retention: trim before an offset or by age, and maintenance trims.

use alkstore_core::Writes as _;
use std::time::Duration;

use alkstore_core::stream::{StreamOffsetCommitParams, StreamRetentionParams, StreamTrimParams};
use alkstore_core::{Engine, ErrorKind, StreamEngine};

use super::support::{payloads, publish_one, read_all, settle};
use crate::Harness;

/// Trim before an offset deletes what is below it; a trim past the head is
/// refused; commits up to a trimmed head stay valid, and offsets are never
/// handed out again after the newest events are trimmed.
pub async fn trim_before_an_offset<H: Harness>(h: &H) {
    let e = h.engine();
    let mut o = Vec::new();
    for i in 0..5 {
        o.push(publish_one(e, "s", &format!("e{i}")).await);
    }
    settle(e, "s").await;
    assert_eq!(
        e.stream_trim(StreamTrimParams::before("s", o[2]))
            .await
            .expect("trim"),
        2
    );
    assert_eq!(payloads(&read_all(e, "s", 0).await), ["e2", "e3", "e4"]);
    let err = e
        .stream_trim(StreamTrimParams::before("s", o[4] + 2))
        .await
        .expect_err("past the head");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert_eq!(read_all(e, "s", 0).await.len(), 3, "nothing deleted");
    assert_eq!(
        e.stream_trim(StreamTrimParams::before("s", o[4] + 1))
            .await
            .expect("all"),
        3
    );
    assert!(read_all(e, "s", 0).await.is_empty());
    // A consumer that read up to the old head can still say so.
    let saved = e
        .stream_offset_commit(StreamOffsetCommitParams::new("s", "c", o[4]))
        .await
        .expect("commit up to the trimmed head");
    assert_eq!(saved, o[4]);
    let next = publish_one(e, "s", "after").await;
    assert!(
        next > o[4],
        "offsets are never reused: {next} after {}",
        o[4]
    );
}

/// Trim by age (at least 1 s, as retention), and per-stream retention
/// applied by the maintenance sweep.
pub async fn trim_by_age_and_by_retention<H: Harness>(h: &H) {
    let e = h.engine();
    publish_one(e, "s", "old-1").await;
    publish_one(e, "s", "old-2").await;
    h.clock().advance(Duration::from_secs(100));
    publish_one(e, "s", "new").await;
    settle(e, "s").await;
    let trimmed = e
        .stream_trim(StreamTrimParams::older_than("s", Duration::from_secs(50)))
        .await
        .expect("trim by age");
    assert_eq!(trimmed, 2);
    assert_eq!(payloads(&read_all(e, "s", 0).await), ["new"]);
    // An age under a second is refused, as a retention under a second is
    // (it would delete every event); nothing is deleted.
    for age in [Duration::ZERO, Duration::from_millis(999)] {
        let err = e
            .stream_trim(StreamTrimParams::older_than("s", age))
            .await
            .expect_err("under 1 s");
        assert_eq!(
            err.kind(),
            alkstore_core::ErrorKind::InvalidInput,
            "{age:?}: {err}"
        );
        let err = e
            .stream_retention_set(StreamRetentionParams::new("s", Some(age)))
            .await
            .expect_err("under 1 s");
        assert_eq!(
            err.kind(),
            alkstore_core::ErrorKind::InvalidInput,
            "{age:?}: {err}"
        );
    }
    assert_eq!(payloads(&read_all(e, "s", 0).await), ["new"]);

    e.stream_retention_set(StreamRetentionParams::new(
        "s",
        Some(Duration::from_secs(30)),
    ))
    .await
    .expect("retention");
    assert_eq!(
        e.stream_stats("s").await.expect("stats").max_age_s,
        Some(30)
    );
    assert_eq!(
        e.sweep().await.expect("sweep").events_trimmed,
        0,
        "nothing old yet"
    );
    h.clock().advance(Duration::from_secs(40));
    publish_one(e, "s", "newest").await;
    settle(e, "s").await;
    assert_eq!(e.sweep().await.expect("sweep").events_trimmed, 1);
    assert_eq!(payloads(&read_all(e, "s", 0).await), ["newest"]);
}

/// The rows above, for [`contract_suite!`](crate::contract_suite).
#[doc(hidden)]
#[macro_export]
macro_rules! __streams_trim {
    ($then:path, $args:tt) => {
        $then! { @rows $args streams::trim [
            trim_before_an_offset,
            trim_by_age_and_by_retention,
        ] }
    };
}
