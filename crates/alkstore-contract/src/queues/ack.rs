//! Ack: only a valid claim completes its job, one answer per claim.

use alkstore_core::queue::JobFailParams;
use alkstore_core::Writes as _;
use alkstore_core::{
    Claim, Job, JobRetryParams, JobState, NewJob, QueueAdmin, QueueEngine, RetryOutcome,
};

use super::support::{claim, enqueue_one, job, secs};
use crate::places::assert_lost;
use crate::{writer, Harness, Where};

/// Ack deletes the job and returns true once; an expired claim cannot ack.
pub async fn ack_deletes_only_while_claim_is_valid<H: Harness>(h: &H, at: Where) {
    let e = h.engine();
    let w = writer(h, at);
    let ack = |claims: Vec<Claim>| w.job_ack(claims);
    let id = enqueue_one(e, job("a", "x")).await;
    let j = claim(e, "a", "w", 1).await.remove(0);
    assert_eq!(ack(vec![j.claim()]).await.expect("ack"), vec![true]);
    assert!(e.job_get(id).await.expect("get").is_none());
    assert_lost(at, ack(vec![j.claim()]).await, vec![false]);

    let id2 = enqueue_one(e, job("a", "y")).await;
    let j2 = claim(e, "a", "w", 1).await.remove(0);
    let mut wrong = j2.claim();
    wrong.worker = "intruder".into();
    assert_lost(at, ack(vec![wrong]).await, vec![false]);
    h.clock().advance(secs(300));
    // The claim expired.
    assert_lost(at, ack(vec![j2.claim()]).await, vec![false]);
    assert!(e.job_get(id2).await.expect("get").is_some());
}

/// The acceptance row: acking a job whose claim expired and was re-claimed
/// returns false and leaves the new owner's job alone.
pub async fn stale_ack_after_reclaim_returns_false<H: Harness>(h: &H, at: Where) {
    let e = h.engine();
    let w = writer(h, at);
    let ack = |claims: Vec<Claim>| w.job_ack(claims);
    let id = enqueue_one(e, job("s", "x")).await;
    let old = claim(e, "s", "slow", 1).await.remove(0);
    h.clock().advance(secs(301));
    let new = claim(e, "s", "fast", 1).await.remove(0);
    assert_eq!(new.id, id);
    assert_eq!(new.attempt, 2);
    assert_lost(at, ack(vec![old.claim()]).await, vec![false]);
    assert_eq!(kind_of_retry(e, &old).await, RetryOutcome::NotHeld);
    assert!(!e
        .job_fail(JobFailParams::new(old.claim(), "late"))
        .await
        .expect("fail"));
    assert!(e.job_heartbeat(old.claim()).await.expect("hb").is_none());
    let info = e.job_get(id).await.expect("get").expect("still there");
    assert_eq!(info.state, JobState::Processing);
    assert_eq!(info.worker.as_deref(), Some("fast"));
    assert_eq!(ack(vec![new.claim()]).await.expect("ack"), vec![true]);
}

async fn kind_of_retry<E: QueueEngine + QueueAdmin + alkstore_core::AllOps>(
    e: &E,
    j: &Job,
) -> RetryOutcome {
    e.job_retry(JobRetryParams::new(j.claim(), "x"))
        .await
        .expect("retry")
}

/// Batch ack answers per claim and deletes only the valid ones.
pub async fn batch_ack_reports_each_claim<H: Harness>(h: &H, at: Where) {
    let e = h.engine();
    let w = writer(h, at);
    let ack = |claims: Vec<Claim>| w.job_ack(claims);
    let jobs: Vec<NewJob> = (0..5).map(|i| job("ba", &i.to_string())).collect();
    e.job_enqueue(jobs).await.expect("enqueue");
    let got = claim(e, "ba", "w", 5).await;
    let mut claims: Vec<Claim> = got.iter().map(|j| j.claim()).collect();
    claims[1].token = 9;
    claims.push(Claim {
        id: -1,
        worker: "w".into(),
        token: 1,
    });
    let out = ack(claims.clone()).await;
    if at.in_tx() {
        // One claim not held refuses the whole transaction.
        assert_lost(at, out, Vec::new());
        let s = e.queue_stats("ba").await.expect("stats");
        assert_eq!(s.processing, 5, "nothing acked");
        claims.retain(|c| c.id > 0 && c.token != 9);
        assert_eq!(ack(claims).await.expect("ack"), vec![true; 4]);
    } else {
        assert_eq!(
            out.expect("ack"),
            vec![true, false, true, true, true, false]
        );
    }
    let s = e.queue_stats("ba").await.expect("stats");
    assert_eq!(s.processing, 1);

    // One job named twice: a stale attempt and the current one, either order.
    for stale_first in [true, false] {
        let id = enqueue_one(e, job("ba2", "x")).await;
        let old = claim(e, "ba2", "w", 1).await.remove(0);
        h.clock().advance(secs(301));
        let new = claim(e, "ba2", "w", 1).await.remove(0);
        assert_eq!((new.id, new.attempt), (id, 2));
        let (claims, want) = if stale_first {
            (vec![old.claim(), new.claim()], vec![false, true])
        } else {
            (vec![new.claim(), old.claim()], vec![true, false])
        };
        let out = ack(claims).await;
        if at.in_tx() {
            assert_lost(at, out, Vec::new());
            assert!(e.job_get(id).await.expect("get").is_some(), "refused whole");
            assert_eq!(ack(vec![new.claim()]).await.expect("ack"), vec![true]);
        } else {
            assert_eq!(out.expect("ack"), want);
        }
        assert!(e.job_get(id).await.expect("get").is_none());
    }
}

/// The rows above, for [`contract_suite!`](crate::contract_suite): list each
/// `pub async fn …<H: Harness>` here, next to where it is written.
#[doc(hidden)]
#[macro_export]
macro_rules! __queues_ack {
    ($then:path, $args:tt) => {
        $then! { @places $args queues::ack [
            ack_deletes_only_while_claim_is_valid,
            stale_ack_after_reclaim_returns_false,
            batch_ack_reports_each_claim,
        ] }
    };
}
