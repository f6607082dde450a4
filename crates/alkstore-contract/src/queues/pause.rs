//! Pausing a queue: nothing is claimed from it until it is resumed; other
//! queues, enqueues and the listing are unaffected.

use alkstore_core::{ErrorKind, QueueAdmin};

use super::support::{claim, enqueue_ids, job};
use crate::Harness;

/// A paused queue gives no claims (it still takes enqueues); other queues
/// are unaffected; pausing twice or resuming a running queue reports that
/// nothing changed; resuming hands its jobs out again.
pub async fn paused_queues_are_not_claimed_from<H: Harness>(h: &H) {
    let e = h.engine();
    enqueue_ids(e, vec![job("mail", "a"), job("mail", "b"), job("sms", "c")]).await;
    assert!(e.queue_pause("mail").await.expect("pause"));
    assert!(!e.queue_pause("mail").await.expect("pause again"));
    assert_eq!(e.queue_paused().await.expect("paused"), ["mail"]);
    assert!(claim(e, "mail", "w", 10).await.is_empty(), "paused");
    assert_eq!(claim(e, "sms", "w", 10).await.len(), 1, "other queues run");
    enqueue_ids(e, vec![job("mail", "d")]).await;
    assert!(claim(e, "mail", "w", 10).await.is_empty(), "still paused");
    assert_eq!(e.queue_stats("mail").await.expect("stats").ready, 3);
    assert!(e.queue_resume("mail").await.expect("resume"));
    assert!(!e.queue_resume("mail").await.expect("resume again"));
    assert!(e.queue_paused().await.expect("paused").is_empty());
    assert_eq!(claim(e, "mail", "w", 10).await.len(), 3);
    let err = e.queue_pause("").await.expect_err("empty name");
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert!(e.queue_paused().await.expect("paused").is_empty());
}

/// The rows above, for [`contract_suite!`](crate::contract_suite).
#[doc(hidden)]
#[macro_export]
macro_rules! __queues_pause {
    ($then:path, $args:tt) => {
        $then! { @rows $args queues::pause [
            paused_queues_are_not_claimed_from,
        ] }
    };
}
