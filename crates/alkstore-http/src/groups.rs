//! Consumer groups over HTTP: every group, one group's buckets (owner,
//! epoch, lease expiry, checkpoint, lag): the dashboard's ownership grid;
//! a group's dead letters (list, requeue, purge); and its lease history
//! (handoffs by cause: failovers apart from rebalances).

use alkstore_core::group::{validate_group_name, BucketStatus, GroupDead, GroupInfo};
use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::payload::decode;
use crate::queues::{batch_limit, Count, MAX_BATCH};
use crate::AppState;

pub(crate) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_groups))
        .routes(routes!(group_status))
        .routes(routes!(group_dead_list))
        .routes(routes!(group_dead_requeue))
        .routes(routes!(group_dead_purge))
        .routes(routes!(group_handoffs))
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
    /// Its dead letters (events its handler gave up on).
    pub dead: u64,
}

impl From<GroupInfo> for GroupView {
    fn from(g: GroupInfo) -> Self {
        GroupView {
            group: g.group,
            stream: g.stream,
            buckets: g.buckets,
            live_owners: g.live_owners,
            live_workers: g.live_workers,
            dead: g.dead,
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

/// List every consumer group.
///
/// Every consumer group with its stream, bucket count, live owners and
/// workers, and its dead letters.
#[utoipa::path(get, path = "/api/v1/groups", tag = "consumer groups",
    responses((status = 200, description = "Every consumer group", body = GroupList)))]
async fn list_groups(State(app): State<AppState>) -> ApiResult<Json<GroupList>> {
    let groups = app.store.groups().await?;
    Ok(Json(GroupList {
        groups: groups.into_iter().map(GroupView::from).collect(),
    }))
}

/// Get a group's buckets.
///
/// Each bucket's owner, epoch, lease expiry, checkpoint and lag: who owns
/// which share of the stream.
#[utoipa::path(get, path = "/api/v1/groups/{group}", tag = "consumer groups",
    params(("group" = String, Path, description = "Group name")),
    responses((status = 200, description = "Each bucket's owner, epoch, lease and lag", body = GroupStatusView),
        (status = 404, description = "No such group", body = ErrorBody)))]
async fn group_status(
    State(app): State<AppState>,
    ApiPath(group): ApiPath<String>,
) -> ApiResult<Json<GroupStatusView>> {
    let s = app.store.group(group).status().await?;
    Ok(Json(GroupStatusView {
        group: s.group,
        stream: s.stream,
        buckets: s.buckets.into_iter().map(BucketView::from).collect(),
    }))
}

/// An event a group's handler gave up on.
#[derive(Debug, Serialize, ToSchema)]
pub struct GroupDeadView {
    /// The event's offset (its id in the group's dead letters).
    pub offset: i64,
    /// Its bucket.
    pub bucket: u32,
    /// Its stream.
    pub stream: String,
    /// Its key.
    pub key: Option<String>,
    /// The payload (null when not JSON; see `payload_base64`).
    pub payload: serde_json::Value,
    /// The payload's bytes in base64, when they are not JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload_base64: Option<String>,
    /// The handler's last error.
    pub error: String,
    /// How many times the handler ran.
    pub attempts: u32,
    /// When it was given up on (unix seconds).
    pub failed_at: i64,
    /// When it was published (unix seconds).
    pub created_at: i64,
    /// Asked to run again and not yet taken by its bucket's holder.
    pub requeued: bool,
}

impl From<GroupDead> for GroupDeadView {
    fn from(d: GroupDead) -> Self {
        let (payload, payload_base64) = decode(&d.payload);
        GroupDeadView {
            offset: d.offset,
            bucket: d.bucket,
            stream: d.stream,
            key: d.key,
            payload,
            payload_base64,
            error: d.error,
            attempts: d.attempts,
            failed_at: d.failed_at,
            created_at: d.created_at,
            requeued: d.requeued,
        }
    }
}

/// A page of a group's dead letters.
#[derive(Debug, Serialize, ToSchema)]
pub struct GroupDeadPage {
    /// Lowest offsets first.
    pub dead: Vec<GroupDeadView>,
    /// Pass as `after` for the next page (absent on the last).
    pub next_after: Option<i64>,
}

