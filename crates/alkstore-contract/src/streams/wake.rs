//! Wake hints: publishes wake subscribers.

use std::time::Duration;

use alkstore_core::{Engine, Wake};
use tokio::time::Instant;

use super::support::{ev, publish_one};
use crate::queues::wake::hint_by;
use crate::Harness;

/// A publish through the engine hints its stream at once (and no queue);
/// a publish committed on another connection wakes subscribers too (named
/// on PostgreSQL's NOTIFY, as a bare hint from SQLite's watcher).
pub async fn publishes_wake_subscribers<H: Harness>(h: &H) {
    let e = h.engine();
    let mut rx = e.wake_subscribe();
    let soon = || Instant::now() + Duration::from_secs(10);
    if h.foreign_hints_name_queue() {
        assert!(
            hint_by(&mut rx, soon(), |w| *w == Wake::All).await,
            "the listener never became ready"
        );
    }
    publish_one(e, "own", "x").await;
    assert!(
        hint_by(&mut rx, soon(), |w| *w == Wake::Stream("own".into())).await,
        "no hint naming the stream after the engine's own publish"
    );
    assert!(
        !Wake::Stream("own".into()).concerns("own"),
        "not a queue hint"
    );
    let deadline = soon();
    let mut woke = false;
    while !woke && Instant::now() < deadline {
        h.outbox_publish(vec![ev("foreign", "x")], true)
            .await
            .expect("outbox publish");
        let quiet = (Instant::now() + Duration::from_millis(200)).min(deadline);
        woke = if h.foreign_hints_name_queue() {
            hint_by(&mut rx, quiet, |w| *w == Wake::Stream("foreign".into())).await
        } else {
            hint_by(&mut rx, quiet, |w| w.concerns_stream("foreign")).await
        };
    }
    assert!(woke, "no hint after another connection's publish");
}

/// The rows above, for [`contract_suite!`](crate::contract_suite).
#[doc(hidden)]
#[macro_export]
macro_rules! __streams_wake {
    ($then:path, $args:tt) => {
        $then! { @rows $args streams::wake [
            publishes_wake_subscribers,
        ] }
    };
}
