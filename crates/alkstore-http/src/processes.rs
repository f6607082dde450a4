//! The process registry over HTTP: who is running (workers, group members,
//! subscribers, schedulers), and an operator's quiet and stop orders, acted
//! on at each process's next heartbeat.

use alkstore::process::{ProcessInfo, ProcessOrder};
use axum::extract::State;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::ApiPath;
use crate::queues::Done;
use crate::AppState;

pub(crate) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_processes))
        .routes(routes!(quiet_process))
        .routes(routes!(stop_process))
}

/// A registered process.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProcessView {
    /// Its id (unique per process run).
    pub id: String,
    /// `worker`, `group`, `subscriber` or `scheduler`.
    pub kind: String,
    /// Its host.
    pub host: String,
    /// Its process id on the host.
    pub pid: u32,
    /// The version it runs.
    pub version: String,
    /// What it works: queues (worker), `group/stream` (group member),
    /// `stream/consumer` (subscriber).
    pub roles: Vec<String>,
    /// How many things it may run at once: handler slots, or buckets.
    pub concurrency: u32,
    /// How many it ran at its last heartbeat: jobs, or buckets held.
    pub running: u32,
    /// When it started (unix ms).
    pub started_at_ms: i64,
    /// Its last heartbeat (unix ms).
    pub heartbeat_at_ms: i64,
    /// When it is taken for dead without another heartbeat (unix ms).
    pub expires_at_ms: i64,
    /// Beat within its expiry; dead processes are listed for an hour.
    pub alive: bool,
    /// What an operator asked: `run`, `quiet` or `stop`.
    pub order: String,
}

impl From<ProcessInfo> for ProcessView {
    fn from(p: ProcessInfo) -> Self {
        ProcessView {
            id: p.id,
            kind: p.kind,
            host: p.host,
            pid: p.pid,
            version: p.version,
            roles: p.roles,
            concurrency: p.concurrency,
            running: p.running,
            started_at_ms: p.started_at_ms,
            heartbeat_at_ms: p.heartbeat_at_ms,
            expires_at_ms: p.expires_at_ms,
            alive: p.alive,
            order: p.order.as_str().to_string(),
        }
    }
}

/// Every registered process.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProcessList {
    /// By kind, then id.
    pub processes: Vec<ProcessView>,
}

/// List the running processes.
///
/// Every worker, group member, subscriber and scheduler registered in the
/// store: host, pid, version, what it works, slots, what it runs now, its
/// last heartbeat, whether it is alive (dead ones are listed for an hour)
/// and any order left for it.
#[utoipa::path(get, path = "/api/v1/processes", tag = "processes",
    responses((status = 200, description = "Every registered process", body = ProcessList)))]
async fn list_processes(State(app): State<AppState>) -> ApiResult<Json<ProcessList>> {
    let processes = app.store.processes().await?;
    Ok(Json(ProcessList {
        processes: processes.into_iter().map(ProcessView::from).collect(),
    }))
}

/// Leave `order` for process `id`; 404 when it is not registered.
async fn order(app: &AppState, id: String, order: ProcessOrder) -> ApiResult<Json<Done>> {
    let found = app
        .store
        .process(id.as_str())
        .order(order)
        .await
        .map_err(|e| ApiError::from(e).with_field("id"))?;
    if !found {
        return Err(ApiError::not_found(
            "id",
            format!("no process {id:?} is registered"),
        ));
    }
    Ok(Json(Done { done: true }))
}

/// Quiet a process.
///
/// Ask the process to claim nothing new: a worker finishes the jobs it
/// runs and idles until stopped; a group member, subscriber or scheduler
/// stops. Acted on at its next heartbeat (within seconds).
#[utoipa::path(post, path = "/api/v1/processes/{id}/quiet", tag = "processes",
    params(("id" = String, Path, description = "Process id")),
    responses((status = 200, description = "Ordered", body = Done),
        (status = 400, description = "Bad input", body = ErrorBody),
        (status = 404, description = "No such process", body = ErrorBody)))]
async fn quiet_process(
    State(app): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<Done>> {
    order(&app, id, ProcessOrder::Quiet).await
}

/// Stop a process.
///
/// Ask the process to shut down gracefully, as at SIGTERM (running jobs
/// get its shutdown timeout, then go back to their queue). Acted on at its
/// next heartbeat.
#[utoipa::path(post, path = "/api/v1/processes/{id}/stop", tag = "processes",
    params(("id" = String, Path, description = "Process id")),
    responses((status = 200, description = "Ordered", body = Done),
        (status = 400, description = "Bad input", body = ErrorBody),
        (status = 404, description = "No such process", body = ErrorBody)))]
async fn stop_process(
    State(app): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<Done>> {
    order(&app, id, ProcessOrder::Stop).await
}
