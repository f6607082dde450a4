//! Rate limits over HTTP: one budget per name, shared by every process
//! and language that calls the store.

use std::time::Duration;

use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::{ApiJson, ApiPath};
use crate::AppState;

/// The most admissions per window a request may name.
const MAX_LIMIT: u32 = 1_000_000_000;

/// The longest window, in ms: the store's (a day).
const MAX_WINDOW_MS: u64 = 86_400_000;

pub(crate) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(acquire_rate))
}

/// The limit to admit a call under.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RateAcquireRequest {
    /// Admissions per window (1 to 1,000,000,000).
    #[schema(minimum = 1, maximum = 1000000000)]
    pub limit: u32,
    /// The window's length in ms (1 ms to 1 day). Use one window per name.
    #[schema(minimum = 1, maximum = 86400000)]
    pub per_ms: u64,
}

/// Whether the call was admitted.
#[derive(Debug, Serialize, ToSchema)]
pub struct RateDecisionView {
    /// Admitted: go ahead. Else wait until `reset_at_ms`.
    pub admitted: bool,
    /// Admissions left in the current window after this call.
    pub remaining: u32,
    /// When the current window ends (unix ms, the store's clock).
    pub reset_at_ms: i64,
}

/// Acquire a rate limit.
///
/// Admit one call under the store-wide limit `name` (`limit` per window of
/// `per_ms`), or refuse it when the window's budget is spent. A refusal
/// counts nothing.
#[utoipa::path(post, path = "/api/v1/rates/{name}/acquire", tag = "rate limits",
    params(("name" = String, Path, description = "Limit name")),
    request_body = RateAcquireRequest,
    responses((status = 200, description = "Admitted or refused", body = RateDecisionView),
        (status = 400, description = "Bad input", body = ErrorBody)))]
async fn acquire_rate(
    State(app): State<AppState>,
    ApiPath(name): ApiPath<String>,
    ApiJson(req): ApiJson<RateAcquireRequest>,
) -> ApiResult<Json<RateDecisionView>> {
    // Checked here to name the request's fields (the store names its own).
    if !(1..=MAX_LIMIT).contains(&req.limit) {
        return Err(ApiError::invalid(
            "limit",
            format!("must be 1 to {MAX_LIMIT}"),
        ));
    }
    if !(1..=MAX_WINDOW_MS).contains(&req.per_ms) {
        return Err(ApiError::invalid(
            "per_ms",
            format!("must be 1 to {MAX_WINDOW_MS} (a day)"),
        ));
    }
    let d = app
        .store
        .rate(name, req.limit, Duration::from_millis(req.per_ms))
        .acquire()
        .await?;
    Ok(Json(RateDecisionView {
        admitted: d.admitted,
        remaining: d.remaining,
        reset_at_ms: d.reset_at_ms,
    }))
}
