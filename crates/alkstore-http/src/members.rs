//! Consumer-group membership over HTTP, for workers in any language: join,
//! heartbeat (renew, take the fair share, give back the surplus), claim the
//! events of the buckets held (long-poll), checkpoint under the lease's
//! epoch, leave. The same store calls and fencing as the Rust runner: a
//! checkpoint under an epoch the member no longer holds is refused (409
//! `not_held`), and the bucket's next holder reads on from the last
//! checkpoint, so nothing checkpointed is handled twice by the group and
//! nothing unhandled is skipped.
//!
//! The server keeps no state per member: the store's leases and
//! checkpoints are the whole session, so any server behind a balancer can
//! answer any call.

use std::collections::BTreeMap;
use std::time::Duration;

use alkstore_core::group::{BucketEvent, BucketLease};
use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::atomic::CheckpointView;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::{ApiJson, ApiPath};
use crate::payload::decode;
use crate::AppState;

/// A member's lease time when the request names none.
const DEFAULT_TTL_MS: u64 = 30_000;
/// The longest lease a member may ask for: a dead member's buckets wait
/// this long for another.
const MAX_TTL_MS: u64 = 600_000;
/// A new group's bucket count when the join names none (the Rust runner's
/// default too).
const DEFAULT_BUCKETS: u32 = 16;
/// Pages a claim reads past events already checkpointed in some buckets
/// before it answers with what it has.
const MAX_PAGES: usize = 8;

pub(crate) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(join_group))
        .routes(routes!(member_heartbeat))
        .routes(routes!(member_claim))
        .routes(routes!(member_checkpoint))
        .routes(routes!(leave_group))
}

/// Join a group as a member.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct JoinRequest {
    /// The stream the group reads (it must be the group's stream when the
    /// group exists).
    #[schema(min_length = 1, max_length = 200, pattern = "^[^\\u0000]+$")]
    pub stream: String,
    /// This member's id: unique per running process (default: one is
    /// made up). A restarted process should join under a new id, so it
    /// never inherits its dead self's leases.
    #[schema(min_length = 1, max_length = 200, pattern = "^[^\\u0000]+$")]
    pub member: Option<String>,
    /// The group's bucket count, used when this join creates the group
    /// (1 to 4,096; default: the group's own, or 16 for a new group). A
    /// count other than an existing group's is refused (409).
    #[schema(minimum = 1, maximum = 4096)]
    pub buckets: Option<u32>,
    /// How long the member's leases last unless renewed (1 to 600,000 ms;
    /// default 30,000). Heartbeat (or claim) at least every third of it.
    #[schema(minimum = 1, maximum = 600000)]
    pub ttl_ms: Option<u64>,
}

/// A heartbeat's lease time.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HeartbeatRequest {
    /// How long the leases last from now (1 to 600,000 ms; default 30,000).
    #[schema(minimum = 1, maximum = 600000)]
    pub ttl_ms: Option<u64>,
}

/// What a claim asks for.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MemberClaimRequest {
    /// Most events to return (1 to 1,000; default 100).
    #[schema(minimum = 1, maximum = 1000)]
    pub limit: Option<u32>,
    /// Wait up to this many ms (0 to 30,000; default 0) for the first event.
    #[schema(maximum = 30000)]
    pub wait_ms: Option<u64>,
    /// The leases' time from now (1 to 600,000 ms; default 30,000).
    #[schema(minimum = 1, maximum = 600000)]
    pub ttl_ms: Option<u64>,
}

/// A checkpoint under a lease.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MemberCheckpointRequest {
    /// The bucket.
    #[schema(maximum = 4095)]
    pub bucket: u32,
    /// The epoch its events were claimed under (each event carries it).
    pub epoch: i64,
    /// The last offset handled in the bucket (a lower one than saved
    /// leaves the checkpoint where it is).
    pub offset: i64,
}

/// A bucket the member holds.
#[derive(Debug, Serialize, ToSchema)]
pub struct LeaseView {
    /// The bucket, from 0.
    pub bucket: u32,
    /// The lease's epoch: checkpoint under it.
    pub epoch: i64,
    /// The last offset handled in the bucket (0: none yet).
    pub checkpoint: i64,
    /// When the lease lapses unless renewed (unix ms, the database's clock).
    pub expires_at_ms: i64,
}

impl From<&BucketLease> for LeaseView {
    fn from(l: &BucketLease) -> Self {
        LeaseView {
            bucket: l.bucket,
            epoch: l.epoch,
            checkpoint: l.checkpoint,
            expires_at_ms: l.expires_at_ms,
        }
    }
}