/// Paging through a group's dead letters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct GroupDeadQuery {
    /// Start after this offset (default 0).
    pub after: Option<i64>,
    /// 1 to 1,000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u32>,
}

/// Which of a group's dead letters to requeue or purge.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GroupDeadSelectRequest {
    /// Only these offsets, at most 1,000 (absent: every dead letter of the
    /// group; an empty list: none).
    #[schema(max_items = 1000)]
    pub offsets: Option<Vec<i64>>,
}

impl GroupDeadSelectRequest {
    /// `group` (its name checked first, even when the selection is empty)
    /// and the offsets for the store (empty: all of the group's), or `None`
    /// when the request names none.
    fn select(self, group: String) -> ApiResult<Option<(String, Vec<i64>)>> {
        validate_group_name(&group)?;
        Ok(self.offsets()?.map(|offsets| (group, offsets)))
    }

    /// The offsets for the store (empty: all of the group's), or `None`
    /// when the request names none.
    fn offsets(self) -> ApiResult<Option<Vec<i64>>> {
        match self.offsets {
            None => Ok(Some(Vec::new())),
            Some(o) if o.is_empty() => Ok(None),
            Some(o) if o.len() > MAX_BATCH => Err(ApiError::invalid(
                "offsets",
                format!("at most {MAX_BATCH} offsets in one call"),
            )),
            Some(o) => Ok(Some(o)),
        }
    }
}

/// List a group's dead letters.
///
/// A page of the events the group's handler gave up on, lowest offsets
/// first, each with its last error, attempts and whether it is requeued.
#[utoipa::path(get, path = "/api/v1/groups/{group}/dead", tag = "consumer groups",
    params(("group" = String, Path, description = "Group name"), GroupDeadQuery),
    responses((status = 200, description = "A page of the group's dead letters", body = GroupDeadPage),
        (status = 400, description = "Bad input", body = ErrorBody)))]
async fn group_dead_list(
    State(app): State<AppState>,
    ApiPath(group): ApiPath<String>,
    ApiQuery(q): ApiQuery<GroupDeadQuery>,
) -> ApiResult<Json<GroupDeadPage>> {
    let limit = batch_limit(q.limit, 100)?;
    let dead = app
        .store
        .group(group)
        .dead_letters(q.after.unwrap_or(0), limit)
        .await?;
    let next_after = if dead.len() >= limit as usize {
        dead.last().map(|d| d.offset)
    } else {
        None
    };
    Ok(Json(GroupDeadPage {
        dead: dead.into_iter().map(GroupDeadView::from).collect(),
        next_after,
    }))
}

/// Requeue a group's dead letters.
///
/// Ask for the chosen dead letters (default: all of the group's) to run
/// again: the worker holding each one's bucket takes it within a poll
/// interval and deletes it when its handler succeeds (a failure records the
/// new error and leaves it dead).
#[utoipa::path(post, path = "/api/v1/groups/{group}/dead/requeue", tag = "consumer groups",
    params(("group" = String, Path, description = "Group name")),
    request_body(content = GroupDeadSelectRequest, description = "Which ones (default all of the group's)"),
    responses((status = 200, description = "How many were marked to run again", body = Count),
        (status = 400, description = "Bad input", body = ErrorBody)))]
async fn group_dead_requeue(
    State(app): State<AppState>,
    ApiPath(group): ApiPath<String>,
    ApiJson(req): ApiJson<GroupDeadSelectRequest>,
) -> ApiResult<Json<Count>> {
    let Some((group, offsets)) = req.select(group)? else {
        return Ok(Json(Count { count: 0 }));
    };
    let count = app.store.group(group).requeue_dead(offsets).await?;
    Ok(Json(Count { count }))
}

