//! `/metrics`: the store's state read at scrape time (queue depth by state,
//! oldest ready age, dead letters, jobs finished per queue by every worker,
//! stream lag per consumer, group bucket ownership, lag and epoch — the
//! epoch grows on every change of owner, so lease failovers show as its
//! increase; registered processes by kind and what they run) set through
//! the `metrics` facade, then rendered with
//! everything else this process recorded (its workers' job counters and
//! histograms) in Prometheus text format.

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;

use crate::error::{ApiError, ApiResult};
use crate::AppState;

/// Gauges from the store, then the recorder's text.
pub(crate) async fn metrics(State(app): State<AppState>) -> ApiResult<impl IntoResponse> {
    let Some(handle) = app.prometheus.clone() else {
        return Err(ApiError::not_found(
            "path",
            "no Prometheus recorder in this process",
        ));
    };
    record_store_gauges(&app).await?;
    describe();
    Ok((
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        handle.render(),
    ))
}

async fn record_store_gauges(app: &AppState) -> alkstore::Result<()> {
    let store = &app.store;
    for s in store.queue_stats().await? {
        let q = s.queue.clone();
        for (state, n) in [
            ("ready", s.ready),
            ("scheduled", s.scheduled),
            ("processing", s.processing),
            ("expired_claims", s.expired_claims),
            ("expired", s.expired),
            ("dead", s.dead),
            ("completed", s.completed),
        ] {
            metrics::gauge!("alkstore_queue_depth", "queue" => q.clone(), "state" => state)
                .set(n as f64);
        }
        metrics::gauge!("alkstore_queue_dead", "queue" => q.clone()).set(s.dead as f64);
        metrics::gauge!("alkstore_queue_oldest_ready_age_seconds", "queue" => q.clone())
            .set(s.oldest_ready_age_s.unwrap_or(0) as f64);
    }
    // The store's own counts of finished jobs, whoever finished them: they
    // only grow, so they are counters (`rate()` gives throughput).
    let finished = store
        .throughput(alkstore::queue::QueueThroughputParams::every_queue(
            std::time::Duration::from_secs(1),
        ))
        .await?;
    for t in finished.totals {
        metrics::counter!("alkstore_queue_completed_total", "queue" => t.queue.clone())
            .absolute(t.completed);
        metrics::counter!("alkstore_queue_failed_total", "queue" => t.queue).absolute(t.failed);
    }
    for s in store.streams().await? {
        if let Some(head) = s.head {
            metrics::gauge!("alkstore_stream_head_offset", "stream" => s.stream.clone())
                .set(head as f64);
        }
        for c in store.stream(s.stream.as_str()).offsets().await? {
            metrics::gauge!("alkstore_stream_consumer_lag", "stream" => s.stream.clone(), "consumer" => c.consumer)
                .set(c.lag as f64);
        }
    }
    for g in store.groups().await? {
        let group = store.group(g.group.as_str());
        let status = group.status().await?;
        let mut owned = 0u32;
        for b in &status.buckets {
            let live = b.owner.is_some() && !b.expired;
            owned += u32::from(live);
            metrics::gauge!("alkstore_group_bucket_lag", "group" => g.group.clone(), "bucket" => b.bucket.to_string())
                .set(b.lag as f64);
            metrics::gauge!("alkstore_group_bucket_epoch", "group" => g.group.clone(), "bucket" => b.bucket.to_string())
                .set(b.epoch as f64);
        }
        metrics::gauge!("alkstore_group_buckets_owned", "group" => g.group.clone())
            .set(f64::from(owned));
        metrics::gauge!("alkstore_group_buckets", "group" => g.group.clone())
            .set(f64::from(g.buckets));
        metrics::gauge!("alkstore_group_live_workers", "group" => g.group.clone())
            .set(f64::from(g.live_workers));
        metrics::gauge!("alkstore_group_dead", "group" => g.group.clone()).set(g.dead as f64);
        let handoffs = group.handoffs(1).await?;
        for (cause, n) in handoffs.totals {
            metrics::counter!("alkstore_group_handoffs_total", "group" => g.group.clone(), "cause" => cause.as_str())
                .absolute(n);
        }
    }
    record_process_gauges(&app.store.processes().await?);
    Ok(())
}

/// Processes by kind (alive or dead within the hour), and the jobs or
/// buckets the live ones hold and may hold. Every built-in kind is set,
/// to 0 when none runs, so a gauge falls when the last one stops.
fn record_process_gauges(processes: &[alkstore::process::ProcessInfo]) {
    use std::collections::BTreeMap;
    let mut by_kind: BTreeMap<&str, [u64; 4]> = ["worker", "group", "subscriber", "scheduler"]
        .into_iter()
        .map(|k| (k, [0; 4]))
        .collect();
    for p in processes {
        let n = by_kind.entry(p.kind.as_str()).or_default();
        if p.alive {
            n[0] += 1;
            n[2] += u64::from(p.running);
            n[3] += u64::from(p.concurrency);
        } else {
            n[1] += 1;
        }
    }
    for (kind, [alive, dead, running, slots]) in by_kind {
        let kind = kind.to_string();
        metrics::gauge!("alkstore_processes", "kind" => kind.clone(), "state" => "alive")
            .set(alive as f64);
        metrics::gauge!("alkstore_processes", "kind" => kind.clone(), "state" => "dead")
            .set(dead as f64);
        metrics::gauge!("alkstore_process_running", "kind" => kind.clone()).set(running as f64);
        metrics::gauge!("alkstore_process_slots", "kind" => kind).set(slots as f64);
    }
}

