//! Release, heartbeat, claim tokens and an operator's unclaim.

use alkstore_core::queue::JobFailParams;
use alkstore_core::queue::JobSnoozeParams;
use alkstore_core::Writes as _;
use std::time::Duration;

use alkstore_core::{
    Claim, Clock, DeadSelect, JobRetryParams, QueueAdmin, QueueEngine, QueueOpts, RetryOutcome,
};

use super::support::{claim, enqueue_one, job, secs};
use crate::Harness;

/// Heartbeat extends a valid claim by the visibility timeout from now.
pub async fn heartbeat_extends_a_valid_claim<H: Harness>(h: &H) {
    let e = h.engine();
    let opts = QueueOpts {
        visibility_timeout: secs(10),
        ..QueueOpts::default()
    };
    enqueue_one(e, job("hb", "x").with_queue_opts(opts)).await;
    let j = claim(e, "hb", "w", 1).await.remove(0);
    h.clock().advance(secs(8));
    let until = e.job_heartbeat(j.claim()).await.expect("hb");
    assert_eq!(until, Some(h.clock().now() + 10));
    h.clock().advance(secs(8));
    assert!(
        claim(e, "hb", "other", 1).await.is_empty(),
        "still held after 16 s"
    );
    assert_eq!(e.job_ack(vec![j.claim()]).await.expect("ack"), vec![true]);
}

/// Release makes a job claimable at once and does not count the attempt.
pub async fn release_hands_job_back_without_using_an_attempt<H: Harness>(h: &H) {
    let e = h.engine();
    let id = enqueue_one(e, job("rel", "x")).await;
    let j = claim(e, "rel", "a", 1).await.remove(0);
    assert!(e.job_release(j.claim()).await.expect("release"));
    assert!(!e.job_release(j.claim()).await.expect("release twice"));
    let again = claim(e, "rel", "b", 1).await;
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].id, id);
    assert_eq!(again[0].attempt, 1);
    assert_eq!(e.job_ack(vec![j.claim()]).await.expect("ack"), vec![false]);
}

/// Every claim gets a token of its own: after a release (which gives the
/// attempt back) the same worker name claiming the job again holds a new
/// claim, and the old claim can no longer ack, retry, fail, heartbeat,
/// snooze or release.
pub async fn claim_tokens_never_repeat<H: Harness>(h: &H) {
    let e = h.engine();
    let id = enqueue_one(e, job("tok", "x")).await;
    let first = claim(e, "tok", "w", 1).await.remove(0);
    assert!(e.job_release(first.claim()).await.expect("release"));
    let second = claim(e, "tok", "w", 1).await.remove(0);
    assert_eq!(
        (second.id, second.attempt, second.worker.as_str()),
        (id, 1, "w")
    );
    assert_ne!(
        second.claim(),
        first.claim(),
        "same worker, same attempt, new token"
    );
    let old = first.claim();
    assert_eq!(e.job_heartbeat(old.clone()).await.expect("heartbeat"), None);
    assert_eq!(
        e.job_snooze(JobSnoozeParams::new(old.clone(), secs(1)))
            .await
            .expect("snooze"),
        None
    );
    assert!(!e.job_release(old.clone()).await.expect("release"));
    assert!(!e
        .job_fail(JobFailParams::new(old.clone(), "x"))
        .await
        .expect("fail"));
    let retry = JobRetryParams::new(old.clone(), "x");
    assert_eq!(
        e.job_retry(retry).await.expect("retry"),
        RetryOutcome::NotHeld
    );
    assert_eq!(e.job_ack(vec![old]).await.expect("ack"), vec![false]);
    // The same after a snooze, and after an operator's unclaim.
    assert!(e
        .job_snooze(JobSnoozeParams::new(second.claim(), Duration::ZERO))
        .await
        .expect("snooze")
        .is_some());
    let third = claim(e, "tok", "w", 1).await.remove(0);
    assert_eq!(third.attempt, 1);
    assert!(e.job_unclaim(id).await.expect("unclaim"));
    assert!(
        !e.job_unclaim(id).await.expect("unclaim pending"),
        "only processing jobs"
    );
    let fourth = claim(e, "tok", "w", 1).await.remove(0);
    assert_eq!(fourth.attempt, 1, "unclaim gives the attempt back");
    let stale: Vec<Claim> = [&second, &third].iter().map(|j| j.claim()).collect();
    assert_eq!(e.job_ack(stale).await.expect("ack"), vec![false, false]);
    assert_eq!(
        e.job_ack(vec![fourth.claim()]).await.expect("ack"),
        vec![true]
    );
    // Tokens survive a trip through the dead-letter table.
    let id = enqueue_one(e, job("tok2", "x")).await;
    let a = claim(e, "tok2", "w", 1).await.remove(0);
    assert!(e
        .job_fail(JobFailParams::new(a.claim(), "x"))
        .await
        .expect("fail"));
    assert_eq!(
        e.dead_requeue(DeadSelect::ids(vec![id]))
            .await
            .expect("requeue"),
        1
    );
    let b = claim(e, "tok2", "w", 1).await.remove(0);
    assert_eq!(b.attempt, 1);
    assert_ne!(a.claim(), b.claim());
}

/// The rows above, for [`contract_suite!`](crate::contract_suite): list each
/// `pub async fn …<H: Harness>` here, next to where it is written.
#[doc(hidden)]
#[macro_export]
macro_rules! __queues_release {
    ($then:path, $args:tt) => {
        $then! { @rows $args queues::release [
            heartbeat_extends_a_valid_claim,
            release_hands_job_back_without_using_an_attempt,
            claim_tokens_never_repeat,
        ] }
    };
}