/// A member's standing in its group after a join or heartbeat.
#[derive(Debug, Serialize, ToSchema)]
pub struct Membership {
    /// The group.
    pub group: String,
    /// The stream it reads.
    pub stream: String,
    /// This member's id: name it in every later call.
    pub member: String,
    /// The leases' time: heartbeat or claim well within it.
    pub ttl_ms: u64,
    /// The group's bucket count.
    pub buckets: u32,
    /// Live members, this one included.
    pub live_members: u32,
    /// The buckets held now, by number.
    pub leases: Vec<LeaseView>,
}

/// An event of a held bucket.
#[derive(Debug, Serialize, ToSchema)]
pub struct GroupEventView {
    /// Its bucket.
    pub bucket: u32,
    /// The bucket's lease epoch: checkpoint under it.
    pub epoch: i64,
    /// Its offset.
    pub offset: i64,
    /// Its key (all events of a key are in one bucket, in order).
    pub key: Option<String>,
    /// The payload (null when not JSON; see `payload_base64`).
    pub payload: serde_json::Value,
    /// The payload's bytes in base64, when they are not JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload_base64: Option<String>,
    /// When it was published (unix seconds).
    pub created_at: i64,
}

/// The events of the member's buckets after their checkpoints.
#[derive(Debug, Serialize, ToSchema)]
pub struct MemberClaim {
    /// The buckets held now (after the claim's heartbeat).
    pub leases: Vec<LeaseView>,
    /// In offset order (so in order within each bucket and key).
    pub events: Vec<GroupEventView>,
}

/// How many leases a leave released.
#[derive(Debug, Serialize, ToSchema)]
pub struct Left {
    /// Leases released.
    pub released: u64,
}

/// A member id for a join that names none, in the one worker-id format.
fn new_member_id() -> String {
    alkstore::process::new_worker_id()
}

/// A request's lease time, checked.
fn ttl(ttl_ms: Option<u64>) -> ApiResult<Duration> {
    match ttl_ms.unwrap_or(DEFAULT_TTL_MS) {
        ms @ 1..=MAX_TTL_MS => Ok(Duration::from_millis(ms)),
        _ => Err(ApiError::invalid(
            "ttl_ms",
            format!("must be 1 to {MAX_TTL_MS}"),
        )),
    }
}

/// One heartbeat, as the Rust runner's coordinator makes it: renew every
/// lease (and the membership), then take buckets up to the fair share
/// (buckets / live members, rounded up) or give back those beyond it, the
/// highest first, so members that joined get their share.
async fn heartbeat(app: &AppState, group: &str, member: &str, ttl: Duration) -> ApiResult<Beat> {
    let me = app.store.group(group).member(member);
    let renewal = me.renew(ttl).await?;
    let mut held: BTreeMap<u32, BucketLease> =
        renewal.held.into_iter().map(|l| (l.bucket, l)).collect();
    let live = renewal.live_workers.max(1);
    let mine: Vec<u32> = held.keys().copied().collect();
    match alkstore::group::rebalance(renewal.buckets, live, &mine) {
        // Every missing bucket at once: a client beats far less often
        // than the runner's coordinator passes.
        alkstore::group::Rebalance::Take(want) => {
            let taken = me.claim(ttl, want).await?;
            held.extend(taken.into_iter().map(|l| (l.bucket, l)));
        }
        alkstore::group::Rebalance::Give(surplus) => {
            me.release(surplus.clone()).await?;
            for b in surplus {
                held.remove(&b);
            }
        }
        alkstore::group::Rebalance::Hold => {}
    }
    Ok(Beat {
        held,
        buckets: renewal.buckets,
        live,
    })
}

/// What a heartbeat found.
struct Beat {
    held: BTreeMap<u32, BucketLease>,
    buckets: u32,
    live: u32,
}

impl Beat {
    fn leases(&self) -> Vec<LeaseView> {
        self.held.values().map(LeaseView::from).collect()
    }

    fn membership(
        &self,
        group: String,
        stream: String,
        member: String,
        ttl: Duration,
    ) -> Membership {
        Membership {
            group,
            stream,
            member,
            ttl_ms: u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX),
            buckets: self.buckets,
            live_members: self.live,
            leases: self.leases(),
        }
    }
}

/// The group's stream, for answers that name it.
async fn stream_of(app: &AppState, group: &str) -> ApiResult<String> {
    let status = app.store.group(group).status_without_lag().await?;
    Ok(status.stream)
}

