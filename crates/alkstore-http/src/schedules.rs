//! Schedules over HTTP: list with next fire times, set, pause, resume,
//! remove, run now, and each one's last fires with their jobs.

use alkstore_core::schedule::{ScheduleInfo, ScheduleSetParams};
use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::error::{ApiResult, ErrorBody};
use crate::extract::{ApiJson, ApiPath};
use crate::payload::{decode, encode_either};
use crate::AppState;

pub(crate) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_schedules))
        .routes(routes!(set_schedule, remove_schedule))
        .routes(routes!(pause_schedule))
        .routes(routes!(resume_schedule))
        .routes(routes!(run_schedule))
        .routes(routes!(schedule_fires))
}

/// A schedule.
#[derive(Debug, Serialize, ToSchema)]
pub struct ScheduleView {
    /// Its name.
    pub name: String,
    /// `@every 30s` or a 5- or 6-field cron pattern.
    pub spec: String,
    /// The IANA zone cron patterns are read in (null: UTC).
    pub tz: Option<String>,
    /// Where its jobs go.
    pub queue: String,
    /// Each job's payload (null when not JSON; see `payload_base64`).
    pub payload: serde_json::Value,
    /// The payload's bytes in base64, when they are not JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload_base64: Option<String>,
    /// Each job's priority.
    pub priority: i32,
    /// Missed boundaries fired at most, oldest first.
    pub max_catch_up: u32,
    /// Paused: fires nothing until resumed.
    pub paused: bool,
    /// Its next boundary (unix ms; kept while paused, and not fired until
    /// resumed: a resume moves it to the next boundary after then).
    pub next_fire_at_ms: Option<i64>,
    /// The last boundary fired (unix ms).
    pub last_boundary_ms: Option<i64>,
}

impl From<ScheduleInfo> for ScheduleView {
    fn from(s: ScheduleInfo) -> Self {
        let (payload, payload_base64) = decode(&s.payload);
        ScheduleView {
            name: s.name,
            spec: s.spec,
            tz: s.tz,
            queue: s.queue,
            payload,
            payload_base64,
            priority: s.priority,
            max_catch_up: s.max_catch_up,
            paused: s.paused,
            next_fire_at_ms: s.next_fire_at_ms,
            last_boundary_ms: s.last_boundary_ms,
        }
    }
}

/// Every schedule.
#[derive(Debug, Serialize, ToSchema)]
pub struct ScheduleList {
    /// By name.
    pub schedules: Vec<ScheduleView>,
}

/// A schedule to create or change.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScheduleRequest {
    /// `@every <n><s|m|h|d>` or a 5- or 6-field cron pattern.
    pub spec: String,
    /// An IANA zone for cron patterns (default UTC).
    pub tz: Option<String>,
    /// Where its jobs go.
    #[schema(min_length = 1, max_length = 200, pattern = "^[^\\u0000]+$")]
    pub queue: String,
    /// Each job's payload (default null).
    #[serde(default)]
    pub payload: serde_json::Value,
    /// Each job's payload as bytes in base64, for a payload that is not
    /// JSON (as a schedule's `payload_base64` shows it); instead of
    /// `payload`.
    pub payload_base64: Option<String>,
    /// Each job's priority (default 0).
    #[serde(default)]
    pub priority: i32,
    /// Missed boundaries to fire after downtime, oldest first (default 1,
    /// at most 1,000).
    #[schema(minimum = 1, maximum = 1000)]
    pub max_catch_up: Option<u32>,
}

impl ScheduleRequest {
    /// The spec, queue and options it asks for, as [`Schedule::set_with`](alkstore::schedule::Schedule::set_with) takes them.
    pub(crate) fn into_set(self) -> ApiResult<(String, String, alkstore::schedule::ScheduleOpts)> {
        let payload = encode_either(&self.payload, self.payload_base64.as_deref())?;
        let mut opts = alkstore::schedule::ScheduleOpts::default()
            .payload(payload)
            .priority(self.priority);
        if let Some(tz) = self.tz {
            opts = opts.tz(tz);
        }
        if let Some(n) = self.max_catch_up {
            opts = opts.max_catch_up(n);
        }
        Ok((self.spec, self.queue, opts))
    }

