//! Failures: handler errors, panics, timeouts and undecodable payloads are
//! failed attempts, retried and then dead-lettered.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use alkstore::prelude::*;
use alkstore::{
    queue::{JobState, QueueOpts},
    JobCtx, JobError, Worker,
};
use tokio::sync::Notify;

use super::support::{job, quick, reached, until_dead};
use crate::RuntimeHarness;

/// A handler that keeps asking for a retry is retried until its attempts run
/// out, then the job is dead with the handler's error.
pub async fn errors_retry_then_dead_letter<H: RuntimeHarness>(h: &H) {
    let store = h.store();
    let q = store.queue_with("flaky", quick());
    let id = q.enqueue(&1).await.expect("enqueue").id();
    let attempts = Arc::new(AtomicUsize::new(0));
    let notify = Arc::new(Notify::new());
    let (a, n) = (attempts.clone(), notify.clone());
    let report = Worker::new(store.clone())
        .queue("flaky", move |_job: JobCtx<u32>| {
            let (a, n) = (a.clone(), n.clone());
            async move {
                a.fetch_add(1, Ordering::SeqCst);
                n.notify_one();
                Err(JobError::retry("downstream unavailable"))
            }
        })
        .run_until(async {
            reached(attempts.clone(), 3, notify.clone()).await;
            // The third attempt's outcome is recorded once the job is dead.
            until_dead(
                store,
                "flaky",
                1,
                "the third failure never dead-lettered the job",
            )
            .await;
        })
        .await
        .expect("run");
    assert_eq!((report.retried, report.dead), (2, 1), "{report:?}");
    let info = job(store, id).await;
    assert_eq!(info.state, JobState::Dead);
    assert_eq!(info.last_error.as_deref(), Some("downstream unavailable"));
}

/// A handler that panics, or outlives its queue's timeout, has failed that
/// attempt: the worker survives, retries the job, and the retry succeeds.
pub async fn panics_and_timeouts_are_failed_attempts<H: RuntimeHarness>(h: &H) {
    let store = h.store();
    let q = store.queue_with("shaky", quick());
    q.enqueue(&"panic").await.expect("enqueue");
    q.enqueue(&"hang").await.expect("enqueue");
    let done = Arc::new(AtomicUsize::new(0));
    let notify = Arc::new(Notify::new());
    let (d, n) = (done.clone(), notify.clone());
    let report = Worker::new(store.clone())
        .queue("shaky", move |job: JobCtx<String>| {
            let (d, n) = (d.clone(), n.clone());
            async move {
                if job.attempt() == 1 {
                    if job.payload() == "panic" {
                        panic!("boom on first attempt");
                    }
                    tokio::time::sleep(Duration::from_secs(30)).await;
                }
                d.fetch_add(1, Ordering::SeqCst);
                n.notify_one();
                Ok(())
            }
        })
        .timeout("shaky", Duration::from_millis(200))
        .run_until(reached(done.clone(), 2, notify.clone()))
        .await
        .expect("the worker survives a panicking handler");
    assert_eq!(report.panicked, 1, "{report:?}");
    assert_eq!(report.timed_out, 1, "{report:?}");
    assert_eq!(report.retried, 2, "{report:?}");
    assert_eq!(report.completed, 2, "{report:?}");
}

/// A permanent failure, and a payload that does not decode into the
/// handler's type, go dead at once with their reasons.
pub async fn permanent_failures_and_bad_payloads_go_dead<H: RuntimeHarness>(h: &H) {
    let store = h.store();
    let q = store.queue("strict");
    q.enqueue(&"not a number").await.expect("enqueue");
    q.enqueue(&7u32).await.expect("enqueue");
    let report = Worker::new(store.clone())
        .queue("strict", |job: JobCtx<u32>| async move {
            Err(JobError::fail(format!("rejecting {}", job.payload())))
        })
        .run_until(until_dead(store, "strict", 2, "jobs never reached dead"))
        .await
        .expect("run");
    assert_eq!(report.dead, 2, "{report:?}");
    let dead = store
        .engine()
        .dead_list(alkstore::queue::DeadListParams::new(10).queue("strict"))
        .await
        .expect("list");
    let errors: Vec<_> = dead
        .iter()
        .map(|d| d.last_error.clone().unwrap_or_default())
        .collect();
    assert!(
        errors[0].starts_with("payload does not decode"),
        "{errors:?}"
    );
    assert_eq!(errors[1], "rejecting 7");
}

/// A handler that panics while building its future (before any `.await`)
/// is a failed attempt like any other panic: retried, then dead-lettered,
/// never left claimed and heartbeated for ever.
pub async fn panic_before_the_future_is_a_failed_attempt<H: RuntimeHarness>(h: &H) {
    let opts = QueueOpts {
        max_attempts: 2,
        ..quick()
    };
    let q = h.store().queue_with("eager", opts);
    let id = q.enqueue(&"x").await.expect("enqueue").id();
    let store = h.store().clone();
    let report = Worker::new(h.store().clone())
        .queue_raw(
            "eager",
            |_job: JobCtx<Vec<u8>>| -> std::future::Ready<alkstore::JobResult> {
                panic!("panics before returning its future")
            },
        )
        .run_until(until_dead(&store, "eager", 1, "never dead-lettered"))
        .await
        .expect("run");
    assert_eq!(
        (report.panicked, report.retried, report.dead),
        (2, 1, 1),
        "{report:?}"
    );
    assert_eq!(report.released, 0, "{report:?}");
    let info = job(h.store(), id).await;
    assert_eq!(info.dead_reason.as_deref(), Some("exhausted"));
    assert!(info
        .last_error
        .unwrap_or_default()
        .contains("panics before"));
}

/// The rows above, for [`contract_suite!`](crate::contract_suite): list each
/// `pub async fn …<H: RuntimeHarness>` here, next to where it is written.
#[doc(hidden)]
#[macro_export]
macro_rules! __runtime_failures {
    ($then:path, $args:tt) => {
        $then! { @rows $args runtime::failures [
            errors_retry_then_dead_letter,
            panics_and_timeouts_are_failed_attempts,
            permanent_failures_and_bad_payloads_go_dead,
            panic_before_the_future_is_a_failed_attempt,
        ] }
    };
}