/// Join a consumer group.
///
/// Become a member of `group` (created on `stream` with `buckets` buckets
/// when it does not exist) and take this member's fair share of the
/// buckets that are free. Then claim events, handle them, checkpoint each
/// bucket, and heartbeat (a claim heartbeats too) well within `ttl_ms`.
#[utoipa::path(post, path = "/api/v1/groups/{group}/members", tag = "consumer groups",
    params(("group" = String, Path, description = "Group name")),
    request_body = JoinRequest,
    responses((status = 200, description = "Joined: the member's id and leases", body = Membership),
        (status = 400, description = "Bad input", body = ErrorBody),
        (status = 409, description = "The group exists on another stream", body = ErrorBody)))]
async fn join_group(
    State(app): State<AppState>,
    ApiPath(group): ApiPath<String>,
    ApiJson(req): ApiJson<JoinRequest>,
) -> ApiResult<Json<Membership>> {
    let ttl = ttl(req.ttl_ms)?;
    let handle = app.store.group(group.as_str());
    let member = req.member.unwrap_or_else(new_member_id);
    alkstore_core::validate::validate_worker(&member)
        .map_err(|e| ApiError::from(e).with_field("member"))?;
    let buckets = match req.buckets {
        Some(n) => n,
        // Not named: the group's own count, so any member can join an
        // existing group without knowing it.
        None => match handle.status_without_lag().await {
            Ok(status) => u32::try_from(status.buckets.len()).unwrap_or(DEFAULT_BUCKETS),
            Err(e) if e.kind() == alkstore::ErrorKind::NotFound => DEFAULT_BUCKETS,
            Err(e) => return Err(e.into()),
        },
    };
    handle
        .ensure(req.stream.clone(), buckets)
        .await
        .map_err(|e| match e.kind() {
            alkstore::ErrorKind::GroupMismatch => ApiError::from(e).with_field("stream"),
            _ => ApiError::from(e),
        })?;
    let beat = heartbeat(&app, &group, &member, ttl).await?;
    Ok(Json(beat.membership(group, req.stream, member, ttl)))
}

/// Heartbeat a group member.
///
/// Renew every lease the member holds, take buckets up to its fair share,
/// and give back those beyond it when members joined (a checkpoint under a
/// bucket given back is then refused, and its next holder reads on from
/// the last checkpoint). A member that misses its heartbeats past `ttl_ms`
/// loses its buckets to the others.
#[utoipa::path(post, path = "/api/v1/groups/{group}/members/{member}/heartbeat", tag = "consumer groups",
    params(("group" = String, Path, description = "Group name"),
        ("member" = String, Path, description = "The member's id")),
    request_body(content = HeartbeatRequest, description = "The leases' time (default 30,000 ms)"),
    responses((status = 200, description = "The member's leases now", body = Membership),
        (status = 400, description = "Bad input", body = ErrorBody),
        (status = 404, description = "No such group", body = ErrorBody)))]
async fn member_heartbeat(
    State(app): State<AppState>,
    ApiPath((group, member)): ApiPath<(String, String)>,
    ApiJson(req): ApiJson<HeartbeatRequest>,
) -> ApiResult<Json<Membership>> {
    let ttl = ttl(req.ttl_ms)?;
    let beat = heartbeat(&app, &group, &member, ttl).await?;
    let stream = stream_of(&app, &group).await?;
    Ok(Json(beat.membership(group, stream, member, ttl)))
}

/// Claim a member's events.
///
/// Heartbeat (as the heartbeat call does), then return the events of every
/// bucket held after its checkpoint, in offset order, each with its
/// bucket's epoch; wait up to `wait_ms` for the first. Until a bucket's
/// checkpoint moves, its events come again: handle them in order, then
/// checkpoint each bucket's last offset handled, then claim again. The
/// wait is cut to a third of `ttl_ms`, so a loop of claims keeps the
/// leases renewed.
#[utoipa::path(post, path = "/api/v1/groups/{group}/members/{member}/claim", tag = "consumer groups",
    params(("group" = String, Path, description = "Group name"),
        ("member" = String, Path, description = "The member's id")),
    request_body(content = MemberClaimRequest, description = "How many, and how long to wait"),
    responses((status = 200, description = "The leases held and their events (none when none came within the wait)", body = MemberClaim),
        (status = 400, description = "Bad input", body = ErrorBody),
        (status = 404, description = "No such group", body = ErrorBody)))]