/// Purge a group's dead letters.
///
/// Delete the chosen dead letters (default: all of the group's) for good.
/// Their events stay in the stream; the group's checkpoints do not move.
#[utoipa::path(post, path = "/api/v1/groups/{group}/dead/purge", tag = "consumer groups",
    params(("group" = String, Path, description = "Group name")),
    request_body(content = GroupDeadSelectRequest, description = "Which ones (default all of the group's)"),
    responses((status = 200, description = "Deleted for good", body = Count),
        (status = 400, description = "Bad input", body = ErrorBody)))]
async fn group_dead_purge(
    State(app): State<AppState>,
    ApiPath(group): ApiPath<String>,
    ApiJson(req): ApiJson<GroupDeadSelectRequest>,
) -> ApiResult<Json<Count>> {
    let Some((group, offsets)) = req.select(group)? else {
        return Ok(Json(Count { count: 0 }));
    };
    let count = app.store.group(group).purge_dead(offsets).await?;
    Ok(Json(Count { count }))
}

/// One change of a bucket's holder.
#[derive(Debug, Serialize, ToSchema)]
pub struct HandoffView {
    /// The bucket.
    pub bucket: u32,
    /// The new lease's epoch.
    pub epoch: i64,
    /// Who held it before (null for a first lease).
    pub from_worker: Option<String>,
    /// Who holds it now.
    pub to_worker: String,
    /// `first`, `rebalance` (given back to make room for a member that
    /// joined), `leave` (its holder left) or `lapse` (its holder's lease
    /// ran out: a failover).
    pub cause: String,
    /// When (unix ms).
    pub at_ms: i64,
}

/// Handoffs counted by cause since the group was created.
#[derive(Debug, Default, Serialize, ToSchema)]
pub struct HandoffTotals {
    /// First leases.
    pub first: u64,
    /// Rebalances.
    pub rebalance: u64,
    /// Leaves.
    pub leave: u64,
    /// Lapses: failovers.
    pub lapse: u64,
}

/// A group's lease history.
#[derive(Debug, Serialize, ToSchema)]
pub struct GroupHandoffsView {
    /// Newest first (a week is kept).
    pub handoffs: Vec<HandoffView>,
    /// Every handoff by cause.
    pub totals: HandoffTotals,
}

/// How many handoffs to list.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct HandoffsQuery {
    /// 1 to 1,000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u32>,
}

/// List a group's handoffs.
///
/// Who took which bucket from whom, and why: a first lease, a rebalance,
/// a leave, or a lapse (a failover), newest first; and every handoff
/// counted by cause, so failovers show apart from rebalances.
#[utoipa::path(get, path = "/api/v1/groups/{group}/handoffs", tag = "consumer groups",
    params(("group" = String, Path, description = "Group name"), HandoffsQuery),
    responses((status = 200, description = "The group's lease history", body = GroupHandoffsView),
        (status = 400, description = "Bad input", body = ErrorBody),
        (status = 404, description = "No such group", body = ErrorBody)))]
async fn group_handoffs(
    State(app): State<AppState>,
    ApiPath(group): ApiPath<String>,
    ApiQuery(q): ApiQuery<HandoffsQuery>,
) -> ApiResult<Json<GroupHandoffsView>> {
    use alkstore::group::HandoffCause;
    let limit = batch_limit(q.limit, 100)?;
    let handle = app.store.group(group);
    let h = handle.handoffs(limit).await?;
    if h.recent.is_empty() && h.totals.is_empty() {
        // Nothing recorded may mean no group: say which.
        handle.status_without_lag().await?;
    }
    let mut totals = HandoffTotals::default();
    for (cause, n) in h.totals {
        *match cause {
            HandoffCause::First => &mut totals.first,
            HandoffCause::Rebalance => &mut totals.rebalance,
            HandoffCause::Leave => &mut totals.leave,
            HandoffCause::Lapse => &mut totals.lapse,
        } += n;
    }
    Ok(Json(GroupHandoffsView {
        handoffs: h
            .recent
            .into_iter()
            .map(|x| HandoffView {
                bucket: x.bucket,
                epoch: x.epoch,
                from_worker: x.from_worker,
                to_worker: x.to_worker,
                cause: x.cause.as_str().to_string(),
                at_ms: x.at_ms,
            })
            .collect(),
        totals,
    }))
}
