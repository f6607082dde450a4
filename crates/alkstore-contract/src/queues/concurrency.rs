//! Concurrency: claimers racing on one queue.

use std::collections::HashSet;

use alkstore_core::{JobClaimParams, QueueEngine};

use super::support::{job, live_count};
use crate::Harness;

/// Two workers claiming concurrently in a loop never hold the same job inside
/// a valid claim, and together they drain every job exactly once.
pub async fn concurrent_claimers_never_share_a_job<H: Harness>(h: &H) {
    const N: usize = 10_000;
    let e = h.engine();
    for chunk in (0..N).collect::<Vec<_>>().chunks(1000) {
        e.job_enqueue(
            chunk
                .iter()
                .map(|i| job("race", &i.to_string()))
                .collect::<Vec<_>>(),
        )
        .await
        .expect("enqueue");
    }
    let mut tasks = Vec::new();
    for w in 0..2 {
        let e = e.clone();
        tasks.push(tokio::spawn(async move {
            let worker = format!("w{w}");
            let mut seen = Vec::new();
            loop {
                let got = e
                    .job_claim(JobClaimParams::new("race", worker.clone(), 7))
                    .await
                    .expect("claim");
                if got.is_empty() {
                    break;
                }
                let acks = e
                    .job_ack(got.iter().map(|j| j.claim()).collect::<Vec<_>>())
                    .await
                    .expect("ack");
                assert!(
                    acks.iter().all(|a| *a),
                    "every ack of a fresh claim succeeds"
                );
                seen.extend(got.iter().map(|j| j.id));
            }
            seen
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.expect("task"));
    }
    let distinct: HashSet<i64> = all.iter().copied().collect();
    assert_eq!(all.len(), N, "each job claimed exactly once");
    assert_eq!(distinct.len(), N);
    assert_eq!(live_count(e, "race").await, 0);
}

/// The rows above, for [`contract_suite!`](crate::contract_suite): list each
/// `pub async fn …<H: Harness>` here, next to where it is written.
#[doc(hidden)]
#[macro_export]
macro_rules! __queues_concurrency {
    ($then:path, $args:tt) => {
        $then! { @rows $args queues::concurrency [
            concurrent_claimers_never_share_a_job,
        ] }
    };
}
