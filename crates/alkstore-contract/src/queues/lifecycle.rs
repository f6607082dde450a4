//! The store's lifecycle: a closed engine refuses every call.

use alkstore_core::stream::StreamReadParams;
use alkstore_core::Writes as _;
use alkstore_core::{Engine, ErrorKind, JobClaimParams, QueueAdmin, QueueEngine, StreamEngine};

use super::support::{enqueue_one, job};
use crate::Harness;

/// After `close`, every call (on every clone of the engine) fails with
/// `Closed` and writes nothing; calls before it were unaffected.
pub async fn a_closed_engine_refuses_every_call<H: Harness>(h: &H) {
    let e = h.engine();
    enqueue_one(e, job("life", "before")).await;
    let clone = e.clone();
    assert!(!clone.is_closed());
    e.close();
    assert!(clone.is_closed(), "closing reaches every clone");
    let errs = [
        clone
            .job_enqueue(vec![job("life", "after")])
            .await
            .map(|_| ()),
        clone
            .job_claim(JobClaimParams::new("life", "w", 1))
            .await
            .map(|_| ()),
        clone.queue_stats("life").await.map(|_| ()),
        clone.sweep().await.map(|_| ()),
        clone
            .stream_read(StreamReadParams::new("s", 0, 1))
            .await
            .map(|_| ()),
    ];
    for (i, r) in errs.into_iter().enumerate() {
        assert_eq!(r.expect_err("closed").kind(), ErrorKind::Closed, "call {i}");
    }
    e.close();
    assert!(e.is_closed(), "closing twice is harmless");
}

/// The rows above, for [`contract_suite!`](crate::contract_suite).
#[doc(hidden)]
#[macro_export]
macro_rules! __queues_lifecycle {
    ($then:path, $args:tt) => {
        $then! { @rows $args queues::lifecycle [
            a_closed_engine_refuses_every_call,
        ] }
    };
}
