//! Firing: exactly one job per boundary however many schedulers race,
//! each job carrying its boundary; missed boundaries follow the catch-up
//! cap.

use alkstore_core::Writes as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use alkstore_core::schedule::{fired_job_key, ScheduleFireParams, ScheduleSetParams};
use alkstore_core::{Clock, JobListParams, QueueAdmin, ScheduleEngine};

use crate::Harness;

async fn jobs<H: Harness>(h: &H, queue: &str) -> Vec<alkstore_core::JobInfo> {
    h.engine()
        .job_list(JobListParams::new(1000).queue(queue))
        .await
        .expect("list jobs")
}

/// 4 schedulers call `schedule_fire_due` in a loop while the store's clock
/// moves through 10 boundaries of an `@every 1s` schedule: exactly one job
/// per boundary, each with its boundary as unique key and `run_at`, and
/// the schedule's payload and priority.
pub async fn each_boundary_fires_once_under_4_racing_schedulers<H: Harness>(h: &H) {
    let e = h.engine();
    let start = h.clock().now_ms();
    let set = e
        .schedule_set(
            ScheduleSetParams::new("beat", "@every 1s", "beats")
                .payload(b"beat".to_vec())
                .priority(3),
        )
        .await
        .expect("set");
    let first = set.next_fire_at_ms.expect("next");
    assert_eq!(first, start.div_euclid(1_000) * 1_000 + 1_000);
    let stop = Arc::new(AtomicBool::new(false));
    let mut schedulers = Vec::new();
    for _ in 0..4 {
        let (e, stop) = (e.clone(), stop.clone());
        schedulers.push(tokio::spawn(async move {
            let mut fired = 0;
            while !stop.load(Ordering::Relaxed) {
                let r = e
                    .schedule_fire_due(ScheduleFireParams::default())
                    .await
                    .expect("fire");
                fired += r.fired.len();
                tokio::task::yield_now().await;
            }
            fired
        }));
    }
    let mut expected = Vec::new();
    for i in 0..10 {
        let boundary = first + i * 1_000;
        h.clock().set_ms(boundary);
        expected.push(boundary);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let s = e.schedule_list().await.expect("list");
            if s[0].last_boundary_ms == Some(boundary) {
                assert_eq!(s[0].next_fire_at_ms, Some(boundary + 1_000));
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "boundary {boundary} never fired"
            );
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let mut total = 0;
    for s in schedulers {
        total += s.await.expect("scheduler");
    }
    assert_eq!(total, 10, "fire calls reported one job per boundary");
    let jobs = jobs(h, "beats").await;
    let mut got: Vec<(Option<String>, i64)> = jobs
        .iter()
        .map(|j| (j.unique_key.clone(), j.run_at))
        .collect();
    got.sort();
    assert!(
        jobs.iter()
            .all(|j| j.meta.get("schedule") == Some(&serde_json::json!("beat"))),
        "each fired job names its schedule in its metadata"
    );
    let mut want: Vec<(Option<String>, i64)> = expected
        .iter()
        .map(|b| (Some(fired_job_key("beat", *b)), b / 1_000))
        .collect();
    want.sort();
    assert_eq!(got, want);
    assert!(jobs.iter().all(|j| j.payload == b"beat" && j.priority == 3));
}

/// After an outage, a schedule fires its oldest missed boundaries up to its
/// catch-up cap (default 1) and skips the rest; its next boundary is the
/// first after now.
pub async fn missed_boundaries_follow_the_catch_up_cap<H: Harness>(h: &H) {
    let e = h.engine();
    let min = 60_000;
    let set = e
        .schedule_set(ScheduleSetParams::new("m", "@every 1m", "late"))
        .await
        .expect("set");
    let first = set.next_fire_at_ms.expect("next");
    h.clock().set_ms(first + 9 * min + 30_000);
    let r = e
        .schedule_fire_due(ScheduleFireParams::default())
        .await
        .expect("fire");
    let boundaries: Vec<i64> = r.fired.iter().map(|f| f.boundary_ms).collect();
    assert_eq!(boundaries, [first], "the oldest, once");
    assert_eq!(r.skipped, 9);
    assert_eq!(r.next_due_ms, Some(first + 10 * min));
    assert_eq!(
        r.now_ms,
        h.clock().now_ms(),
        "the store's time, for the wait"
    );
    e.schedule_set(ScheduleSetParams::new("m", "@every 1m", "late").max_catch_up(3))
        .await
        .expect("raise the cap");
    h.clock().set_ms(first + 19 * min + 1);
    let r = e
        .schedule_fire_due(ScheduleFireParams::default())
        .await
        .expect("fire");
    let boundaries: Vec<i64> = r.fired.iter().map(|f| f.boundary_ms).collect();
    assert_eq!(
        boundaries,
        [first + 10 * min, first + 11 * min, first + 12 * min]
    );
    assert_eq!(r.skipped, 7);
    let again = e
        .schedule_fire_due(ScheduleFireParams::default())
        .await
        .expect("fire");
    assert!(
        again.fired.is_empty(),
        "nothing due until the next boundary"
    );
    assert_eq!(again.next_due_ms, Some(first + 20 * min));
    assert_eq!(jobs(h, "late").await.len(), 4);
}

/// Each fire is kept in its schedule's history with its job, newest
/// first, the last `MAX_FIRES_KEPT` of them; run now enqueues the job at
/// once (paused or not) without moving the boundaries, and is kept as a
/// manual fire; removing the schedule removes its history.
pub async fn fires_are_kept_and_run_now_enqueues_at_once<H: Harness>(h: &H) {
    use alkstore_core::schedule::{ScheduleFiresParams, MAX_FIRES_KEPT};
    use alkstore_core::ErrorKind;
    let e = h.engine();
    let set = e
        .schedule_set(ScheduleSetParams::new("tick", "@every 1s", "ticks").payload(b"t".to_vec()))
        .await
        .expect("set");
    let first = set.next_fire_at_ms.expect("next");
    let fires = |limit| e.schedule_fires(ScheduleFiresParams::new("tick", limit));
    assert!(fires(10).await.expect("fires").is_empty());
    let total = i64::from(MAX_FIRES_KEPT) + 5;
    let mut fired = Vec::new();
    for i in 0..total {
        h.clock().set_ms(first + i * 1_000);
        let r = e
            .schedule_fire_due(ScheduleFireParams::default())
            .await
            .expect("fire");
        fired.extend(r.fired);
    }
    assert_eq!(i64::try_from(fired.len()).ok(), Some(total));
    let kept = fires(MAX_FIRES_KEPT).await.expect("fires");
    assert_eq!(
        kept.len(),
        MAX_FIRES_KEPT as usize,
        "only the newest are kept"
    );
    assert_eq!(
        kept[0].boundary_ms,
        first + (total - 1) * 1_000,
        "newest first"
    );
    assert_eq!(kept[0].job_id, fired.last().expect("last").job_id);
    assert_eq!((kept[0].queue.as_str(), kept[0].manual), ("ticks", false));
    assert_eq!(kept[0].fired_at_ms, h.clock().now_ms());
    assert_eq!(fires(3).await.expect("fires").len(), 3);

    // Run now: a job due now, the boundaries unmoved, kept as manual; a
    // paused schedule runs too.
    e.schedule_pause("tick").await.expect("pause");
    let before = e.schedule_list().await.expect("list")[0].next_fire_at_ms;
    h.clock().advance(Duration::from_millis(250));
    let now = h.clock().now_ms();
    let manual = e
        .schedule_run_now("tick")
        .await
        .expect("run")
        .expect("fired");
    assert_eq!((manual.boundary_ms, manual.queue.as_str()), (now, "ticks"));
    let job = e.job_get(manual.job_id).await.expect("get").expect("job");
    assert_eq!(job.payload, b"t".to_vec());
    assert_eq!(job.unique_key, None, "each run is a job of its own");
    assert_eq!(
        (job.meta.get("schedule"), job.meta.get("manual")),
        (
            Some(&serde_json::json!("tick")),
            Some(&serde_json::json!(true))
        )
    );
    let again = e
        .schedule_run_now("tick")
        .await
        .expect("run")
        .expect("fired");
    assert_ne!(
        again.job_id, manual.job_id,
        "two runs in one millisecond, two jobs"
    );
    assert!(job.run_at <= h.clock().now());
    assert_eq!(
        e.schedule_list().await.expect("list")[0].next_fire_at_ms,
        before
    );
    let newest = &fires(1).await.expect("fires")[0];
    assert_eq!((newest.job_id, newest.manual), (again.job_id, true));
    assert_eq!(
        fires(MAX_FIRES_KEPT).await.expect("fires").len(),
        MAX_FIRES_KEPT as usize
    );

    assert!(e.schedule_run_now("nothing").await.expect("run").is_none());
    for bad in [0, MAX_FIRES_KEPT + 1] {
        let err = fires(bad).await.expect_err("refused");
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
    }
    let err = e.schedule_run_now("").await.expect_err("refused");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(e.schedule_remove("tick").await.expect("remove"));
    assert!(
        fires(10).await.expect("fires").is_empty(),
        "history removed"
    );
}

/// The rows above, for [`contract_suite!`](crate::contract_suite).
#[doc(hidden)]
#[macro_export]
macro_rules! __schedules_firing {
    ($then:path, $args:tt) => {
        $then! { @rows $args schedules::firing [
            each_boundary_fires_once_under_4_racing_schedulers,
            missed_boundaries_follow_the_catch_up_cap,
            fires_are_kept_and_run_now_enqueues_at_once,
        ] }
    };
}
