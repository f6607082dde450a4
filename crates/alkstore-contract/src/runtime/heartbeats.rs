//! Heartbeats: a running job's claim is extended while its handler works.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use alkstore::prelude::*;
use alkstore::{
    queue::{JobClaimParams, QueueOpts},
    JobCtx, Worker,
};
use tokio::sync::Notify;

use super::support::reached;
use crate::RuntimeHarness;

/// A handler that runs past its queue's visibility timeout keeps its claim:
/// another worker cannot claim the job meanwhile, and no claim is lost.
pub async fn heartbeats_keep_long_jobs_claimed<H: RuntimeHarness>(h: &H) {
    let store = h.store();
    let opts = QueueOpts {
        visibility_timeout: Duration::from_secs(2),
        ..QueueOpts::default()
    };
    let q = store.queue_with("long", opts);
    q.enqueue(&0).await.expect("enqueue");
    let done = Arc::new(AtomicUsize::new(0));
    let notify = Arc::new(Notify::new());
    let (d, n) = (done.clone(), notify.clone());
    let engine = store.engine().clone();
    let report = Worker::new(store.clone())
        .queue("long", move |_job: JobCtx<u32>| {
            let (d, n, engine) = (d.clone(), n.clone(), engine.clone());
            async move {
                tokio::time::sleep(Duration::from_millis(3_500)).await;
                let stolen = engine
                    .job_claim(JobClaimParams::new("long", "thief", 1))
                    .await
                    .expect("claim");
                assert!(
                    stolen.is_empty(),
                    "the claim outlived its 2 s visibility timeout"
                );
                d.fetch_add(1, Ordering::SeqCst);
                n.notify_one();
                Ok(())
            }
        })
        .run_until(reached(done.clone(), 1, notify.clone()))
        .await
        .expect("run");
    assert_eq!((report.completed, report.lost_claims), (1, 0), "{report:?}");
}

/// The rows above, for [`contract_suite!`](crate::contract_suite): list each
/// `pub async fn …<H: RuntimeHarness>` here, next to where it is written.
#[doc(hidden)]
#[macro_export]
macro_rules! __runtime_heartbeats {
    ($then:path, $args:tt) => {
        $then! { @rows $args runtime::heartbeats [
            heartbeats_keep_long_jobs_claimed,
        ] }
    };
}
