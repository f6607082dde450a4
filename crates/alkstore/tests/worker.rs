//! The worker runtime on both engines.

use alkstore::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use alkstore::{
    ClaimParams, EnqueueOpts, JobCtx, JobError, JobState, QueueEngine, QueueOpts, Store, Worker,
    WorkerOpts,
};
use tokio::sync::Notify;

/// A fresh store of each engine; the guard drops PostgreSQL schemas.
struct Fixture {
    store: Store,
    _dir: Option<tempfile::TempDir>,
    pg: Option<(String, String)>,
}

impl Fixture {
    async fn sqlite() -> Fixture {
        let dir = tempfile::tempdir().expect("tmp");
        let url = format!("sqlite://{}", dir.path().join("w.db").display());
        Fixture {
            store: Store::open(&url).await.expect("open"),
            _dir: Some(dir),
            pg: None,
        }
    }

    async fn postgres() -> Fixture {
        use alkstore_postgres::testing;
        let url = testing::ensure_database(&testing::database_url(), "alkstore_test")
            .await
            .expect("postgres");
        let schema = testing::unique_schema("wk");
        let store = Store::open(&format!("{url}?schema={schema}"))
            .await
            .expect("open");
        Fixture {
            store,
            _dir: None,
            pg: Some((url, schema)),
        }
    }

    async fn done(self) {
        if let Some((url, schema)) = self.pg {
            let _ = alkstore_postgres::testing::drop_schema(&url, &schema).await;
        }
    }
}

/// Resolves once `count` reaches `target`.
async fn reached(count: Arc<AtomicUsize>, target: usize, notify: Arc<Notify>) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while count.load(Ordering::SeqCst) < target {
        tokio::select! {
            _ = notify.notified() => {}
            _ = tokio::time::sleep(Duration::from_millis(20)) => {}
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {target} jobs"
        );
    }
}

fn quick() -> QueueOpts {
    QueueOpts {
        backoff_base: Duration::ZERO,
        ..QueueOpts::default()
    }
}

#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, PartialEq)]
struct Email {
    to: String,
}

async fn processes_two_queues_typed_and_raw(f: Fixture) {
    let emails = f.store.queue("emails");
    let raw = f.store.queue("raw");
    emails
        .enqueue_batch((0..200).map(|i| Email {
            to: format!("u{i}@x"),
        }))
        .await
        .expect("enqueue");
    for i in 0..100u8 {
        raw.enqueue_bytes(vec![i, 0xff], EnqueueOpts::default())
            .await
            .expect("enqueue");
    }
    let seen = Arc::new(Mutex::new(Vec::new()));
    let count = Arc::new(AtomicUsize::new(0));
    let notify = Arc::new(Notify::new());
    let (s, c, n) = (seen.clone(), count.clone(), notify.clone());
    let (c2, n2) = (count.clone(), notify.clone());
    let report = Worker::new(f.store.clone())
        .queue("emails", move |job: JobCtx<Email>| {
            let (s, c, n) = (s.clone(), c.clone(), n.clone());
            async move {
                s.lock().expect("lock").push(job.payload().to.clone());
                c.fetch_add(1, Ordering::SeqCst);
                n.notify_one();
                Ok(())
            }
        })
        .queue_raw("raw", move |job: JobCtx<Vec<u8>>| {
            let (c, n) = (c2.clone(), n2.clone());
            async move {
                assert_eq!(job.payload()[1], 0xff);
                c.fetch_add(1, Ordering::SeqCst);
                n.notify_one();
                Ok(())
            }
        })
        .concurrency("emails", 16)
        .run_until(reached(count.clone(), 300, notify.clone()))
        .await
        .expect("run");
    assert_eq!(report.completed, 300, "{report:?}");
    assert_eq!(report.claimed, 300);
    let mut got = seen.lock().expect("lock").clone();
    got.sort();
    got.dedup();
    assert_eq!(got.len(), 200, "every typed job ran once");
    for q in ["emails", "raw"] {
        let s = f.store.queue(q).stats().await.expect("stats");
        assert_eq!((s.ready, s.processing, s.dead), (0, 0, 0), "{q}");
    }
    f.done().await;
}

async fn errors_retry_then_dead_letter(f: Fixture) {
    let q = f.store.queue_with("flaky", quick());
    let id = q.enqueue(&1).await.expect("enqueue").id();
    let attempts = Arc::new(AtomicUsize::new(0));
    let notify = Arc::new(Notify::new());
    let (a, n) = (attempts.clone(), notify.clone());
    let report = Worker::new(f.store.clone())
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
            // Let the third attempt's outcome be recorded.
            tokio::time::sleep(Duration::from_millis(300)).await;
        })
        .await
        .expect("run");
    assert_eq!((report.retried, report.dead), (2, 1), "{report:?}");
    let info = f
        .store
        .engine()
        .job_get(id)
        .await
        .expect("get")
        .expect("dead");
    assert_eq!(info.state, JobState::Dead);
    assert_eq!(info.last_error.as_deref(), Some("downstream unavailable"));
    f.done().await;
}