async fn member_claim(
    State(app): State<AppState>,
    ApiPath((group, member)): ApiPath<(String, String)>,
    ApiJson(req): ApiJson<MemberClaimRequest>,
) -> ApiResult<Json<MemberClaim>> {
    let ttl = ttl(req.ttl_ms)?;
    // Cut to a third of the lease time: the leases were renewed as the
    // claim began and must be again before they lapse.
    let wait = app.wait(req.wait_ms)?.min(ttl / 3);
    let limit = crate::queues::batch_limit(req.limit, 100)?;
    let mut beat = heartbeat(&app, &group, &member, ttl).await?;
    if beat.held.is_empty() && !wait.is_zero() {
        // Nothing to read: wait here rather than have the client spin,
        // then look again for a bucket that came free.
        tokio::time::sleep(wait).await;
        beat = heartbeat(&app, &group, &member, ttl).await?;
    }
    let events = if beat.held.is_empty() {
        Vec::new()
    } else {
        let stream = stream_of(&app, &group).await?;
        let held = &beat.held;
        let me = app.store.group(group.as_str()).member(member.as_str());
        app.store
            .long_poll(
                wait,
                |w| w.concerns_stream(&stream),
                || read_after_checkpoints(&me, held, limit),
            )
            .await?
    };
    Ok(Json(MemberClaim {
        leases: beat.leases(),
        events: events
            .into_iter()
            .map(|e| {
                let epoch = beat.held.get(&e.bucket).map_or(0, |l| l.epoch);
                let (payload, payload_base64) = decode(&e.event.payload);
                GroupEventView {
                    bucket: e.bucket,
                    epoch,
                    offset: e.event.offset,
                    key: e.event.key,
                    payload,
                    payload_base64,
                    created_at: e.event.created_at,
                }
            })
            .collect(),
    }))
}

/// Up to `limit` events of the held buckets, each after its own bucket's
/// checkpoint: one scan from the lowest checkpoint, skipping what a bucket
/// further on already handled, a few pages at most.
async fn read_after_checkpoints(
    me: &alkstore::group::Member,
    held: &BTreeMap<u32, BucketLease>,
    limit: u32,
) -> alkstore::Result<Vec<BucketEvent>> {
    let buckets: Vec<u32> = held.keys().copied().collect();
    let mut after = held.values().map(|l| l.checkpoint).min().unwrap_or(0);
    let mut out = Vec::new();
    for _ in 0..MAX_PAGES {
        let page = me.read(buckets.clone(), after, limit).await?;
        let full = page.len() >= limit as usize;
        if let Some(last) = page.last() {
            after = last.event.offset;
        }
        out.extend(page.into_iter().filter(|e| {
            held.get(&e.bucket)
                .is_some_and(|l| e.event.offset > l.checkpoint)
        }));
        if !full || out.len() >= limit as usize {
            break;
        }
    }
    out.truncate(limit as usize);
    Ok(out)
}

/// Checkpoint a bucket.
///
/// Save the last offset handled in a bucket, under the epoch its events
/// were claimed with. Refused with 409 `not_held` when the member no
/// longer holds the bucket under that epoch (its lease lapsed or was given
/// back): the bucket's new holder handles those events from the last
/// checkpoint.
#[utoipa::path(post, path = "/api/v1/groups/{group}/members/{member}/checkpoint", tag = "consumer groups",
    params(("group" = String, Path, description = "Group name"),
        ("member" = String, Path, description = "The member's id")),
    request_body = MemberCheckpointRequest,
    responses((status = 200, description = "The bucket's checkpoint now", body = CheckpointView),
        (status = 400, description = "Bad input", body = ErrorBody),
        (status = 409, description = "The lease is no longer this member's under that epoch", body = ErrorBody)))]
async fn member_checkpoint(
    State(app): State<AppState>,
    ApiPath((group, member)): ApiPath<(String, String)>,
    ApiJson(req): ApiJson<MemberCheckpointRequest>,
) -> ApiResult<Json<CheckpointView>> {
    let checkpoint = app
        .store
        .group(group)
        .member(member)
        .checkpoint(req.bucket, req.epoch, req.offset)
        .await
        .map_err(|e| match e.kind() {
            alkstore::ErrorKind::NotHeld => ApiError::from(e).with_field("epoch"),
            _ => ApiError::from(e),
        })?;
    Ok(Json(CheckpointView { checkpoint }))
}

/// Leave a consumer group.
///
/// Release every lease the member holds and its membership at once, so the
/// other members take its buckets at their next heartbeat instead of
/// after its lease time.
#[utoipa::path(delete, path = "/api/v1/groups/{group}/members/{member}", tag = "consumer groups",
    params(("group" = String, Path, description = "Group name"),
        ("member" = String, Path, description = "The member's id")),
    responses((status = 200, description = "Left", body = Left),
        (status = 400, description = "Bad input", body = ErrorBody)))]
async fn leave_group(
    State(app): State<AppState>,
    ApiPath((group, member)): ApiPath<(String, String)>,
) -> ApiResult<Json<Left>> {
    let released = app.store.group(group).member(member).leave().await?;
    Ok(Json(Left { released }))
}
