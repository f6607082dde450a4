//! Concurrency: how many handlers of a queue run at once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use alkstore::{JobCtx, Worker};
use tokio::sync::Notify;

use super::support::reached;
use crate::RuntimeHarness;

/// A queue's concurrency limit is reached and never exceeded.
pub async fn concurrency_limit_is_respected<H: RuntimeHarness>(h: &H) {
    let store = h.store();
    let q = store.queue("limited");
    q.enqueue_batch(0..30u32).await.expect("enqueue");
    let active = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let notify = Arc::new(Notify::new());
    let (a, p, d, n) = (active.clone(), peak.clone(), done.clone(), notify.clone());
    Worker::new(store.clone())
        .queue("limited", move |_job: JobCtx<u32>| {
            let (a, p, d, n) = (a.clone(), p.clone(), d.clone(), n.clone());
            async move {
                let now = a.fetch_add(1, Ordering::SeqCst) + 1;
                p.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(30)).await;
                a.fetch_sub(1, Ordering::SeqCst);
                d.fetch_add(1, Ordering::SeqCst);
                n.notify_one();
                Ok(())
            }
        })
        .concurrency("limited", 3)
        .run_until(reached(done.clone(), 30, notify.clone()))
        .await
        .expect("run");
    assert_eq!(peak.load(Ordering::SeqCst), 3);
}

/// A running worker takes nothing from a queue paused while it runs (jobs
/// enqueued after the pause wait), and takes them once it is resumed.
pub async fn a_paused_queue_waits_until_resumed<H: RuntimeHarness>(h: &H) {
    use alkstore::prelude::QueueAdmin;
    let store = h.store();
    let done = Arc::new(AtomicUsize::new(0));
    let notify = Arc::new(Notify::new());
    let (d, n) = (done.clone(), notify.clone());
    let q = store.queue("pausable");
    q.enqueue(&0u32).await.expect("enqueue");
    // Polls every 100 ms, so a short wait spans several polls.
    let opts = alkstore::WorkerOpts {
        poll_interval: Duration::from_millis(100),
        ..alkstore::WorkerOpts::default()
    };
    let run = Worker::new(store.clone())
        .opts(opts)
        .queue("pausable", move |_job: JobCtx<u32>| {
            let (d, n) = (d.clone(), n.clone());
            async move {
                d.fetch_add(1, Ordering::SeqCst);
                n.notify_one();
                Ok(())
            }
        })
        .run_until(reached(done.clone(), 4, notify.clone()));
    let steer = async {
        reached(done.clone(), 1, notify.clone()).await;
        assert!(store.engine().queue_pause("pausable").await.expect("pause"));
        q.enqueue_batch(1..4u32).await.expect("enqueue");
        // Five polls' worth: a hint and the polls all find nothing.
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(
            done.load(Ordering::SeqCst),
            1,
            "nothing claimed while paused"
        );
        assert_eq!(
            store
                .engine()
                .queue_stats("pausable")
                .await
                .expect("stats")
                .ready,
            3
        );
        assert!(store
            .engine()
            .queue_resume("pausable")
            .await
            .expect("resume"));
    };
    let (ran, ()) = tokio::join!(tokio::time::timeout(Duration::from_secs(30), run), steer);
    ran.expect("the resumed queue's jobs ran").expect("run");
    assert_eq!(done.load(Ordering::SeqCst), 4);
}

/// The rows above, for [`contract_suite!`](crate::contract_suite): list each
/// `pub async fn …<H: RuntimeHarness>` here, next to where it is written.
#[doc(hidden)]
#[macro_export]
macro_rules! __runtime_concurrency {
    ($then:path, $args:tt) => {
        $then! { @rows $args runtime::concurrency [
            concurrency_limit_is_respected,
            a_paused_queue_waits_until_resumed,
        ] }
    };
}
