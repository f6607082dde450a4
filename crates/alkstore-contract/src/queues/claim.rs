//! Claim: order, due times, limits and queues.

use alkstore_core::Writes as _;
use std::collections::HashSet;

use alkstore_core::{Clock, EnqueueOpts, NewJob, QueueAdmin};

use super::support::{claim, enqueue_one, job, secs};
use crate::Harness;

/// Claims hand out priority DESC, then run_at, then id.
pub async fn claim_order_is_priority_then_run_at_then_id<H: Harness>(h: &H) {
    let e = h.engine();
    let now = h.clock().now();
    let a = enqueue_one(e, job("o", "a")).await;
    let b = enqueue_one(
        e,
        job("o", "b").with_opts(EnqueueOpts::default().priority(10)),
    )
    .await;
    let c = enqueue_one(
        e,
        job("o", "c").with_opts(EnqueueOpts::default().run_at(now - 100)),
    )
    .await;
    let d = enqueue_one(e, job("o", "d")).await;
    let f = enqueue_one(
        e,
        job("o", "f").with_opts(EnqueueOpts::default().priority(-5).run_at(now - 500)),
    )
    .await;
    let got: Vec<i64> = claim(e, "o", "w", 10).await.iter().map(|j| j.id).collect();
    assert_eq!(got, vec![b, c, a, d, f]);
}

/// A delayed job is not claimed before it is due, and is after.
pub async fn delayed_job_waits_until_due<H: Harness>(h: &H) {
    let e = h.engine();
    let id = enqueue_one(
        e,
        job("d", "later").with_opts(EnqueueOpts::default().delay(secs(60))),
    )
    .await;
    assert!(claim(e, "d", "w", 5).await.is_empty());
    let s = e.queue_stats("d").await.expect("stats");
    assert_eq!((s.ready, s.scheduled), (0, 1));
    h.clock().advance(secs(59));
    assert!(claim(e, "d", "w", 5).await.is_empty());
    h.clock().advance(secs(1));
    let got = claim(e, "d", "w", 5).await;
    assert_eq!(got.iter().map(|j| j.id).collect::<Vec<_>>(), vec![id]);
    assert_eq!(got[0].attempt, 1);
    assert_eq!(got[0].claim_expires_at, h.clock().now() + 300);
}

/// A claim returns at most `limit` jobs, only from its queue, each once.
pub async fn claim_respects_limit_and_queue<H: Harness>(h: &H) {
    let e = h.engine();
    let jobs: Vec<NewJob> = (0..7).map(|i| job("l", &i.to_string())).collect();
    e.job_enqueue(jobs).await.expect("enqueue");
    enqueue_one(e, job("other", "x")).await;
    let first = claim(e, "l", "w", 3).await;
    assert_eq!(first.len(), 3);
    let second = claim(e, "l", "w", 10).await;
    assert_eq!(second.len(), 4);
    assert!(claim(e, "l", "w", 10).await.is_empty());
    let all: HashSet<i64> = first.iter().chain(&second).map(|j| j.id).collect();
    assert_eq!(all.len(), 7);
    assert!(first
        .iter()
        .chain(&second)
        .all(|j| j.queue == "l" && j.worker == "w"));
    assert_eq!(e.queue_stats("other").await.expect("stats").ready, 1);
}

/// The rows above, for [`contract_suite!`](crate::contract_suite): list each
/// `pub async fn …<H: Harness>` here, next to where it is written.
#[doc(hidden)]
#[macro_export]
macro_rules! __queues_claim {
    ($then:path, $args:tt) => {
        $then! { @rows $args queues::claim [
            claim_order_is_priority_then_run_at_then_id,
            delayed_job_waits_until_due,
            claim_respects_limit_and_queue,
        ] }
    };
}
