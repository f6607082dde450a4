//! Concurrency: claimers racing on one queue, enqueuers racing to write.

use alkstore_core::Writes as _;
use std::collections::HashSet;

use alkstore_core::{EnqueueOpts, JobClaimParams, NewJob, QueueAdmin, QueueEngine};

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

/// Sixteen callers enqueueing at once, one job or a few per call, over two
/// queues and with different options, each get ids of exactly their own
/// jobs, in the order they gave them (an engine may write concurrent calls
/// in one statement and one commit; it must still answer each call with
/// its own ids), and every job is there.
pub async fn concurrent_enqueues_each_get_their_own_jobs<H: Harness>(h: &H) {
    const CALLERS: usize = 16;
    const CALLS: usize = 25;
    let e = h.engine();
    let mut tasks = Vec::new();
    for t in 0..CALLERS {
        let e = e.clone();
        tasks.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            for i in 0..CALLS {
                // Every fifth call a batch of three; queues and priorities
                // differ between callers.
                let jobs: Vec<NewJob> = (0..if i % 5 == 4 { 3 } else { 1 })
                    .map(|k| {
                        let queue = if (t + k) % 2 == 0 { "many-a" } else { "many-b" };
                        let opts =
                            EnqueueOpts::default().priority(i32::try_from(t % 3).unwrap_or(0));
                        job(queue, &format!("{t}/{i}/{k}")).with_opts(opts)
                    })
                    .collect();
                let expected: Vec<(String, String)> = jobs
                    .iter()
                    .map(|j| {
                        (
                            j.queue.clone(),
                            String::from_utf8_lossy(&j.payload).into_owned(),
                        )
                    })
                    .collect();
                let ids = e.job_enqueue(jobs).await.expect("enqueue");
                assert_eq!(ids.len(), expected.len(), "one id per job");
                mine.extend(ids.iter().map(|x| x.id()).zip(expected));
            }
            mine
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.expect("task"));
    }
    let distinct: HashSet<i64> = all.iter().map(|(id, _)| *id).collect();
    assert_eq!(distinct.len(), all.len(), "no id answers two jobs");
    for (id, (queue, payload)) in &all {
        let got = e
            .job_get(*id)
            .await
            .expect("get")
            .expect("the job is there");
        assert_eq!(&got.queue, queue, "job {id}");
        assert_eq!(
            String::from_utf8_lossy(&got.payload),
            payload.as_str(),
            "job {id}"
        );
    }
    assert_eq!(
        live_count(e, "many-a").await + live_count(e, "many-b").await,
        u64::try_from(all.len()).unwrap_or(u64::MAX)
    );
}

/// The rows above, for [`contract_suite!`](crate::contract_suite): list each
/// `pub async fn …<H: Harness>` here, next to where it is written.
#[doc(hidden)]
#[macro_export]
macro_rules! __queues_concurrency {
    ($then:path, $args:tt) => {
        $then! { @rows $args queues::concurrency [
            concurrent_claimers_never_share_a_job,
            concurrent_enqueues_each_get_their_own_jobs,
        ] }
    };
}
