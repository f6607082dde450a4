//! Heartbeats: a running job's claim is extended while its handler works.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use alkstore::prelude::*;
use alkstore::{
    queue::{JobClaimParams, QueueOpts},
    AnyEngine, JobCtx, Worker,
};
use tokio::sync::Notify;

use super::support::reached;
use crate::RuntimeHarness;

/// A handler that runs past its queue's visibility timeout keeps its claim:
/// heartbeats move the claim's expiry on, and once the first claim's
/// expiry has passed another worker still cannot claim the job; no claim
/// is lost.
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
        .queue("long", move |job: JobCtx<u32>| {
            let (d, n, engine) = (d.clone(), n.clone(), engine.clone());
            async move {
                let expiry = |engine: AnyEngine, id: i64| async move {
                    let info = engine.job_get(id).await.expect("get").expect("live");
                    info.claim_expires_at.expect("claimed")
                };
                let first = expiry(engine.clone(), job.id()).await;
                // Wait (polling, not a fixed sleep) until the first claim's
                // expiry second is over by this host's clock, which both
                // engines' clocks follow here.
                let deadline = std::time::Instant::now() + Duration::from_secs(10);
                while unix_now() <= first {
                    assert!(std::time::Instant::now() < deadline, "time stood still");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                let now = expiry(engine.clone(), job.id()).await;
                assert!(
                    now > first,
                    "no heartbeat moved the claim on ({first} -> {now})"
                );
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

/// This host's wall clock, in whole unix seconds.
fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
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
