//! The worker reports through the `metrics` facade (its own test binary,
//! since a global recorder can be installed once per process).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use alkstore::{prelude::QueueEngine, queue::QueueOpts, JobCtx, JobError, Store, Worker};
use metrics_util::debugging::{DebugValue, DebuggingRecorder};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_emits_job_metrics() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder
        .install()
        .expect("the only recorder in this test binary");

    let dir = tempfile::tempdir().expect("tmp");
    let store = Store::open(&format!("sqlite://{}", dir.path().join("m.db").display()))
        .await
        .expect("open");
    let q = store.queue_with(
        "metered",
        QueueOpts {
            backoff_base: Duration::ZERO,
            max_attempts: 2,
            ..QueueOpts::default()
        },
    );
    q.enqueue_batch(0..10u32).await.expect("enqueue");
    let settled = Arc::new(AtomicUsize::new(0));
    let s = settled.clone();
    Worker::new(store.clone())
        .queue("metered", move |job: JobCtx<u32>| {
            let s = s.clone();
            async move {
                let n = *job.payload();
                s.fetch_add(1, Ordering::SeqCst);
                if n == 0 {
                    return Err(JobError::retry("always fails"));
                }
                Ok(())
            }
        })
        .run_until(async {
            // 9 successes + 2 failed attempts of job 0, then its dead move.
            // Until every outcome is recorded: the acks flushed (no live
            // job left) and job 0 dead.
            loop {
                let stats = q.stats().await.expect("stats");
                if settled.load(Ordering::SeqCst) >= 11 && stats.live() == 0 && stats.dead >= 1 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .expect("run");

    // Every engine call goes through one wrapper that counts it by engine,
    // method and outcome; a rejected call counts as its error kind.
    let bad = alkstore::queue::JobClaimParams::new("metered", "w", 0);
    let err = store.engine().job_claim(bad).await.expect_err("limit 0");
    assert_eq!(err.kind(), alkstore::ErrorKind::InvalidInput);

    let mut counters: HashMap<String, u64> = HashMap::new();
    let mut engine_calls: HashMap<(String, String), u64> = HashMap::new();
    let mut call_samples = 0;
    let mut histogram_samples = 0;
    let mut wait_samples = 0;
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        let name = key.key().name().to_string();
        if name.starts_with("alkstore_engine_") {
            let label = |k: &str| {
                key.key()
                    .labels()
                    .find(|l| l.key() == k)
                    .map(|l| l.value().to_string())
                    .unwrap_or_default()
            };
            assert_eq!(label("engine"), "sqlite", "{name} says which engine");
            match &value {
                DebugValue::Counter(n) => {
                    *engine_calls
                        .entry((label("method"), label("outcome")))
                        .or_default() += n
                }
                DebugValue::Histogram(v) => call_samples += v.len(),
                _ => {}
            }
            continue;
        }
        if name.starts_with("alkstore_jobs_") || name.starts_with("alkstore_job_") {
            // Every job metric says which queue it is about.
            let queue = key
                .key()
                .labels()
                .find(|l| l.key() == "queue")
                .map(|l| l.value().to_string());
            assert_eq!(
                queue.as_deref(),
                Some("metered"),
                "{name} has a queue label"
            );
        }
        match value {
            DebugValue::Counter(n) => *counters.entry(name).or_default() += n,
            DebugValue::Histogram(v) if name == "alkstore_handler_duration_seconds" => {
                histogram_samples += v.len()
            }
            DebugValue::Histogram(v) if name == "alkstore_job_wait_seconds" => {
                wait_samples += v.len()
            }
            _ => {}
        }
    }
    assert_eq!(wait_samples, 11, "one queue-wait sample per started job");
    assert_eq!(
        counters.get("alkstore_jobs_claimed_total"),
        Some(&11),
        "{counters:?}"
    );
    assert_eq!(
        counters.get("alkstore_jobs_completed_total"),
        Some(&9),
        "{counters:?}"
    );
    assert_eq!(
        counters.get("alkstore_jobs_retried_total"),
        Some(&1),
        "{counters:?}"
    );
    assert_eq!(
        counters.get("alkstore_jobs_dead_total"),
        Some(&1),
        "{counters:?}"
    );
    assert_eq!(histogram_samples, 11);

    let calls = |method: &str, outcome: &str| {
        engine_calls
            .get(&(method.to_string(), outcome.to_string()))
            .copied()
            .unwrap_or(0)
    };
    assert_eq!(calls("job_enqueue", "ok"), 1, "{engine_calls:?}");
    assert!(calls("job_claim", "ok") >= 1, "{engine_calls:?}");
    assert_eq!(calls("job_claim", "invalid_input"), 1, "{engine_calls:?}");
    assert!(calls("job_ack", "ok") >= 1, "{engine_calls:?}");
    assert!(calls("job_settle", "ok") >= 1, "{engine_calls:?}");
    let total: u64 = engine_calls.values().sum();
    assert_eq!(call_samples as u64, total, "one duration sample per call");
}