async fn panics_and_timeouts_are_failed_attempts(f: Fixture) {
    let q = f.store.queue_with("shaky", quick());
    q.enqueue(&"panic").await.expect("enqueue");
    q.enqueue(&"hang").await.expect("enqueue");
    let done = Arc::new(AtomicUsize::new(0));
    let notify = Arc::new(Notify::new());
    let (d, n) = (done.clone(), notify.clone());
    let report = Worker::new(f.store.clone())
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
    f.done().await;
}

async fn permanent_failures_and_bad_payloads_go_dead(f: Fixture) {
    let q = f.store.queue("strict");
    q.enqueue(&"not a number").await.expect("enqueue");
    q.enqueue(&7u32).await.expect("enqueue");
    let report = Worker::new(f.store.clone())
        .queue("strict", |job: JobCtx<u32>| async move {
            Err(JobError::fail(format!("rejecting {}", job.payload())))
        })
        .run_until(async {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
            while f.store.queue("strict").stats().await.expect("stats").dead < 2 {
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "jobs never reached dead"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .expect("run");
    assert_eq!(report.dead, 2, "{report:?}");
    let dead = f
        .store
        .engine()
        .dead_list(alkstore::DeadListParams {
            queue: Some("strict".into()),
            after_id: None,
            limit: 10,
        })
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
    f.done().await;
}

async fn shutdown_hands_unfinished_jobs_back(f: Fixture) {
    let q = f.store.queue("slow");
    let id = q.enqueue(&0).await.expect("enqueue").id();
    let started = Arc::new(AtomicUsize::new(0));
    let notify = Arc::new(Notify::new());
    let (s, n) = (started.clone(), notify.clone());
    let report = Worker::new(f.store.clone())
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
    let info = f
        .store
        .engine()
        .job_get(id)
        .await
        .expect("get")
        .expect("live");
    assert_eq!(
        (info.state, info.attempts),
        (JobState::Pending, 0),
        "claimable at once, attempt not used"
    );
    let again = f
        .store
        .engine()
        .job_claim(ClaimParams::new("slow", "next", 1))
        .await
        .expect("claim");
    assert_eq!(again.len(), 1);
    f.done().await;
}

async fn heartbeats_keep_long_jobs_claimed(f: Fixture) {
    let opts = QueueOpts {
        visibility_timeout: Duration::from_secs(2),
        ..QueueOpts::default()
    };
    let q = f.store.queue_with("long", opts);
    q.enqueue(&0).await.expect("enqueue");
    let done = Arc::new(AtomicUsize::new(0));
    let notify = Arc::new(Notify::new());
    let (d, n) = (done.clone(), notify.clone());
    let engine = f.store.engine().clone();
    let report = Worker::new(f.store.clone())
        .queue("long", move |_job: JobCtx<u32>| {
            let (d, n, engine) = (d.clone(), n.clone(), engine.clone());
            async move {
                tokio::time::sleep(Duration::from_millis(3_500)).await;
                let stolen = engine
                    .job_claim(ClaimParams::new("long", "thief", 1))
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
    f.done().await;
}

async fn concurrency_limit_is_respected(f: Fixture) {
    let q = f.store.queue("limited");
    q.enqueue_batch(0..30u32).await.expect("enqueue");
    let active = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let notify = Arc::new(Notify::new());
    let (a, p, d, n) = (active.clone(), peak.clone(), done.clone(), notify.clone());
    Worker::new(f.store.clone())
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
    f.done().await;
}

/// A handler that panics while building its future (before any `.await`)
/// is a failed attempt like any other panic: retried, then dead-lettered,
/// never left claimed and heartbeated for ever.
async fn panic_before_the_future_is_a_failed_attempt(f: Fixture) {
    let opts = QueueOpts {
        max_attempts: 2,
        ..quick()
    };
    let q = f.store.queue_with("eager", opts);
    let id = q.enqueue(&"x").await.expect("enqueue").id();
    let store = f.store.clone();
    let report = Worker::new(f.store.clone())
        .queue_raw(
            "eager",
            |_job: JobCtx<Vec<u8>>| -> std::future::Ready<alkstore::JobResult> {
                panic!("panics before returning its future")
            },
        )
        .run_until(async move {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
            while store.queue("eager").stats().await.expect("stats").dead < 1 {
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "never dead-lettered"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .expect("run");
    assert_eq!(
        (report.panicked, report.retried, report.dead),
        (2, 1, 1),
        "{report:?}"
    );
    assert_eq!(report.released, 0, "{report:?}");
    let info = f
        .store
        .engine()
        .job_get(id)
        .await
        .expect("get")
        .expect("dead");
    assert_eq!(info.dead_reason.as_deref(), Some("exhausted"));
    assert!(info
        .last_error
        .unwrap_or_default()
        .contains("panics before"));
    f.done().await;
}

/// A handler can snooze its job: it runs again later on the same attempt.
async fn snoozed_jobs_run_again_without_an_attempt(f: Fixture) {
    let q = f.store.queue("snoozy");
    q.enqueue(&0).await.expect("enqueue");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let notify = Arc::new(Notify::new());
    let (s, n) = (seen.clone(), notify.clone());
    let report = Worker::new(f.store.clone())
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
    f.done().await;
}

/// Cancelling a running job tells its handler; a handler that stops leaves
/// the job dead as `cancelled` (recorded, not a lost claim).
async fn cancelled_running_jobs_are_told_and_recorded(f: Fixture) {
    let q = f.store.queue("cancellable");
    let id = q.enqueue(&0).await.expect("enqueue").id();
    let started = Arc::new(AtomicUsize::new(0));
    let notify = Arc::new(Notify::new());
    let (s, n) = (started.clone(), notify.clone());
    let store = f.store.clone();
    let report = Worker::new(f.store.clone())
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
                alkstore::CancelOutcome::Requested
            );
            let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
            while store
                .queue("cancellable")
                .stats()
                .await
                .expect("stats")
                .dead
                < 1
            {
                assert!(tokio::time::Instant::now() < deadline, "never stopped");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .expect("run");
    assert_eq!(
        (report.cancelled, report.dead, report.retried),
        (1, 1, 0),
        "{report:?}"
    );
    let info = f
        .store
        .engine()
        .job_get(id)
        .await
        .expect("get")
        .expect("dead");
    assert_eq!(info.dead_reason.as_deref(), Some("cancelled"));
    assert_eq!(info.last_error.as_deref(), Some("stopped on request"));
    f.done().await;
}

macro_rules! on_both_engines {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() { super::$name(super::Fixture::sqlite().await).await }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() { super::$name(super::Fixture::postgres().await).await }
            )*
        }
    };
}

on_both_engines!(
    processes_two_queues_typed_and_raw,
    errors_retry_then_dead_letter,
    panics_and_timeouts_are_failed_attempts,
    permanent_failures_and_bad_payloads_go_dead,
    shutdown_hands_unfinished_jobs_back,
    heartbeats_keep_long_jobs_claimed,
    concurrency_limit_is_respected,
    panic_before_the_future_is_a_failed_attempt,
    snoozed_jobs_run_again_without_an_attempt,
    cancelled_running_jobs_are_told_and_recorded,
);

/// A setting for a queue that has no handler (a typo, or a setting made
/// before `.queue(…)`) is an error before the worker starts, not ignored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_for_unknown_queues_are_errors() {
    let f = Fixture::sqlite().await;
    let typo = Worker::new(f.store.clone())
        .queue("emails", |_job: JobCtx<u32>| async { Ok(()) })
        .concurrency("emials", 1)
        .run_until(async {})
        .await
        .expect_err("unknown queue");
    assert_eq!(typo.kind(), alkstore::ErrorKind::InvalidInput);
    assert!(typo.to_string().contains("emials"), "{typo}");
    let early = Worker::new(f.store.clone())
        .timeout("emails", Duration::from_secs(1))
        .queue("emails", |_job: JobCtx<u32>| async { Ok(()) })
        .run_until(async {})
        .await
        .expect_err("setting before the queue");
    assert_eq!(early.kind(), alkstore::ErrorKind::InvalidInput);
    let fine = Worker::new(f.store.clone())
        .queue("emails", |_job: JobCtx<u32>| async { Ok(()) })
        .concurrency("emails", 1)
        .timeout("emails", Duration::from_secs(1))
        .run_until(async {})
        .await;
    assert!(fine.is_ok(), "{fine:?}");
    f.done().await;
}

mod maintenance {
    use super::*;

    /// The worker runs the maintenance sweep: an expired job in a queue it
    /// does not even handle ends up dead.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn worker_sweeps_expired_jobs() {
        let f = Fixture::sqlite().await;
        let q = f.store.queue("elsewhere");
        let id = q
            .enqueue_with(
                &1,
                EnqueueOpts::default()
                    .run_at(0)
                    .expires_in(Duration::from_secs(1)),
            )
            .await
            .expect("enqueue")
            .id();
        let store = f.store.clone();
        Worker::new(f.store.clone())
            .queue("busy", |_job: JobCtx<u32>| async { Ok(()) })
            .opts(WorkerOpts {
                sweep_interval: Some(Duration::from_millis(50)),
                ..WorkerOpts::default()
            })
            .run_until(async move {
                let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
                loop {
                    let info = store
                        .engine()
                        .job_get(id)
                        .await
                        .expect("get")
                        .expect("exists");
                    if info.state == JobState::Dead {
                        assert_eq!(info.dead_reason.as_deref(), Some("expired"));
                        break;
                    }
                    assert!(tokio::time::Instant::now() < deadline, "never swept");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            })
            .await
            .expect("run");
        f.done().await;
    }
}
