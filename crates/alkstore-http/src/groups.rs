//! Consumer groups over HTTP: every group, and one group's buckets (owner,
//! epoch, lease expiry, checkpoint, lag): the dashboard's ownership grid.

use alkstore::prelude::*;
use alkstore_core::group::{BucketStatus, GroupInfo};
use axum::extract::State;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::error::{ApiResult, ErrorBody};
use crate::extract::ApiPath;
use crate::AppState;

pub(crate) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_groups))
        .routes(routes!(group_status))
}

/// A group in a listing.
#[derive(Debug, Serialize, ToSchema)]
pub struct GroupView {
    /// The group.
    pub group: String,
    /// The stream it reads.
    pub stream: String,
    /// Its bucket count.
    pub buckets: u32,
    /// Distinct workers holding an unexpired lease.
    pub live_owners: u32,
    /// Live members, with or without buckets.
    pub live_workers: u32,
}

impl From<GroupInfo> for GroupView {
    fn from(g: GroupInfo) -> Self {
        GroupView {
            group: g.group,
            stream: g.stream,
            buckets: g.buckets,
            live_owners: g.live_owners,
            live_workers: g.live_workers,
        }
    }
}

/// Every group.
#[derive(Debug, Serialize, ToSchema)]
pub struct GroupList {
    /// By name.
    pub groups: Vec<GroupView>,
}

/// One bucket's lease and progress.
#[derive(Debug, Serialize, ToSchema)]
pub struct BucketView {
    /// The bucket, from 0.
    pub bucket: u32,
    /// Its holder (null: never taken, or released).
    pub owner: Option<String>,
    /// Claims so far: grows on every change of owner.
    pub epoch: i64,
    /// When the lease lapses (unix ms).
    pub expires_at_ms: Option<i64>,
    /// Lapsed by the database's clock: the bucket is up for grabs.
    pub expired: bool,
    /// The last offset handled in the bucket.
    pub checkpoint: i64,
    /// Events of the bucket after its checkpoint.
    pub lag: u64,
}

impl From<BucketStatus> for BucketView {
    fn from(b: BucketStatus) -> Self {
        BucketView {
            bucket: b.bucket,
            owner: b.owner,
            epoch: b.epoch,
            expires_at_ms: b.expires_at_ms,
            expired: b.expired,
            checkpoint: b.checkpoint,
            lag: b.lag,
        }
    }
}

/// A group's buckets.
#[derive(Debug, Serialize, ToSchema)]
pub struct GroupStatusView {
    /// The group.
    pub group: String,
    /// The stream it reads.
    pub stream: String,
    /// Every bucket, by number.
    pub buckets: Vec<BucketView>,
}

#[utoipa::path(get, path = "/api/v1/groups", tag = "consumer groups",
    responses((status = 200, description = "Every consumer group", body = GroupList)))]
async fn list_groups(State(app): State<AppState>) -> ApiResult<Json<GroupList>> {
    let groups = app.store.engine().group_list().await?;
    Ok(Json(GroupList {
        groups: groups.into_iter().map(GroupView::from).collect(),
    }))
}

#[utoipa::path(get, path = "/api/v1/groups/{group}", tag = "consumer groups",
    params(("group" = String, Path, description = "Group name")),
    responses((status = 200, description = "Each bucket's owner, epoch, lease and lag", body = GroupStatusView),
        (status = 404, description = "No such group", body = ErrorBody)))]
async fn group_status(
    State(app): State<AppState>,
    ApiPath(group): ApiPath<String>,
) -> ApiResult<Json<GroupStatusView>> {
    let s = app.store.engine().group_status(group).await?;
    Ok(Json(GroupStatusView {
        group: s.group,
        stream: s.stream,
        buckets: s.buckets.into_iter().map(BucketView::from).collect(),
    }))
}
