//! Locks over HTTP: acquire, renew, release (owner and fencing token), and
//! the list of holders.

use std::time::Duration;

use alkstore_core::lock::{LockGrant, LockInfo, LockReleased, LockRenewed};
use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::error::{ApiResult, ErrorBody};
use crate::extract::{ApiJson, ApiPath};
use crate::AppState;

pub(crate) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_locks))
        .routes(routes!(acquire))
        .routes(routes!(renew))
        .routes(routes!(release))
}

/// A lock and its holder.
#[derive(Debug, Serialize, ToSchema)]
pub struct LockView {
    /// Its name.
    pub name: String,
    /// Its holder (null once released).
    pub owner: Option<String>,
    /// The fencing token of the last grant: grows with every grant.
    pub token: i64,
    /// When the hold lapses (unix ms).
    pub expires_at_ms: i64,
    /// When it was granted (unix ms).
    pub acquired_at_ms: i64,
}

impl From<LockInfo> for LockView {
    fn from(l: LockInfo) -> Self {
        LockView {
            name: l.name,
            owner: l.owner,
            token: l.token,
            expires_at_ms: l.expires_at_ms,
            acquired_at_ms: l.acquired_at_ms,
        }
    }
}

/// Every lock.
#[derive(Debug, Serialize, ToSchema)]
pub struct LockList {
    /// By name.
    pub locks: Vec<LockView>,
}

/// Take or renew a lock for a while.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AcquireRequest {
    /// Who holds it.
    #[schema(min_length = 1, max_length = 200, pattern = "^[^\\u0000]+$")]
    pub owner: String,
    /// How long the hold lasts unless renewed, in ms (the store's clock;
    /// 1 ms to a day).
    #[schema(minimum = 1, maximum = 86_400_000)]
    pub ttl_ms: u64,
}

/// Renew a held lock.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RenewRequest {
    /// Who holds it.
    #[schema(min_length = 1, max_length = 200, pattern = "^[^\\u0000]+$")]
    pub owner: String,
    /// The token of the grant.
    pub token: i64,
    /// The new hold, in ms from now (1 ms to a day).
    #[schema(minimum = 1, maximum = 86_400_000)]
    pub ttl_ms: u64,
}

/// Release a held lock.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReleaseRequest {
    /// Who holds it.
    #[schema(min_length = 1, max_length = 200, pattern = "^[^\\u0000]+$")]
    pub owner: String,
    /// The token of the grant.
    pub token: i64,
}

/// A grant, or why not.
#[derive(Debug, Serialize, ToSchema)]
pub struct GrantView {
    /// True when the caller holds the lock now.
    pub held: bool,
    /// The grant's fencing token (pass it to whatever the lock guards).
    pub token: Option<i64>,
    /// When the hold lapses (unix ms).
    pub expires_at_ms: Option<i64>,
}

impl From<Option<LockGrant>> for GrantView {
    fn from(g: Option<LockGrant>) -> Self {
        GrantView {
            held: g.is_some(),
            token: g.as_ref().map(|g| g.token),
            expires_at_ms: g.as_ref().map(|g| g.expires_at_ms),
        }
    }
}

/// Whether a release took effect.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReleasedView {
    /// False when the caller no longer held it.
    pub released: bool,
}

/// List every lock.
///
/// Every lock with its holder, fencing token and expiry.
#[utoipa::path(get, path = "/api/v1/locks", tag = "locks",
    responses((status = 200, description = "Every lock and its holder", body = LockList)))]
async fn list_locks(State(app): State<AppState>) -> ApiResult<Json<LockList>> {
    let locks = app.store.locks().await?;
    Ok(Json(LockList {
        locks: locks.into_iter().map(LockView::from).collect(),
    }))
}

/// Acquire a lock.
///
/// Take the lock for `ttl_ms` if it is free or lapsed; the grant's fencing
/// token grows on every change of holder.
#[utoipa::path(post, path = "/api/v1/locks/{name}/acquire", tag = "locks", operation_id = "acquire_lock",
    params(("name" = String, Path, description = "Lock name")),
    request_body = AcquireRequest,
    responses((status = 200, description = "Granted, or held by another", body = GrantView),
        (status = 400, description = "Bad input", body = ErrorBody)))]
async fn acquire(
    State(app): State<AppState>,
    ApiPath(name): ApiPath<String>,
    ApiJson(r): ApiJson<AcquireRequest>,
) -> ApiResult<Json<GrantView>> {
    let grant = app
        .store
        .lock(name)
        .owner(r.owner)
        .ttl(Duration::from_millis(r.ttl_ms))
        .grant()
        .await?;
    Ok(Json(grant.into()))
}

/// Renew a lock.
///
/// Extend the holder's lease by `ttl_ms`; `held: false` when it is no longer
/// the holder.
#[utoipa::path(post, path = "/api/v1/locks/{name}/renew", tag = "locks", operation_id = "renew_lock",
    params(("name" = String, Path, description = "Lock name")),
    request_body = RenewRequest,
    responses((status = 200, description = "Renewed, or no longer held", body = GrantView),
        (status = 400, description = "Bad input", body = ErrorBody)))]
async fn renew(
    State(app): State<AppState>,
    ApiPath(name): ApiPath<String>,
    ApiJson(r): ApiJson<RenewRequest>,
) -> ApiResult<Json<GrantView>> {
    let renewed = app
        .store
        .lock(name)
        .owner(r.owner)
        .ttl(Duration::from_millis(r.ttl_ms))
        .renew(r.token)
        .await?;
    Ok(Json(
        match renewed {
            LockRenewed::Held(g) => Some(g),
            LockRenewed::NotHeld => None,
        }
        .into(),
    ))
}

/// Release a lock.
///
/// Free the lock if the caller still holds it under the token.
#[utoipa::path(post, path = "/api/v1/locks/{name}/release", tag = "locks", operation_id = "release_lock",
    params(("name" = String, Path, description = "Lock name")),
    request_body = ReleaseRequest,
    responses((status = 200, description = "Released, or no longer held", body = ReleasedView),
        (status = 400, description = "Bad input", body = ErrorBody)))]
async fn release(
    State(app): State<AppState>,
    ApiPath(name): ApiPath<String>,
    ApiJson(r): ApiJson<ReleaseRequest>,
) -> ApiResult<Json<ReleasedView>> {
    let released = app.store.lock(name).owner(r.owner).release(r.token).await?;
    Ok(Json(ReleasedView {
        released: matches!(released, LockReleased::Released),
    }))
}
