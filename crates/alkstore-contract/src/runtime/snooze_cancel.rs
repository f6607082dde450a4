//! Snooze and cancel: a handler putting its job off, and a running job
//! cancelled from outside.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use alkstore::{JobCtx, JobError, Worker};
use tokio::sync::Notify;

use super::support::{job, reached, until_dead};
use crate::RuntimeHarness;

/// A handler can snooze its job: it runs again later on the same attempt.
pub async fn snoozed_jobs_run_again_without_an_attempt<H: RuntimeHarness>(h: &H) {
    let store = h.store();
    let q = store.queue("snoozy");
    q.enqueue(&0).await.expect("enqueue");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let notify = Arc::new(Notify::new());
    let (s, n) = (seen.clone(), notify.clone());
    let report = Worker::new(store.clone())
        .queue("snoozy", move |job: JobCtx<u32>| {
            let (s, n) = (s.clone(), n.clone());
            async move {
                let runs = {
                    let mut s = s.lock().expect("lock");
                    s.push(job.attempt());
                    s.len()
                };
                n.notify_one();
                if runs == 1 {
                    return Err(JobError::snooze(Duration::ZERO));
                }
                Ok(())
            }
        })
        .run_until(async {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
            while seen.lock().expect("lock").len() < 2 {
                assert!(tokio::time::Instant::now() < deadline, "never ran again");
                let _ = tokio::time::timeout(Duration::from_millis(50), notify.notified()).await;
            }
        })
        .await
        .expect("run");
    assert_eq!(
        *seen.lock().expect("lock"),
        vec![1, 1],
        "same attempt both times"
    );
    assert_eq!((report.snoozed, report.retried), (1, 0), "{report:?}");
}

/// Cancelling a running job tells its handler; a handler that stops leaves
/// the job dead as `cancelled` (recorded, not a lost claim).
pub async fn cancelled_running_jobs_are_told_and_recorded<H: RuntimeHarness>(h: &H) {
    let q = h.store().queue("cancellable");
    let id = q.enqueue(&0).await.expect("enqueue").id();
    let started = Arc::new(AtomicUsize::new(0));
    let notify = Arc::new(Notify::new());
    let (s, n) = (started.clone(), notify.clone());
    let store = h.store().clone();
    let report = Worker::new(h.store().clone())
        .queue("cancellable", move |job: JobCtx<u32>| {
            let (s, n) = (s.clone(), n.clone());
            async move {
                assert!(!job.is_cancelled());
                s.fetch_add(1, Ordering::SeqCst);
                n.notify_one();
                tokio::select! {
                    _ = job.cancelled() => {
                        assert!(job.is_cancelled());
                        Err(JobError::retry("stopped on request"))
                    }
                    _ = tokio::time::sleep(Duration::from_secs(60)) => Ok(()),
                }
            }
        })
        .run_until(async move {
            reached(started, 1, notify).await;
            assert_eq!(
                store.queue("cancellable").cancel(id).await.expect("cancel"),
                alkstore::queue::CancelOutcome::Requested
            );
            until_dead(&store, "cancellable", 1, "never stopped").await;
        })
        .await
        .expect("run");
    assert_eq!(
        (report.cancelled, report.dead, report.retried),
        (1, 1, 0),
        "{report:?}"
    );
    let info = job(h.store(), id).await;
    assert_eq!(info.dead_reason.as_deref(), Some("cancelled"));
    assert_eq!(info.last_error.as_deref(), Some("stopped on request"));
}

/// A handler that throttles through a store-wide rate limit (2 per second)
/// runs 6 jobs over at least three windows, each once and on its first
/// attempt (throttled jobs are snoozed, not retried).
pub async fn throttled_handlers_wait_for_the_next_window<H: RuntimeHarness>(h: &H) {
    let store = h.store();
    let q = store.queue("throttled");
    q.enqueue_batch(0..6u32).await.expect("enqueue");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let notify = Arc::new(Notify::new());
    let done = Arc::new(AtomicUsize::new(0));
    let (s, n, d) = (seen.clone(), notify.clone(), done.clone());
    let started = tokio::time::Instant::now();
    Worker::new(store.clone())
        .queue("throttled", move |job: JobCtx<u32>| {
            let (s, n, d) = (s.clone(), n.clone(), d.clone());
            async move {
                job.throttle("throttled-rl", 2, Duration::from_secs(1))
                    .await?;
                s.lock()
                    .expect("lock")
                    .push((*job.payload(), job.attempt()));
                d.fetch_add(1, Ordering::SeqCst);
                n.notify_one();
                Ok(())
            }
        })
        .run_until(reached(done.clone(), 6, notify.clone()))
        .await
        .expect("run");
    let mut seen = seen.lock().expect("lock").clone();
    seen.sort_unstable();
    assert_eq!(seen, (0..6).map(|i| (i, 1)).collect::<Vec<_>>());
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "6 jobs at 2 per second took {:?}",
        started.elapsed()
    );
}

/// The rows above, for [`contract_suite!`](crate::contract_suite): list each
/// `pub async fn …<H: RuntimeHarness>` here, next to where it is written.
#[doc(hidden)]
#[macro_export]
macro_rules! __runtime_snooze_cancel {
    ($then:path, $args:tt) => {
        $then! { @rows $args runtime::snooze_cancel [
            snoozed_jobs_run_again_without_an_attempt,
            cancelled_running_jobs_are_told_and_recorded,
            throttled_handlers_wait_for_the_next_window,
        ] }
    };
}