    /// The schedule named `name`.
    pub(crate) fn into_params(self, name: String) -> ApiResult<ScheduleSetParams> {
        let mut p = ScheduleSetParams::new(name, self.spec, self.queue);
        p.tz = self.tz;
        p.payload = encode_either(&self.payload, self.payload_base64.as_deref())?;
        p.priority = self.priority;
        if let Some(n) = self.max_catch_up {
            p.max_catch_up = n;
        }
        Ok(p)
    }
}

/// Whether a removal found the schedule.
#[derive(Debug, Serialize, ToSchema)]
pub struct Removed {
    /// False when there was no such schedule.
    pub removed: bool,
}

/// List every schedule.
///
/// Every schedule with its spec, zone, queue and next fire time.
#[utoipa::path(get, path = "/api/v1/schedules", tag = "schedules",
    responses((status = 200, description = "Every schedule with its next fire time", body = ScheduleList)))]
async fn list_schedules(State(app): State<AppState>) -> ApiResult<Json<ScheduleList>> {
    let all = app.store.schedules().await?;
    Ok(Json(ScheduleList {
        schedules: all.into_iter().map(ScheduleView::from).collect(),
    }))
}

/// Create or change a schedule.
///
/// Each boundary of the spec (cron or `@every`) enqueues one job on the
/// queue, once across every process.
#[utoipa::path(put, path = "/api/v1/schedules/{name}", tag = "schedules",
    params(("name" = String, Path, description = "Schedule name")),
    request_body = ScheduleRequest,
    responses((status = 200, description = "Created or changed (the same spec keeps its pending boundary)", body = ScheduleView),
        (status = 400, description = "Bad input (a spec that does not parse, an unknown zone); nothing written", body = ErrorBody)))]
async fn set_schedule(
    State(app): State<AppState>,
    ApiPath(name): ApiPath<String>,
    ApiJson(req): ApiJson<ScheduleRequest>,
) -> ApiResult<Json<ScheduleView>> {
    let (spec, queue, opts) = req.into_set()?;
    let s = app.store.schedule(name).set_with(spec, queue, opts).await?;
    Ok(Json(s.into()))
}

/// Remove a schedule.
///
/// Delete the schedule; jobs it already enqueued stay.
#[utoipa::path(delete, path = "/api/v1/schedules/{name}", tag = "schedules",
    params(("name" = String, Path, description = "Schedule name")),
    responses((status = 200, description = "Removed, or there was none", body = Removed),
        (status = 400, description = "Bad input", body = ErrorBody)))]
async fn remove_schedule(
    State(app): State<AppState>,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<Json<Removed>> {
    let removed = app.store.schedule(name).remove().await?;
    Ok(Json(Removed { removed }))
}

/// Pause a schedule.
///
/// No boundary fires until it is resumed.
#[utoipa::path(post, path = "/api/v1/schedules/{name}/pause", tag = "schedules",
    params(("name" = String, Path, description = "Schedule name")),
    responses((status = 200, description = "Paused", body = ScheduleView),
        (status = 404, description = "No such schedule", body = ErrorBody)))]
async fn pause_schedule(
    State(app): State<AppState>,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<Json<ScheduleView>> {
    Ok(Json(app.store.schedule(name).pause().await?.into()))
}

/// Resume a schedule.
///
/// Fire again from the next boundary; the ones missed while paused are
/// skipped.
#[utoipa::path(post, path = "/api/v1/schedules/{name}/resume", tag = "schedules",
    params(("name" = String, Path, description = "Schedule name")),
    responses((status = 200, description = "Resumed from the next boundary", body = ScheduleView),
        (status = 404, description = "No such schedule", body = ErrorBody)))]
