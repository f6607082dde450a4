//! Bad stream input: a typed error, nothing written.

use alkstore_core::stream::{
    NewEvent, StreamOffsetCommitParams, StreamOffsetGetParams, StreamReadParams,
    StreamRetentionParams, StreamTrimParams,
};
use alkstore_core::Writes as _;
use alkstore_core::{ErrorKind, StreamEngine};

use crate::{Harness, Where};

/// Empty, over-long or NUL names, limits of 0 or above the cap, negative
/// offsets, trims without a criterion: each an `InvalidInput`, and the
/// store stays empty.
pub async fn bad_stream_input_is_refused<H: Harness>(h: &H, at: Where) {
    let e = h.engine();
    let w = crate::writer(h, at);
    let long = "x".repeat(201);
    for name in ["", long.as_str(), "a\0b"] {
        let errs = [
            w.stream_publish(NewEvent::new(name, b"x".to_vec()))
                .await
                .map(|_| ()),
            e.stream_read(StreamReadParams::new(name, 0, 10))
                .await
                .map(|_| ()),
            e.stream_offset_get(StreamOffsetGetParams::new(name, "c"))
                .await
                .map(|_| ()),
            e.stream_offset_get(StreamOffsetGetParams::new("s", name))
                .await
                .map(|_| ()),
            w.stream_offset_commit(StreamOffsetCommitParams::new(name, "c", 0))
                .await
                .map(|_| ()),
            w.stream_offset_commit(StreamOffsetCommitParams::new("s", name, 0))
                .await
                .map(|_| ()),
            e.stream_stats(name).await.map(|_| ()),
            e.stream_trim(StreamTrimParams::before(name, 1))
                .await
                .map(|_| ()),
        ];
        for (i, r) in errs.into_iter().enumerate() {
            let err = r.expect_err("bad name");
            assert_eq!(
                err.kind(),
                ErrorKind::InvalidInput,
                "call {i} with {name:?}"
            );
        }
    }
    let key = NewEvent::new("s", b"x".to_vec()).key("");
    assert_eq!(
        w.stream_publish(key).await.expect_err("key").kind(),
        ErrorKind::InvalidInput
    );
    for limit in [0, 10_001] {
        let err = e
            .stream_read(StreamReadParams::new("s", 0, limit))
            .await
            .expect_err("limit");
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "limit {limit}");
    }
    let err = w
        .stream_offset_commit(StreamOffsetCommitParams::new("s", "c", -1))
        .await
        .expect_err("negative");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    for (offset, expected) in [(1, -1), (1, 2)] {
        let err = w
            .stream_offset_commit(
                StreamOffsetCommitParams::new("s", "c", offset).expecting(expected),
            )
            .await
            .expect_err("expected offset");
        assert_eq!(
            err.kind(),
            ErrorKind::InvalidInput,
            "offset {offset} expecting {expected}"
        );
    }
    let mut nothing = StreamTrimParams::before("s", 0);
    nothing.before = None;
    assert_eq!(
        e.stream_trim(nothing)
            .await
            .expect_err("no criterion")
            .kind(),
        ErrorKind::InvalidInput
    );
    let zero_age = StreamRetentionParams::new("s", Some(std::time::Duration::ZERO));
    assert_eq!(
        e.stream_retention_set(zero_age)
            .await
            .expect_err("zero age")
            .kind(),
        ErrorKind::InvalidInput
    );
    let too_many: Vec<NewEvent> = (0..10_001)
        .map(|_| NewEvent::new("s", b"x".to_vec()))
        .collect();
    assert_eq!(
        w.stream_publish(too_many)
            .await
            .expect_err("batch cap")
            .kind(),
        ErrorKind::InvalidInput
    );
    assert!(
        e.stream_list().await.expect("list").is_empty(),
        "nothing written"
    );
}

/// The rows above, for [`contract_suite!`](crate::contract_suite).
#[doc(hidden)]
#[macro_export]
macro_rules! __streams_validation {
    ($then:path, $args:tt) => {
        $then! { @places $args streams::validation [
            bad_stream_input_is_refused,
        ] }
    };
}