/// The `# HELP` line of every family this process may render: the store's
/// gauges above, the job runtime's counters and histograms, and the engine
/// calls' (describing one never recorded renders nothing).
fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
    describe_gauge!(
        "alkstore_queue_depth",
        "Jobs of a queue by state (ready, scheduled, processing, expired_claims, expired, dead, completed), read from the store at scrape time"
    );
    describe_gauge!(
        "alkstore_queue_dead",
        "Dead letters of a queue (jobs that failed for good, ran out of attempts, expired or were cancelled)"
    );
    describe_gauge!(
        "alkstore_queue_oldest_ready_age_seconds",
        Unit::Seconds,
        "Age of a queue's oldest ready job (0 when none is ready)"
    );
    describe_counter!(
        "alkstore_queue_completed_total",
        "Jobs of a queue acked, counted by the store whoever acked them (any process, any host, the HTTP API)"
    );
    describe_counter!(
        "alkstore_queue_failed_total",
        "Attempts of a queue's jobs that ended in a retry or a failure, counted by the store whoever settled them"
    );
    describe_gauge!(
        "alkstore_stream_head_offset",
        "The highest offset of a stream"
    );
    describe_gauge!(
        "alkstore_stream_consumer_lag",
        "Events of a stream after a consumer's committed offset"
    );
    describe_gauge!(
        "alkstore_group_bucket_lag",
        "Events of a consumer group's bucket after its checkpoint"
    );
    describe_gauge!(
        "alkstore_group_bucket_epoch",
        "A bucket's lease epoch: it grows on every change of owner, so failovers show as its increase"
    );
    describe_gauge!(
        "alkstore_group_buckets_owned",
        "Buckets of a consumer group held under an unexpired lease"
    );
    describe_gauge!("alkstore_group_buckets", "A consumer group's bucket count");
    describe_gauge!(
        "alkstore_group_live_workers",
        "Live workers of a consumer group, with or without buckets"
    );
    describe_gauge!(
        "alkstore_group_dead",
        "Dead letters of a consumer group (events its handler gave up on)"
    );
    describe_counter!(
        "alkstore_group_handoffs_total",
        "Changes of a consumer group's bucket holders, by cause: first, rebalance, leave, or lapse (a failover)"
    );
    describe_gauge!(
        "alkstore_processes",
        "Registered processes by kind (worker, group, subscriber, scheduler) and state (alive, or dead within the hour)"
    );
    describe_gauge!(
        "alkstore_process_running",
        "What live processes of a kind run now: jobs (workers), buckets held (group members)"
    );
    describe_gauge!(
        "alkstore_process_slots",
        "What live processes of a kind may run at once: handler slots (workers), bucket counts (group members)"
    );
    describe_histogram!(
        "alkstore_handler_duration_seconds",
        Unit::Seconds,
        "How long this process's job handlers ran, per queue"
    );
    describe_histogram!(
        "alkstore_job_wait_seconds",
        Unit::Seconds,
        "How long jobs waited from due to claimed by this process's workers, per queue"
    );
    describe_counter!(
        "alkstore_jobs_claimed_total",
        "Jobs claimed by this process's workers"
    );
    describe_counter!(
        "alkstore_jobs_completed_total",
        "Jobs this process's workers acked"
    );
    describe_counter!(
        "alkstore_jobs_retried_total",
        "Attempts this process's workers ended in a retry"
    );
    describe_counter!(
        "alkstore_jobs_dead_total",
        "Jobs this process's workers sent to the dead letters"
    );
    describe_counter!(
        "alkstore_jobs_snoozed_total",
        "Jobs this process's workers snoozed (run later without using an attempt)"
    );
    describe_counter!(
        "alkstore_jobs_cancelled_total",
        "Jobs this process's workers stopped because their cancellation was requested"
    );
    describe_counter!(
        "alkstore_http_atomic_requests_total",
        "Atomic requests (POST /api/v1/atomic) this server answered, by outcome: committed, or the error code that rolled them back"
    );
    describe_counter!(
        "alkstore_http_atomic_ops_total",
        "Ops committed by this server's atomic requests, by op"
    );
    describe_counter!(
        "alkstore_engine_calls_total",
        "Store calls made by this process, by engine, method and outcome (ok or the error kind)"
    );
    describe_histogram!(
        "alkstore_engine_call_seconds",
        Unit::Seconds,
        "How long this process's store calls took, by engine and method"
    );
}