async fn resume_schedule(
    State(app): State<AppState>,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<Json<ScheduleView>> {
    Ok(Json(app.store.schedule(name).resume().await?.into()))
}

/// A job a schedule enqueued.
#[derive(Debug, Serialize, ToSchema)]
pub struct ScheduleFireView {
    /// The schedule.
    pub schedule: String,
    /// The boundary fired (unix ms); for a manual run, when it was asked.
    pub boundary_ms: i64,
    /// The queue.
    pub queue: String,
    /// The job's id (it may have finished since: a finished job is kept
    /// only on queues that keep completed jobs).
    pub job_id: i64,
    /// When it was enqueued (unix ms).
    pub fired_at_ms: i64,
    /// Asked for by an operator, not a boundary.
    pub manual: bool,
}

impl From<alkstore::schedule::ScheduleFire> for ScheduleFireView {
    fn from(f: alkstore::schedule::ScheduleFire) -> Self {
        ScheduleFireView {
            schedule: f.schedule,
            boundary_ms: f.boundary_ms,
            queue: f.queue,
            job_id: f.job_id,
            fired_at_ms: f.fired_at_ms,
            manual: f.manual,
        }
    }
}

/// A schedule's last fires.
#[derive(Debug, Serialize, ToSchema)]
pub struct ScheduleFires {
    /// Newest first.
    pub fires: Vec<ScheduleFireView>,
}

/// How many fires to list.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct FiresQuery {
    /// 1 to 50 (default 20).
    #[param(minimum = 1, maximum = 50)]
    pub limit: Option<u32>,
}

/// Run a schedule now.
///
/// Enqueue the schedule's job at once, paused or not, outside its
/// boundaries (which do not move); kept in its history as a manual fire.
#[utoipa::path(post, path = "/api/v1/schedules/{name}/run", tag = "schedules",
    params(("name" = String, Path, description = "Schedule name")),
    responses((status = 200, description = "The job enqueued", body = ScheduleFireView),
        (status = 400, description = "Bad input", body = ErrorBody),
        (status = 404, description = "No such schedule", body = ErrorBody)))]
async fn run_schedule(
    State(app): State<AppState>,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<Json<ScheduleFireView>> {
    let schedule = app.store.schedule(name.as_str());
    let fired = schedule
        .run_now()
        .await?
        .ok_or_else(|| crate::ApiError::not_found("name", format!("no schedule {name:?}")))?;
    // Read back from the history, for its time.
    let fires = schedule.fires(1).await?;
    let view = match fires.into_iter().next() {
        Some(f) if f.job_id == fired.job_id => f.into(),
        _ => ScheduleFireView {
            schedule: fired.schedule,
            boundary_ms: fired.boundary_ms,
            queue: fired.queue,
            job_id: fired.job_id,
            fired_at_ms: fired.boundary_ms,
            manual: true,
        },
    };
    Ok(Json(view))
}

/// List a schedule's last fires.
///
/// The jobs the schedule enqueued, newest first: each boundary fired and
/// each manual run (the last 50 are kept).
#[utoipa::path(get, path = "/api/v1/schedules/{name}/fires", tag = "schedules",
    params(("name" = String, Path, description = "Schedule name"), FiresQuery),
    responses((status = 200, description = "Its last fires", body = ScheduleFires),
        (status = 400, description = "Bad input", body = ErrorBody),
        (status = 404, description = "No such schedule", body = ErrorBody)))]
async fn schedule_fires(
    State(app): State<AppState>,
    ApiPath(name): ApiPath<String>,
    crate::extract::ApiQuery(q): crate::extract::ApiQuery<FiresQuery>,
) -> ApiResult<Json<ScheduleFires>> {
    let limit = q.limit.unwrap_or(20);
    let most = alkstore::schedule::MAX_FIRES_KEPT;
    if !(1..=most).contains(&limit) {
        return Err(crate::ApiError::invalid(
            "limit",
            format!("must be 1 to {most}"),
        ));
    }
    let schedule = app.store.schedule(name.as_str());
    let fires = schedule.fires(limit).await?;
    // No fires may mean no schedule: say which, as `run` does.
    if fires.is_empty() && schedule.get().await?.is_none() {
        return Err(crate::ApiError::not_found(
            "name",
            format!("no schedule {name:?}"),
        ));
    }
    Ok(Json(ScheduleFires {
        fires: fires.into_iter().map(ScheduleFireView::from).collect(),
    }))
}
