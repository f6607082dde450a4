//! Job queues over HTTP: enqueue, claim (long-poll), settle, inspect, and
//! the dead letters.
//!
//! The routes are here; the request and response bodies of the writes are
//! in `wire`, what the reads return in `views`, the handlers in `handlers`,
//! and the batch and wait limits every area shares in `limits`.

mod handlers;
mod limits;
mod views;
mod wire;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;

pub(crate) use limits::{batch_limit, check_batch, check_tag};
pub use limits::{MAX_BATCH, MAX_WAIT_MS};
pub use views::{
    AttemptErrorView, DeadPageQuery, DepthQuery, DepthSampleView, DepthView, JobPage, JobView,
    PageQuery, QueueList, QueueTotalsView, QueueView, ThroughputBucketView, ThroughputQuery,
    ThroughputView,
};
pub(crate) use wire::JobId;
pub use wire::{
    AckBatchRequest, AckBatchResponse, AckRequest, CancelResponse, Changed, ClaimItem, ClaimRef,
    ClaimRequest, ClaimedJob, ClaimedJobs, Count, DeadSelectRequest, Done, EnqueueBatchRequest,
    EnqueueRequest, EnqueuedJob, EnqueuedJobs, FailRequest, HeartbeatResponse, RetryRequest,
    RetryResponse,
};

pub(crate) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(handlers::list_queues))
        .routes(routes!(handlers::queue_stats))
        .routes(routes!(handlers::throughput))
        .routes(routes!(handlers::depth))
        .routes(routes!(handlers::enqueue, handlers::list_jobs))
        .routes(routes!(handlers::enqueue_batch))
        .routes(routes!(handlers::claim))
        .routes(routes!(handlers::get_job))
        .routes(routes!(handlers::ack))
        .routes(routes!(handlers::ack_batch))
        .routes(routes!(handlers::retry))
        .routes(routes!(handlers::fail))
        .routes(routes!(handlers::heartbeat))
        .routes(routes!(handlers::release))
        .routes(routes!(handlers::cancel))
        .routes(routes!(handlers::pause))
        .routes(routes!(handlers::resume))
        .routes(routes!(handlers::dead_list))
        .routes(routes!(handlers::dead_requeue))
        .routes(routes!(handlers::dead_purge))
}
