//! Outbox: enqueue inside the caller's own transaction.

use super::support::{claim, job, live_count, secs};
use crate::Harness;

/// Enqueue inside the caller's transaction commits or rolls back with it.
pub async fn outbox_commits_and_rolls_back_with_caller<H: Harness>(h: &H) {
    let e = h.engine();
    h.outbox_enqueue(job("outbox", "rolled back"), false)
        .await
        .expect("rollback path");
    assert_eq!(live_count(e, "outbox").await, 0, "rollback drops the job");
    h.outbox_enqueue(job("outbox", "committed"), true)
        .await
        .expect("commit path");
    assert_eq!(live_count(e, "outbox").await, 1);
    h.clock().advance(secs(5));
    let got = claim(e, "outbox", "w", 5).await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].payload, b"committed");
}

/// The rows above, for [`contract_suite!`](crate::contract_suite): list each
/// `pub async fn …<H: Harness>` here, next to where it is written.
#[doc(hidden)]
#[macro_export]
macro_rules! __queues_outbox {
    ($then:path, $args:tt) => {
        $then! { @rows $args queues::outbox [
            outbox_commits_and_rolls_back_with_caller,
        ] }
    };
}
