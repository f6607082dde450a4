//! Job results over HTTP: what a worker saved when it acked a job (`ack`
//! with `result`), read or waited for by whoever enqueued it.

use alkstore_core::results::JobOutput;
use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::{ApiPath, ApiQuery};
use crate::payload::decode;
use crate::queues::JobId;
use crate::AppState;

pub(crate) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(get_result))
}

/// How long to wait for a result.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ResultQuery {
    /// Wait up to this many ms (0 to 30,000, default 0) for the result to
    /// be saved.
    #[param(maximum = 30000)]
    pub wait_ms: Option<u64>,
}

/// A job's saved result.
#[derive(Debug, Serialize, ToSchema)]
pub struct ResultView {
    /// The job.
    pub job_id: i64,
    /// The result (null when not JSON; see `result_base64`).
    pub result: serde_json::Value,
    /// The result's bytes in base64, when they are not JSON (saved by a
    /// program that stores raw bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_base64: Option<String>,
    /// When it was saved (unix ms).
    pub saved_at_ms: i64,
    /// When it is dropped (unix ms).
    pub expires_at_ms: i64,
}

impl From<JobOutput> for ResultView {
    fn from(o: JobOutput) -> Self {
        let (result, result_base64) = decode(&o.value);
        ResultView {
            job_id: o.job_id,
            result,
            result_base64,
            saved_at_ms: o.saved_at_ms,
            expires_at_ms: o.expires_at_ms,
        }
    }
}

/// Get a job's result.
///
/// The value its worker saved (an ack with `result`, or a Rust handler's
/// return value), kept a day; waits up to `wait_ms` for it to be saved,
/// and answers as soon as it is (in this process or another).
#[utoipa::path(get, path = "/api/v1/jobs/{id}/result", tag = "jobs",
    params(("id" = i64, Path, description = "Job id"), ResultQuery),
    responses((status = 200, description = "The result", body = ResultView),
        (status = 400, description = "Bad input", body = ErrorBody),
        (status = 404, description = "No result saved (yet, or it expired) within the wait", body = ErrorBody)))]
async fn get_result(
    State(app): State<AppState>,
    ApiPath(JobId(id)): ApiPath<JobId>,
    ApiQuery(q): ApiQuery<ResultQuery>,
) -> ApiResult<Json<ResultView>> {
    let wait = app.wait(q.wait_ms)?;
    let results = app.store.results();
    let found = if wait.is_zero() {
        results.get(id).await?
    } else {
        results.wait(id, wait).await?
    };
    match found {
        Some(o) => Ok(Json(o.into())),
        None => Err(ApiError::not_found(
            "id",
            format!("no result for job {id}: not saved yet, or expired"),
        )),
    }
}
