//! Shutdown: what a stopping worker does with the jobs it holds.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use alkstore::prelude::*;
use alkstore::{
    queue::{JobClaimParams, JobState},
    JobCtx, Worker, WorkerOpts,
};
use tokio::sync::Notify;

use super::support::job;
use super::support::reached;
use crate::RuntimeHarness;

/// A handler still running when the shutdown timeout ends has its job
/// released: claimable again at once, its attempt not used.
pub async fn shutdown_hands_unfinished_jobs_back<H: RuntimeHarness>(h: &H) {
    let store = h.store();
    let q = store.queue("slow");
    let id = q.enqueue(&0).await.expect("enqueue").id();
    let started = Arc::new(AtomicUsize::new(0));
    let notify = Arc::new(Notify::new());
    let (s, n) = (started.clone(), notify.clone());
    let report = Worker::new(store.clone())
        .queue("slow", move |_job: JobCtx<u32>| {
            let (s, n) = (s.clone(), n.clone());
            async move {
                s.fetch_add(1, Ordering::SeqCst);
                n.notify_one();
                tokio::time::sleep(Duration::from_secs(600)).await;
                Ok(())
            }
        })
        .opts(WorkerOpts {
            shutdown_timeout: Duration::from_millis(200),
            ..WorkerOpts::default()
        })
        .run_until(reached(started.clone(), 1, notify.clone()))
        .await
        .expect("run");
    assert_eq!(report.released, 1, "{report:?}");
    let info = job(store, id).await;
    assert_eq!(
        (info.state, info.attempts),
        (JobState::Pending, 0),
        "claimable at once, attempt not used"
    );
    let again = store
        .engine()
        .job_claim(JobClaimParams::new("slow", "next", 1))
        .await
        .expect("claim");
    assert_eq!(again.len(), 1);
}

/// The rows above, for [`contract_suite!`](crate::contract_suite): list each
/// `pub async fn …<H: RuntimeHarness>` here, next to where it is written.
#[doc(hidden)]
#[macro_export]
macro_rules! __runtime_shutdown {
    ($then:path, $args:tt) => {
        $then! { @rows $args runtime::shutdown [
            shutdown_hands_unfinished_jobs_back,
        ] }
    };
}
