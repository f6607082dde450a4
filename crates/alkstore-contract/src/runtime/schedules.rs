//! Scheduler runners on the real clock.

use std::time::Duration;

use alkstore::schedule::{fired_job_key, ScheduleSetParams, Scheduler};
use alkstore::{JobListParams, QueueAdmin, ScheduleEngine};

use crate::RuntimeHarness;

/// Three schedulers run side by side for about 3.5 s over an `@every 1s`
/// schedule: its consecutive boundaries each fire once, from the first
/// one registered, with nothing skipped and nothing doubled.
pub async fn racing_schedulers_fire_each_boundary_once<H: RuntimeHarness>(h: &H) {
    let store = h.store();
    let set = store
        .engine()
        .schedule_set(ScheduleSetParams::new("tick", "@every 1s", "ticks"))
        .await
        .expect("set");
    let first = set.next_fire_at_ms.expect("next");
    let (stop_tx, _) = tokio::sync::broadcast::channel::<()>(1);
    let mut runners = Vec::new();
    for _ in 0..3 {
        let mut stop = stop_tx.subscribe();
        let scheduler = Scheduler::new(store.clone());
        runners.push(tokio::spawn(async move {
            scheduler
                .run_until(async move {
                    let _ = stop.recv().await;
                })
                .await
                .expect("scheduler")
        }));
    }
    tokio::time::sleep(Duration::from_millis(3_500)).await;
    let _ = stop_tx.send(());
    let mut fired = 0;
    for r in runners {
        fired += r.await.expect("runner").fired;
    }
    let jobs = store
        .engine()
        .job_list(JobListParams {
            queue: Some("ticks".into()),
            state: None,
            after_id: None,
            limit: 100,
        })
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
        (2..=4).contains(&jobs.len()),
        "{} jobs in ~3.5 s",
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
