//! Helpers shared by the queue rows.

use alkstore_core::Writes as _;
use std::time::Duration;

use alkstore_core::{ErrorKind, Job, JobClaimParams, NewJob, QueueAdmin, QueueEngine, Result};

pub(crate) fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

pub(crate) fn job(queue: &str, payload: &str) -> NewJob {
    NewJob::new(queue, payload.as_bytes().to_vec())
}

pub(crate) async fn enqueue_one<E: QueueEngine + QueueAdmin + alkstore_core::AllOps>(
    e: &E,
    j: NewJob,
) -> i64 {
    let out = e.job_enqueue(vec![j]).await.expect("enqueue");
    out[0].id()
}

/// Enqueue a batch; the new ids in batch order.
pub(crate) async fn enqueue_ids<E: QueueEngine + QueueAdmin + alkstore_core::AllOps>(
    e: &E,
    jobs: Vec<NewJob>,
) -> Vec<i64> {
    e.job_enqueue(jobs)
        .await
        .expect("enqueue")
        .iter()
        .map(|o| o.id())
        .collect()
}

pub(crate) async fn claim<E: QueueEngine + QueueAdmin + alkstore_core::AllOps>(
    e: &E,
    queue: &str,
    worker: &str,
    n: u32,
) -> Vec<Job> {
    e.job_claim(JobClaimParams::new(queue, worker, n))
        .await
        .expect("claim")
}

pub(crate) fn kind<T: std::fmt::Debug>(r: Result<T>) -> ErrorKind {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e.kind(),
    }
}

pub(crate) async fn live_count<E: QueueEngine + QueueAdmin + alkstore_core::AllOps>(
    e: &E,
    queue: &str,
) -> u64 {
    let s = e.queue_stats(queue).await.expect("stats");
    s.live()
}

/// Enqueue `j` where `at` says (the enqueue rows run there); its id.
pub(crate) async fn enqueue_at<H: crate::Harness>(h: &H, at: crate::Where, j: NewJob) -> i64 {
    let out = crate::writer(h, at)
        .job_enqueue(vec![j])
        .await
        .expect("enqueue");
    out[0].id()
}
