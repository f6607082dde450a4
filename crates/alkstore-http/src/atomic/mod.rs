//! Atomic requests over HTTP: a list of writes of every primitive
//! (enqueue, publish, settle a claim, commit an offset, checkpoint a group
//! bucket, notify, fence with a lock, change a schedule) run in order in
//! one transaction ([`Store::begin`](alkstore::Store::begin)), all or none.
//!
//! Each op is the body of the single call it stands for, plus the values
//! that call takes in its path (`queue`, `stream`, `consumer`, `id`,
//! `name`) and an `op` tag: `{"op": "enqueue", "queue": "emails",
//! "payload": {…}}` is `POST /api/v1/queues/emails/jobs` with body
//! `{"payload": {…}}`. The first op that fails rolls everything back, and
//! the error names it (`op_index`, `op`, `field` `ops[i].…`).
//!
//! Here: the route, its request and response, and the run of one request.
//! The ops' own bodies and results are in `wire`, every kind of op (how
//! it reads and how the document shows it) in `kinds`, and one parsed op
//! as the write it makes in `write`.

mod kinds;
mod wire;
mod write;

use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tracing::Instrument as _;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::ApiJson;
use crate::queues::MAX_BATCH;
use crate::AppState;
use kinds::parse;

pub use kinds::AtomicOp;
pub use wire::{
    AtomicResult, CheckpointView, GroupCheckpointRequest, LockFenceRequest, NoBody, NotifyRequest,
    SnoozeRequest, Snoozed,
};

/// The most ops one atomic request may carry.
pub const MAX_OPS: usize = 100;

/// The most rows one atomic request may write: each job of an enqueue and
/// each event of a publish counts one, every other op one.
pub const MAX_WRITES: usize = MAX_BATCH;

pub(crate) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(atomic))
}

/// Writes to run in order in one transaction, all or none.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AtomicRequest {
    /// 1 to 100 ops, run in this order. Together they may write at most
    /// 1,000 rows (each job of an enqueue and each event of a publish
    /// counts one, every other op one).
    #[schema(value_type = Vec<AtomicOp>, min_items = 1, max_items = 100)]
    pub ops: Vec<Value>,
}

/// Every op's result, in request order.
#[derive(Debug, Serialize, ToSchema)]
pub struct AtomicResponse {
    /// One per op, tagged with its `op`, shaped as the single call's
    /// response.
    pub results: Vec<AtomicResult>,
}

/// Run writes atomically.
///
/// Run 1 to 100 ops (at most 1,000 rows written in all) in order in one
/// transaction: all commit together or none does. Each op is the body of
/// the single call it stands for (same fields, same payload encoding),
/// with that call's path values as fields and an `op` tag: `enqueue`,
/// `enqueue_batch`, `publish`, `ack`, `retry`, `fail`, `snooze`,
/// `offset_commit`, `group_checkpoint`, `notify`, `lock_fence`,
/// `schedule_set`, `schedule_remove`, `schedule_pause`,
/// `schedule_resume`. The settles (`ack`, `retry`, `fail`, `snooze`) need
/// the claim to be held still, `group_checkpoint` the lease under its
/// epoch, `lock_fence` the lock under its token, each until the commit:
/// otherwise the request fails with 409 `not_held`. Any failure rolls the
/// whole request back and the error names the op (`op_index` from 0, `op`,
/// `field` as `ops[i].field`). Jobs and events committed here wake waiting
/// claims and reads at once, and notifications go out at commit.
#[utoipa::path(post, path = "/api/v1/atomic", tag = "atomic",
    request_body = AtomicRequest,
    responses((status = 200, description = "Every op ran and all committed together: one result per op, in request order", body = AtomicResponse),
        (status = 400, description = "Bad input (in op `op_index`, or too many ops or rows); nothing written", body = ErrorBody),
        (status = 404, description = "An op's schedule does not exist (pause, resume); nothing written", body = ErrorBody),
        (status = 409, description = "An op's claim, lease epoch or lock token is no longer the caller's (`not_held`, naming the op); nothing written", body = ErrorBody),
        (status = 413, description = "A payload too large, or the body over the server's limit; nothing written", body = ErrorBody)))]
async fn atomic(
    State(app): State<AppState>,
    ApiJson(req): ApiJson<AtomicRequest>,
) -> ApiResult<Json<AtomicResponse>> {
    let span = tracing::debug_span!("alkstore.http.atomic", ops = req.ops.len());
    let out = run(&app, req).instrument(span).await;
    let outcome = match &out {
        Ok(_) => "committed".to_string(),
        Err(e) => e.code().to_string(),
    };
    metrics::counter!("alkstore_http_atomic_requests_total", "outcome" => outcome).increment(1);
    out.map(Json)
}

async fn run(app: &AppState, req: AtomicRequest) -> ApiResult<AtomicResponse> {
    if req.ops.is_empty() || req.ops.len() > MAX_OPS {
        return Err(ApiError::invalid(
            "ops",
            format!("must hold 1 to {MAX_OPS} ops"),
        ));
    }
    // Every op is read before the transaction begins: bad input costs no
    // transaction (on SQLite, no wait for the write lock).
    let writes = req
        .ops
        .into_iter()
        .enumerate()
        .map(|(i, op)| parse(i, op))
        .collect::<ApiResult<Vec<_>>>()?;
    let rows: usize = writes.iter().map(|(_, w)| w.rows()).sum();
    if rows > MAX_WRITES {
        return Err(ApiError::invalid(
            "ops",
            format!("the ops write {rows} rows; at most {MAX_WRITES} in one request"),
        ));
    }
    let mut tx = app.store.begin().await?;
    let mut results = Vec::with_capacity(writes.len());
    for (index, (kind, write)) in writes.into_iter().enumerate() {
        match write.run(&mut tx).await {
            Ok(r) => results.push(r),
            Err(e) => {
                let not_held = e.kind() == alkstore::ErrorKind::NotHeld;
                if let Err(rb) = tx.rollback().await {
                    tracing::warn!(error = %rb, "rolling back a failed atomic request failed");
                }
                let mut err = ApiError::from(e);
                if not_held {
                    err = err.with_field(kind.held_field);
                }
                tracing::debug!(op_index = index, op = kind.op, "atomic request rolled back");
                return Err(err.in_op(index, Some(kind.op)));
            }
        }
    }
    tx.commit().await?;
    for r in &results {
        metrics::counter!("alkstore_http_atomic_ops_total", "op" => result_op(r)).increment(1);
    }
    Ok(AtomicResponse { results })
}

/// A result's `op` tag.
fn result_op(r: &AtomicResult) -> &'static str {
    match r {
        AtomicResult::Enqueue(_) => "enqueue",
        AtomicResult::EnqueueBatch(_) => "enqueue_batch",
        AtomicResult::Publish(_) => "publish",
        AtomicResult::Ack(_) => "ack",
        AtomicResult::Retry(_) => "retry",
        AtomicResult::Fail(_) => "fail",
        AtomicResult::Snooze(_) => "snooze",
        AtomicResult::OffsetCommit(_) => "offset_commit",
        AtomicResult::GroupCheckpoint(_) => "group_checkpoint",
        AtomicResult::Notify => "notify",
        AtomicResult::LockFence => "lock_fence",
        AtomicResult::ScheduleSet(_) => "schedule_set",
        AtomicResult::ScheduleRemove(_) => "schedule_remove",
        AtomicResult::SchedulePause(_) => "schedule_pause",
        AtomicResult::ScheduleResume(_) => "schedule_resume",
    }
}
