//! `/metrics` in its own test binary: it installs the process-wide
//! Prometheus recorder, as `alk serve` does.

use alkstore::prelude::*;
use alkstore::queue::JobFailParams;
use alkstore::{queue::NewJob, JobCtx, Store, Worker};
use alkstore_core::group::GroupEnsureParams;
use alkstore_core::stream::{NewEvent, StreamOffsetCommitParams};
use alkstore_http::{router, ServeOptions};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use tower::ServiceExt;

async fn scrape(app: &axum::Router) -> (StatusCode, String) {
    let req = Request::get("/metrics")
        .header("host", "127.0.0.1")
        .body(Body::empty())
        .expect("request");
    let res = app.clone().oneshot(req).await.expect("infallible");
    let status = res.status();
    let bytes = res.into_body().collect().await.expect("body").to_bytes();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

/// The value of the sample line that starts with `prefix`.
fn sample(text: &str, prefix: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

/// Every family in `text` (each `# TYPE` line) has a `# HELP` line.
fn assert_every_family_has_help(text: &str) {
    let named = |prefix: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| l.strip_prefix(prefix))
            .filter_map(|rest| rest.split(' ').next())
            .map(str::to_string)
            .collect()
    };
    let helped = named("# HELP ");
    let families = named("# TYPE ");
    assert!(families.len() > 10, "{text}");
    let bare: Vec<&String> = families.iter().filter(|f| !helped.contains(f)).collect();
    assert!(bare.is_empty(), "families without # HELP: {bare:?}\n{text}");
    for line in text.lines().filter(|l| l.starts_with("# HELP ")) {
        let help = line.splitn(4, ' ').nth(3).unwrap_or_default();
        assert!(!help.trim().is_empty(), "an empty HELP: {line}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_show_depth_lag_ownership_and_the_runtimes_counters() {
    let handle = metrics_exporter_prometheus::PrometheusBuilder::new()
        .install_recorder()
        .expect("recorder");
    let dir = tempfile::tempdir().expect("tmp");
    let store = Store::open(&format!("sqlite://{}", dir.path().join("m.db").display()))
        .await
        .expect("open");
    let e = store.engine();
    e.job_enqueue(
        (0..5)
            .map(|i| NewJob::new("mail", vec![b'0' + i]))
            .collect::<Vec<_>>(),
    )
    .await
    .expect("enqueue");
    let offsets = e
        .stream_publish(vec![
            NewEvent::new("orders", b"1".to_vec()),
            NewEvent::new("orders", b"2".to_vec()),
        ])
        .await
        .expect("publish");
    e.stream_offset_commit(StreamOffsetCommitParams::new(
        "orders", "billing", offsets[0],
    ))
    .await
    .expect("commit");
    e.group_ensure(GroupEnsureParams::new("g", "orders", 4))
        .await
        .expect("group");

    // A worker in this process completes 2 jobs of another queue.
    e.job_enqueue(vec![
        NewJob::new("fast", b"a".to_vec()),
        NewJob::new("fast", b"b".to_vec()),
    ])
    .await
    .expect("enqueue");
    let done = std::sync::Arc::new(tokio::sync::Notify::new());
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (d, s) = (done.clone(), seen.clone());
    Worker::new(store.clone())
        .queue_raw("fast", move |_job: JobCtx<Vec<u8>>| {
            if s.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 1 {
                d.notify_one();
            }
            async { Ok(()) }
        })
        .run_until(async move { done.notified().await })
        .await
        .expect("worker");

    // Another client (here the engine itself, as another process would)
    // acks one job and fails one: the store counts both.
    e.job_enqueue(vec![
        NewJob::new("other", b"a".to_vec()),
        NewJob::new("other", b"b".to_vec()),
    ])
    .await
    .expect("enqueue");
    let got = e
        .job_claim(alkstore::queue::JobClaimParams::new(
            "other",
            "elsewhere",
            2,
        ))
        .await
        .expect("claim");
    e.job_ack(vec![got[0].claim()]).await.expect("ack");
    e.job_fail(JobFailParams::new(got[1].claim(), "broken".to_string()))
        .await
        .expect("fail");

    let app = router(
        store.clone(),
        ServeOptions {
            prometheus: Some(handle),
            ..ServeOptions::default()
        },
    );
    let (status, text) = scrape(&app).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        sample(
            &text,
            "alkstore_queue_depth{queue=\"mail\",state=\"ready\"}"
        ),
        Some(5.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, "alkstore_queue_dead{queue=\"mail\"}"),
        Some(0.0)
    );
    assert_eq!(
        sample(
            &text,
            "alkstore_stream_consumer_lag{stream=\"orders\",consumer=\"billing\"}"
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, "alkstore_group_buckets{group=\"g\"}"),
        Some(4.0)
    );
    assert_eq!(
        sample(&text, "alkstore_group_buckets_owned{group=\"g\"}"),
        Some(0.0)
    );
    assert_eq!(
        sample(&text, "alkstore_jobs_completed_total{queue=\"fast\"}"),
        Some(2.0),
        "the runtime's counters render beside the store's gauges: {text}"
    );
    for (series, want) in [
        ("alkstore_queue_completed_total{queue=\"fast\"}", 2.0),
        ("alkstore_queue_completed_total{queue=\"other\"}", 1.0),
        ("alkstore_queue_failed_total{queue=\"other\"}", 1.0),
        ("alkstore_queue_failed_total{queue=\"fast\"}", 0.0),
    ] {
        assert_eq!(sample(&text, series), Some(want), "{series}: {text}");
    }
    assert_eq!(
        sample(&text, "alkstore_group_dead{group=\"g\"}"),
        Some(0.0),
        "{text}"
    );
    // Registered processes by kind: one live worker running 3 of 8 slots.
    let mut beat = alkstore::process::ProcessBeatParams::new(
        "w-metrics",
        "worker",
        std::time::Duration::from_secs(30),
    );
    (beat.running, beat.concurrency) = (3, 8);
    e.process_beat(beat).await.expect("beat");
    let (_, text) = scrape(&app).await;
    for (series, want) in [
        ("alkstore_processes{kind=\"worker\",state=\"alive\"}", 1.0),
        ("alkstore_processes{kind=\"group\",state=\"alive\"}", 0.0),
        ("alkstore_process_running{kind=\"worker\"}", 3.0),
        ("alkstore_process_slots{kind=\"worker\"}", 8.0),
    ] {
        assert_eq!(sample(&text, series), Some(want), "{series}: {text}");
    }
    // The store's gauges, the runtime's and the engine calls' series alike.
    assert_every_family_has_help(&text);
}

#[tokio::test]
async fn without_a_recorder_metrics_is_not_found() {
    let dir = tempfile::tempdir().expect("tmp");
    let store = Store::open(&format!("sqlite://{}", dir.path().join("n.db").display()))
        .await
        .expect("open");
    let app = router(store, ServeOptions::default());
    assert_eq!(scrape(&app).await.0, StatusCode::NOT_FOUND);
}
