//! The hand-off: an enqueue call gives its job straight to an idle worker
//! of the same process, inserted already claimed for it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use alkstore::{
    prelude::{Engine, QueueAdmin},
    queue::JobState,
    JobCtx, Worker,
};
use tokio::sync::Notify;

use super::support::{job, reached};
use crate::RuntimeHarness;

/// Resolves once a worker waits for a job of `queue`; fails after 30 s.
async fn until_waiting(store: &alkstore::Store, queue: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while store.engine().wake_hub().takers().waiting(queue) == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no worker came to wait for {queue}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The queue's stats once no job of it is processing (acks on their way
/// have landed); fails after 30 s.
async fn until_none_processing(queue: &alkstore::queue::Queue) -> alkstore::queue::QueueStats {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let stats = queue.stats().await.expect("stats");
        if stats.processing == 0 {
            return stats;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "a job stayed processing: {stats:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Jobs enqueued while the worker idles reach it without a claim (the
/// report counts them as handed off), each runs once and is acked. While the queue is paused an enqueue leaves its job
/// pending, and the worker claims it once the queue resumes.
pub async fn an_idle_worker_takes_jobs_straight_from_enqueue_calls<H: RuntimeHarness>(h: &H) {
    let store = h.store();
    let queue = store.queue("direct");
    let count = Arc::new(AtomicUsize::new(0));
    let notify = Arc::new(Notify::new());
    let (c, n) = (count.clone(), notify.clone());
    let producer = {
        let (store, queue, count, notify) =
            (store.clone(), queue.clone(), count.clone(), notify.clone());
        async move {
            for i in 0..3usize {
                until_waiting(&store, "direct").await;
                queue.enqueue(&i).await.expect("enqueue");
                reached(count.clone(), i + 1, notify.clone()).await;
            }
            until_waiting(&store, "direct").await;
            assert!(store.engine().queue_pause("direct").await.expect("pause"));
            let held = queue.enqueue(&3usize).await.expect("enqueue");
            // The worker woke (its offer was taken) and found nothing to
            // claim: the job waits for the queue to resume.
            until_waiting(&store, "direct").await;
            assert_eq!(
                job(&store, held.id()).await.state,
                JobState::Pending,
                "paused: the job is not claimed"
            );
            // The third job ran, but its ack may still be on its way (the
            // completer batches acks): wait for it, not for time.
            let stats = until_none_processing(&queue).await;
            assert_eq!((stats.ready, stats.processing), (1, 0), "paused");
            assert_eq!(count.load(Ordering::SeqCst), 3);
            assert_eq!(job(&store, held.id()).await.state, JobState::Pending);
            assert!(store.engine().queue_resume("direct").await.expect("resume"));
            reached(count.clone(), 4, notify.clone()).await;
            held.id()
        }
    };
    let (report, held) = {
        let worker = Worker::new(store.clone())
            .queue("direct", move |_job: JobCtx<usize>| {
                let (c, n) = (c.clone(), n.clone());
                async move {
                    c.fetch_add(1, Ordering::SeqCst);
                    n.notify_one();
                    Ok(())
                }
            })
            .concurrency("direct", 4);
        let (tx, rx) = tokio::sync::oneshot::channel();
        let report = worker
            .run_until(async move {
                let _ = tx.send(producer.await);
            })
            .await
            .expect("run");
        (report, rx.await.expect("the producer finished"))
    };
    // Each job reached the worker once, by hand-off or by claim. An
    // offer withdrawn in the instant between `until_waiting` and the
    // enqueue (a hint of the previous job's ack woke the loop) sends that
    // job the usual way: most go straight, and the paused one is claimed.
    assert_eq!(report.claimed, 4, "{report:?}");
    assert_eq!(report.handed_off + report.claims, 4, "{report:?}");
    assert!(report.handed_off >= 1 && report.claims >= 1, "{report:?}");
    assert_eq!(report.completed, 4, "{report:?}");
    let stats = queue.stats().await.expect("stats");
    assert_eq!((stats.ready, stats.processing, stats.dead), (0, 0, 0));
    assert!(store
        .engine()
        .job_get(held)
        .await
        .expect("get")
        .is_none_or(|j| j.state == alkstore::queue::JobState::Completed));
}

/// The rows above, for [`contract_suite!`](crate::contract_suite).
#[doc(hidden)]
#[macro_export]
macro_rules! __runtime_handoff {
    ($then:path, $args:tt) => {
        $then! { @rows $args runtime::handoff [
            an_idle_worker_takes_jobs_straight_from_enqueue_calls,
        ] }
    };
}
