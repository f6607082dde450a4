//! `/metrics`: the store's state read at scrape time (queue depth by state,
//! oldest ready age, dead letters, jobs finished per queue by every worker,
//! stream lag per consumer, group bucket ownership, lag and epoch — the
//! epoch grows on every change of owner, so lease failovers show as its
//! increase) set through the `metrics` facade, then rendered with
//! everything else this process recorded (its workers' job counters and
//! histograms) in Prometheus text format.

use alkstore::prelude::*;
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
    Ok((
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        handle.render(),
    ))
}

async fn record_store_gauges(app: &AppState) -> alkstore::Result<()> {
    let e = app.store.engine();
    for q in e.queue_list().await? {
        let s = e.queue_stats(q.clone()).await?;
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
    let finished = e
        .queue_throughput(alkstore::QueueThroughputParams::every_queue(
            std::time::Duration::from_secs(1),
        ))
        .await?;
    for t in finished.totals {
        metrics::counter!("alkstore_queue_completed_total", "queue" => t.queue.clone())
            .absolute(t.completed);
        metrics::counter!("alkstore_queue_failed_total", "queue" => t.queue).absolute(t.failed);
    }
    for s in e.stream_list().await? {
        if let Some(head) = s.head {
            metrics::gauge!("alkstore_stream_head_offset", "stream" => s.stream.clone())
                .set(head as f64);
        }
        for c in e.stream_offsets(s.stream.clone()).await? {
            metrics::gauge!("alkstore_stream_consumer_lag", "stream" => s.stream.clone(), "consumer" => c.consumer)
                .set(c.lag as f64);
        }
    }
    for g in e.group_list().await? {
        let status = e.group_status(g.group.clone()).await?;
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
    }
    Ok(())
}
