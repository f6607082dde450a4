//! Scheduler runners on the real clock.

use alkstore_core::Writes as _;
use std::time::Duration;

use alkstore::schedule::{fired_job_key, ScheduleSetParams, Scheduler};
use alkstore::{prelude::QueueAdmin, queue::JobListParams};

use crate::RuntimeHarness;

/// Three schedulers run side by side over an `@every 1s` schedule until
/// three boundaries have fired: they are consecutive, from the first one
/// registered, each fired once, with nothing skipped and nothing doubled.
pub async fn racing_schedulers_fire_each_boundary_once<H: RuntimeHarness>(h: &H) {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    let store = h.store();
    let set = store
        .engine()
        .schedule_set(ScheduleSetParams::new("tick", "@every 1s", "ticks"))
        .await
        .expect("set");
    let first = set.next_fire_at_ms.expect("next");
    let (stop_tx, _) = tokio::sync::broadcast::channel::<()>(1);
    let fires = Arc::new(AtomicU64::new(0));
    let third = Arc::new(tokio::sync::Notify::new());
    let mut runners = Vec::new();
    for _ in 0..3 {
        let mut stop = stop_tx.subscribe();
        let (fires, third) = (fires.clone(), third.clone());
        let scheduler = Scheduler::new(store.clone());
        runners.push(tokio::spawn(async move {
            scheduler
                .run_until_with(
                    async move {
                        let _ = stop.recv().await;
                    },
                    move |_| {
                        if fires.fetch_add(1, Ordering::SeqCst) + 1 >= 3 {
                            third.notify_one();
                        }
                    },
                )
                .await
                .expect("scheduler")
        }));
    }
    // Three boundaries are at most 3 s away; a stalled machine gets 30.
    tokio::time::timeout(Duration::from_secs(30), third.notified())
        .await
        .expect("three boundaries fired");
    let _ = stop_tx.send(());
    let mut fired = 0;
    for r in runners {
        fired += r.await.expect("runner").fired;
    }
    let jobs = store
        .engine()
        .job_list(JobListParams::new(100).queue("ticks"))
        .await
        .expect("jobs");
    assert_eq!(fired, jobs.len() as u64);
    let mut keys: Vec<String> = jobs.iter().filter_map(|j| j.unique_key.clone()).collect();
    keys.sort();
    let want: Vec<String> = (first..)
        .step_by(1_000)
        .take(jobs.len())
        .map(|b| fired_job_key("tick", b))
        .collect();
    assert_eq!(
        keys, want,
        "consecutive boundaries from the first, once each"
    );
    assert!(
        (3..=4).contains(&jobs.len()),
        "{} jobs: three, and at most one more fired before the stop",
        jobs.len()
    );
}

/// The rows above, for [`contract_suite!`](crate::contract_suite): list each
/// `pub async fn …<H: RuntimeHarness>` here, next to where it is written.
#[doc(hidden)]
#[macro_export]
macro_rules! __runtime_schedules {
    ($then:path, $args:tt) => {
        $then! { @rows $args runtime::schedules [
            racing_schedulers_fire_each_boundary_once,
        ] }
    };
}
