//! Job queues over HTTP: enqueue, claim (long-poll), settle, inspect, and
//! the dead letters.

use std::time::Duration;

use alkstore::prelude::*;
use alkstore::{
    CancelOutcome, Claim, Clock, DeadListParams, DeadSelect, EnqueueOpts, Enqueued, Job,
    JobClaimParams, JobInfo, JobListParams, JobRetryParams, JobState, NewJob, QueueStats,
    QueueThroughput, QueueThroughputParams, RetryOutcome, SystemClock, THROUGHPUT_BUCKET_S,
};
use alkstore_core::queue::JobFailParams;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::payload::{decode, encode};
use crate::AppState;

/// The longest a claim may wait for a job.
pub const MAX_WAIT_MS: u64 = 30_000;
/// The most jobs one claim or one batch enqueue may carry.
pub const MAX_BATCH: usize = 1_000;

pub(crate) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_queues))
        .routes(routes!(queue_stats))
        .routes(routes!(throughput))
        .routes(routes!(enqueue, list_jobs))
        .routes(routes!(enqueue_batch))
        .routes(routes!(claim))
        .routes(routes!(get_job))
        .routes(routes!(ack))
        .routes(routes!(ack_batch))
        .routes(routes!(retry))
        .routes(routes!(fail))
        .routes(routes!(heartbeat))
        .routes(routes!(release))
        .routes(routes!(cancel))
        .routes(routes!(pause))
        .routes(routes!(resume))
        .routes(routes!(dead_list))
        .routes(routes!(dead_requeue))
        .routes(routes!(dead_purge))
}

/// One job to enqueue.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EnqueueRequest {
    /// Any JSON value; the handler gets it back as enqueued.
    pub payload: serde_json::Value,
    /// Higher runs first (default 0).
    #[serde(default)]
    pub priority: i32,
    /// Run no earlier than this many milliseconds from now (whole seconds:
    /// due times are kept in seconds).
    #[schema(maximum = 1_099_511_627_776_999_u64)]
    pub delay_ms: Option<u64>,
    /// Run no earlier than this unix time in seconds (wins over `delay_ms`).
    #[schema(minimum = -1_099_511_627_776_i64, maximum = 1_099_511_627_776_i64)]
    pub run_at: Option<i64>,
    /// Attempts allowed before the job is dead (default: the queue's, which
    /// is this schema's `default` unless the program that owns the store
    /// configured the queue otherwise).
    #[schema(minimum = 1, default = json!(alkstore::DEFAULT_MAX_ATTEMPTS))]
    pub max_attempts: Option<i32>,
    /// Dead as `expired` when not started this many milliseconds after due
    /// (at least 1,000).
    #[schema(minimum = 1000, maximum = 1_099_511_627_776_999_u64)]
    pub expires_in_ms: Option<u64>,
    /// At most one live job per queue with this key: a second enqueue
    /// returns the first one's id with `duplicate: true`.
    #[schema(min_length = 1, max_length = 200, pattern = "^[^\\u0000]+$")]
    pub unique_key: Option<String>,
}

impl EnqueueRequest {
    /// The job to store on `queue`.
    pub(crate) fn into_job(self, queue: &str) -> ApiResult<NewJob> {
        let opts = EnqueueOpts {
            priority: self.priority,
            delay: self.delay_ms.map(Duration::from_millis),
            run_at: self.run_at,
            max_attempts: match self.max_attempts {
                Some(n) => Some(
                    u32::try_from(n)
                        .map_err(|_| ApiError::invalid("max_attempts", "must be at least 1"))?,
                ),
                None => None,
            },
            expires_in: self.expires_in_ms.map(Duration::from_millis),
            unique_key: self.unique_key,
        };
        Ok(NewJob::new(queue, encode(&self.payload)?).with_opts(opts))
    }
}

/// Several jobs to enqueue in one transaction.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EnqueueBatchRequest {
    /// 1 to 1,000 jobs.
    #[schema(min_items = 1, max_items = 1000)]
    #[serde(deserialize_with = "crate::extract::objects")]
    pub jobs: Vec<EnqueueRequest>,
}

impl EnqueueBatchRequest {
    /// The jobs to store on `queue`: 1 to [`MAX_BATCH`].
    pub(crate) fn into_jobs(self, queue: &str) -> ApiResult<Vec<NewJob>> {
        check_batch("jobs", self.jobs.len())?;
        self.jobs.into_iter().map(|j| j.into_job(queue)).collect()
    }
}

/// An enqueued job.
#[derive(Debug, Serialize, ToSchema)]
pub struct EnqueuedJob {
    /// Its id (the existing job's, for a duplicate).
    pub id: i64,
    /// True when a live job with the same unique key was there already.
    pub duplicate: bool,
}

impl From<Enqueued> for EnqueuedJob {
    fn from(e: Enqueued) -> Self {
        EnqueuedJob {
            id: e.id(),
            duplicate: matches!(e, Enqueued::Duplicate(_)),
        }
    }
}

/// The jobs of a batch enqueue, in request order.
#[derive(Debug, Serialize, ToSchema)]
pub struct EnqueuedJobs {
    /// One per job asked.
    pub jobs: Vec<EnqueuedJob>,
}

/// Claim up to `limit` jobs, waiting up to `wait_ms` for the first.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ClaimRequest {
    /// Who claims: named in the claim, and needed to settle it.
    #[schema(min_length = 1, max_length = 200, pattern = "^[^\\u0000]+$")]
    pub worker: String,
    /// 1 to 1,000 (default 1).
    #[schema(minimum = 1, maximum = 1000)]
    pub limit: Option<u32>,
    /// 0 to 30,000 ms (default 0: answer at once). The wait ends as soon as
    /// a job is enqueued, in this process or another.
    #[schema(maximum = 30000)]
    pub wait_ms: Option<u64>,
}

/// A claimed job: run it, then ack, retry or fail it with `worker` and
/// `token`, and heartbeat it before `claim_expires_at` if it runs long.
#[derive(Debug, Serialize, ToSchema)]
pub struct ClaimedJob {
    /// Job id.
    pub id: i64,
    /// Its queue.
    pub queue: String,
    /// The payload as enqueued (null when it is not JSON; see
    /// `payload_base64`).
    pub payload: serde_json::Value,
    /// The payload's bytes in base64, when they are not JSON (a job
    /// enqueued by a program that stores raw bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload_base64: Option<String>,
    /// Priority.
    pub priority: i64,
    /// This attempt's number, from 1.
    pub attempt: u32,
    /// Attempts allowed.
    pub max_attempts: u32,
    /// This claim's token: settle and heartbeat with it.
    pub token: i64,
    /// When the claim lapses unless renewed (unix seconds).
    pub claim_expires_at: i64,
    /// When the job became due (unix seconds).
    pub run_at: i64,
    /// When it was enqueued (unix seconds).
    pub created_at: i64,
    /// Its unique key.
    pub unique_key: Option<String>,
}

impl From<Job> for ClaimedJob {
    fn from(j: Job) -> Self {
        let (payload, payload_base64) = decode(&j.payload);
        ClaimedJob {
            id: j.id,
            queue: j.queue,
            payload,
            payload_base64,
            priority: j.priority,
            attempt: j.attempt,
            max_attempts: j.max_attempts,
            token: j.claim_token,
            claim_expires_at: j.claim_expires_at,
            run_at: j.run_at,
            created_at: j.created_at,
            unique_key: j.unique_key,
        }
    }
}

/// Claimed jobs (empty when none came within the wait).
#[derive(Debug, Serialize, ToSchema)]
pub struct ClaimedJobs {
    /// In claim order: priority, then due time.
    pub jobs: Vec<ClaimedJob>,
}

/// The claim a settle or heartbeat acts on.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ClaimRef {
    /// The worker named in the claim.
    #[schema(min_length = 1, max_length = 200, pattern = "^[^\\u0000]+$")]
    pub worker: String,
    /// The claim's token.
    pub token: i64,
}

impl ClaimRef {
    /// The claim on job `id`.
    pub(crate) fn claim(self, id: i64) -> Claim {
        claim_of(id, self.worker, self.token)
    }
}

/// One claim of a batch ack.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ClaimItem {
    /// Job id.
    #[schema(minimum = 1)]
    pub id: i64,
    /// The worker named in the claim.
    #[schema(min_length = 1, max_length = 200, pattern = "^[^\\u0000]+$")]
    pub worker: String,
    /// The claim's token.
    pub token: i64,
}

/// Claims to ack in one transaction.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AckBatchRequest {
    /// 1 to 1,000 claims.
    #[schema(min_items = 1, max_items = 1000)]
    #[serde(deserialize_with = "crate::extract::objects")]
    pub claims: Vec<ClaimItem>,
}

/// Per claim, in request order: whether it was acked (false: no longer
/// held).
#[derive(Debug, Serialize, ToSchema)]
pub struct AckBatchResponse {
    /// One per claim.
    pub done: Vec<bool>,
}

/// A failed attempt: retried after a backoff (or `delay_ms`), or dead once
/// out of attempts.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RetryRequest {
    /// The worker named in the claim.
    #[schema(min_length = 1, max_length = 200, pattern = "^[^\\u0000]+$")]
    pub worker: String,
    /// The claim's token.
    pub token: i64,
    /// What went wrong (kept on the job).
    pub error: String,
    /// Retry after this many milliseconds instead of the queue's backoff.
    #[schema(maximum = 1_099_511_627_776_999_u64)]
    pub delay_ms: Option<u64>,
}

impl RetryRequest {
    /// The retry of job `id`.
    pub(crate) fn into_params(self, id: i64) -> JobRetryParams {
        JobRetryParams {
            claim: claim_of(id, self.worker, self.token),
            error: self.error,
            delay: self.delay_ms.map(Duration::from_millis),
        }
    }
}

/// A permanent failure: the job goes to the dead letters now.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FailRequest {
    /// The worker named in the claim.
    #[schema(min_length = 1, max_length = 200, pattern = "^[^\\u0000]+$")]
    pub worker: String,
    /// The claim's token.
    pub token: i64,
    /// Why (kept on the dead letter).
    pub error: String,
}

impl FailRequest {
    /// The failure of job `id`.
    pub(crate) fn into_params(self, id: i64) -> JobFailParams {
        JobFailParams {
            claim: claim_of(id, self.worker, self.token),
            error: self.error,
        }
    }
}

/// Whether the call changed the job: false when the claim was no longer
/// held (it lapsed and the job went back, or another worker has it).
#[derive(Debug, Serialize, ToSchema)]
pub struct Done {
    /// True when it took effect.
    pub done: bool,
}

/// What a retry did.
#[derive(Debug, Serialize, ToSchema)]
pub struct RetryResponse {
    /// `scheduled`, `dead` (out of attempts), `cancelled` (its cancel was
    /// requested while it ran) or `not_held`.
    pub outcome: String,
    /// When it runs again (unix seconds), for `scheduled`.
    pub run_at: Option<i64>,
}

impl From<RetryOutcome> for RetryResponse {
    fn from(outcome: RetryOutcome) -> Self {
        let (outcome, run_at) = match outcome {
            RetryOutcome::Scheduled(at) => ("scheduled", Some(at)),
            RetryOutcome::Dead => ("dead", None),
            RetryOutcome::Cancelled => ("cancelled", None),
            RetryOutcome::NotHeld => ("not_held", None),
        };
        RetryResponse {
            outcome: outcome.into(),
            run_at,
        }
    }
}

/// A heartbeat's answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct HeartbeatResponse {
    /// False when the claim is no longer held: stop working on the job.
    pub held: bool,
    /// The claim's new expiry (unix seconds) when held.
    pub claim_expires_at: Option<i64>,
}

/// What a cancel did.
#[derive(Debug, Serialize, ToSchema)]
pub struct CancelResponse {
    /// `cancelled` (it was waiting: now dead as cancelled), `requested` (it
    /// is running: its worker is told) or `not_found`.
    pub outcome: String,
}

/// Everything known about a job, live or dead.
#[derive(Debug, Serialize, ToSchema)]
pub struct JobView {
    /// Job id: unique and growing, not dense. On SQLite each process takes
    /// ids in blocks of 1,024, so jobs enqueued by different processes jump
    /// by up to 1,024.
    pub id: i64,
    /// Its queue.
    pub queue: String,
    /// As shown: `pending` (due now), `retryable` (waiting out a retry's
    /// backoff after a failed attempt), `scheduled` (first run due later),
    /// `processing`, `dead` or `completed`.
    pub state: String,
    /// The payload (null when not JSON; see `payload_base64`).
    pub payload: serde_json::Value,
    /// The payload's bytes in base64, when they are not JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload_base64: Option<String>,
    /// Priority.
    pub priority: i64,
    /// Attempts started.
    pub attempts: u32,
    /// Attempts allowed.
    pub max_attempts: u32,
    /// When it is (or was) due (unix seconds).
    pub run_at: i64,
    /// When it was enqueued (unix seconds).
    pub created_at: i64,
    /// When a pending job expires (unix seconds).
    pub expires_at: Option<i64>,
    /// The last worker to claim it.
    pub worker: Option<String>,
    /// When the claim lapses (unix seconds): processing jobs only (a dead,
    /// completed or waiting job holds no claim).
    pub claim_expires_at: Option<i64>,
    /// Its unique key.
    pub unique_key: Option<String>,
    /// The last error recorded.
    pub last_error: Option<String>,
    /// Why it died: `failed`, `exhausted`, `expired` or `cancelled`.
    pub dead_reason: Option<String>,
    /// When it died, or was acked (completed jobs), in unix seconds.
    pub died_at: Option<i64>,
    /// Each failed attempt's error, oldest first.
    pub errors: Vec<AttemptErrorView>,
    /// A running job whose cancellation was requested.
    pub cancel_requested: bool,
}

/// One failed attempt.
#[derive(Debug, Serialize, ToSchema)]
pub struct AttemptErrorView {
    /// The attempt's number.
    pub attempt: u32,
    /// When it failed (unix seconds).
    pub at: i64,
    /// What the handler reported.
    pub error: String,
}

impl JobView {
    /// The job as shown at `now` (unix seconds).
    fn new(j: JobInfo, now: i64) -> Self {
        let (payload, payload_base64) = decode(&j.payload);
        JobView {
            state: j.shown_state(now).to_string(),
            claim_expires_at: j.live_claim_expires_at(),
            id: j.id,
            queue: j.queue,
            payload,
            payload_base64,
            priority: j.priority,
            attempts: j.attempts,
            max_attempts: j.max_attempts,
            run_at: j.run_at,
            created_at: j.created_at,
            expires_at: j.expires_at,
            worker: j.worker,
            unique_key: j.unique_key,
            last_error: j.last_error,
            dead_reason: j.dead_reason,
            died_at: j.died_at,
            errors: j
                .errors
                .into_iter()
                .map(|e| AttemptErrorView {
                    attempt: e.attempt,
                    at: e.at,
                    error: e.error,
                })
                .collect(),
            cancel_requested: j.cancel_requested,
        }
    }
}

/// A page of jobs.
#[derive(Debug, Serialize, ToSchema)]
pub struct JobPage {
    /// Lowest ids first.
    pub jobs: Vec<JobView>,
    /// Pass as `after_id` for the next page (absent on the last).
    pub next_after_id: Option<i64>,
}

impl JobPage {
    fn new(jobs: Vec<JobInfo>, limit: u32) -> JobPage {
        let full = jobs.len() >= limit as usize;
        let next_after_id = if full {
            jobs.last().map(|j| j.id)
        } else {
            None
        };
        let now = SystemClock.now();
        JobPage {
            jobs: jobs.into_iter().map(|j| JobView::new(j, now)).collect(),
            next_after_id,
        }
    }
}

/// A queue's counts.
#[derive(Debug, Serialize, ToSchema)]
pub struct QueueView {
    /// Queue name.
    pub queue: String,
    /// Waiting and due now.
    pub ready: u64,
    /// Waiting, due later.
    pub scheduled: u64,
    /// Claimed, claim valid.
    pub processing: u64,
    /// Claimed, claim lapsed (the worker died or hangs).
    pub expired_claims: u64,
    /// Past their expiry, about to be dead.
    pub expired: u64,
    /// Dead letters.
    pub dead: u64,
    /// Acked and kept.
    pub completed: u64,
    /// Age in seconds of the oldest ready job.
    pub oldest_ready_age_s: Option<i64>,
    /// Paused: nothing is claimed from it.
    pub paused: bool,
}

impl QueueView {
    fn new(s: QueueStats, paused: bool) -> QueueView {
        QueueView {
            queue: s.queue,
            ready: s.ready,
            scheduled: s.scheduled,
            processing: s.processing,
            expired_claims: s.expired_claims,
            expired: s.expired,
            dead: s.dead,
            completed: s.completed,
            oldest_ready_age_s: s.oldest_ready_age_s,
            paused,
        }
    }
}

/// Every queue with its counts.
#[derive(Debug, Serialize, ToSchema)]
pub struct QueueList {
    /// By name.
    pub queues: Vec<QueueView>,
}

/// Paging through jobs.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct PageQuery {
    /// Only this state: `pending` (waiting: also the jobs shown
    /// `retryable` or `scheduled`), `processing` or `completed` (job
    /// listing only).
    #[param(pattern = "^(pending|processing|completed)$")]
    pub state: Option<String>,
    /// Start after this id.
    pub after_id: Option<i64>,
    /// 1 to 1,000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u32>,
}

/// Which throughput to read.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ThroughputQuery {
    /// Only this queue (default: every queue).
    #[param(min_length = 1, max_length = 200)]
    pub queue: Option<String>,
    /// Seconds back from now, 1 to 3,600 (default 300).
    #[param(minimum = 1, maximum = 3600)]
    pub window_s: Option<u64>,
}

/// Jobs of one queue finished within one bucket.
#[derive(Debug, Serialize, ToSchema)]
pub struct ThroughputBucketView {
    /// Queue name.
    pub queue: String,
    /// The bucket's start (unix seconds, a multiple of `bucket_s`).
    pub start: i64,
    /// Jobs acked.
    pub completed: u64,
    /// Attempts that ended in a retry or a failure.
    pub failed: u64,
}

/// One queue's finished jobs since the store began counting.
#[derive(Debug, Serialize, ToSchema)]
pub struct QueueTotalsView {
    /// Queue name.
    pub queue: String,
    /// Jobs acked.
    pub completed: u64,
    /// Attempts that ended in a retry or a failure.
    pub failed: u64,
}

/// Recent buckets and all-time totals.
#[derive(Debug, Serialize, ToSchema)]
pub struct ThroughputView {
    /// The store's clock (unix seconds): the newest bucket may still be
    /// filling.
    pub now: i64,
    /// Seconds per bucket.
    pub bucket_s: i64,
    /// Buckets within the window, oldest first, then by queue; a bucket in
    /// which nothing finished is absent.
    pub buckets: Vec<ThroughputBucketView>,
    /// Every selected queue's totals, by name.
    pub totals: Vec<QueueTotalsView>,
}

impl From<QueueThroughput> for ThroughputView {
    fn from(t: QueueThroughput) -> Self {
        ThroughputView {
            now: t.now,
            bucket_s: THROUGHPUT_BUCKET_S,
            buckets: t
                .buckets
                .into_iter()
                .map(|b| ThroughputBucketView {
                    queue: b.queue,
                    start: b.start,
                    completed: b.completed,
                    failed: b.failed,
                })
                .collect(),
            totals: t
                .totals
                .into_iter()
                .map(|q| QueueTotalsView {
                    queue: q.queue,
                    completed: q.completed,
                    failed: q.failed,
                })
                .collect(),
        }
    }
}

/// Paging through dead letters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct DeadPageQuery {
    /// Start after this id.
    pub after_id: Option<i64>,
    /// 1 to 1,000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u32>,
}

/// Which dead letters to requeue or purge.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DeadSelectRequest {
    /// Only these ids (default: every dead letter of the queue).
    pub ids: Option<Vec<i64>>,
}

/// How many jobs a call changed.
#[derive(Debug, Serialize, ToSchema)]
pub struct Count {
    /// The number changed.
    pub count: u64,
}

/// Whether a pause or resume changed anything.
#[derive(Debug, Serialize, ToSchema)]
pub struct Changed {
    /// False when the queue was already so.
    pub changed: bool,
}

/// A job id from the path: ids are positive.
#[derive(Debug, Clone, Copy)]
pub(crate) struct JobId(pub(crate) i64);

impl<'de> Deserialize<'de> for JobId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let id = i64::deserialize(d)?;
        if id < 1 {
            return Err(serde::de::Error::custom("job ids are positive"));
        }
        Ok(JobId(id))
    }
}

/// `limit`, or `default` when absent, checked to be 1 to [`MAX_BATCH`].
pub(crate) fn batch_limit(limit: Option<u32>, default: u32) -> ApiResult<u32> {
    let limit = limit.unwrap_or(default);
    if limit == 0 || limit as usize > MAX_BATCH {
        return Err(ApiError::invalid("limit", "must be 1 to 1000"));
    }
    Ok(limit)
}

/// A batch of `n` items named `field` (`jobs`, `events`, `claims`): 1 to
/// [`MAX_BATCH`].
pub(crate) fn check_batch(field: &str, n: usize) -> ApiResult<()> {
    if n == 0 || n > MAX_BATCH {
        return Err(ApiError::invalid(
            field,
            format!("must hold 1 to 1000 {field}"),
        ));
    }
    Ok(())
}

fn claim_of(id: i64, worker: String, token: i64) -> Claim {
    Claim { id, worker, token }
}

/// List every queue with its counts.
///
/// Every queue that has live, dead or kept completed jobs, or finished jobs
/// within the last hour, with its counts by state and whether it is paused.
#[utoipa::path(get, path = "/api/v1/queues", tag = "queues",
    responses((status = 200, description = "Every queue with its counts", body = QueueList)))]
async fn list_queues(State(app): State<AppState>) -> ApiResult<Json<QueueList>> {
    let e = app.store.engine();
    let paused = e.queue_paused().await?;
    let mut queues = Vec::new();
    for q in e.queue_list().await? {
        let is_paused = paused.contains(&q);
        queues.push(QueueView::new(e.queue_stats(q).await?, is_paused));
    }
    Ok(Json(QueueList { queues }))
}

/// Get one queue's counts.
///
/// The queue's counts by state and whether it is paused. Queues appear with
/// their first job: a name nothing was ever enqueued on (and that is not
/// paused) is 404 `not_found` ("no such queue yet"); a drained queue stays
/// while the store's throughput totals count what it finished.
#[utoipa::path(get, path = "/api/v1/queues/{queue}", tag = "queues",
    params(("queue" = String, Path, description = "Queue name")),
    responses((status = 200, description = "The queue's counts", body = QueueView),
        (status = 400, description = "Not a valid queue name", body = ErrorBody),
        (status = 404, description = "No such queue yet: nothing was ever enqueued on it, and it is not paused", body = ErrorBody)))]
async fn queue_stats(
    State(app): State<AppState>,
    ApiPath(queue): ApiPath<String>,
) -> ApiResult<Json<QueueView>> {
    let e = app.store.engine();
    let stats = e.queue_stats(queue.clone()).await?;
    let paused = e.queue_paused().await?.contains(&queue);
    if !paused && !app.store.queue(queue.as_str()).exists().await? {
        return Err(ApiError::not_found(
            "queue",
            format!(
                "no such queue yet: nothing was enqueued on {queue:?} (queues appear with their first job)"
            ),
        ));
    }
    Ok(Json(QueueView::new(stats, paused)))
}

/// Read jobs finished per queue.
///
/// Jobs acked and attempts failed, per queue, in buckets of `bucket_s`
/// seconds over the window, and each queue's all-time totals. The store
/// counts them on every ack, retry and failure, whoever made it.
#[utoipa::path(get, path = "/api/v1/throughput", tag = "queues",
    params(ThroughputQuery),
    responses((status = 200, description = "Jobs finished per queue in 10-second buckets over the window, and each queue's totals: counted by the store on every ack, retry and failure, whoever made it (any process, any host, this API)", body = ThroughputView),
        (status = 400, description = "Bad input", body = ErrorBody)))]
async fn throughput(
    State(app): State<AppState>,
    ApiQuery(q): ApiQuery<ThroughputQuery>,
) -> ApiResult<Json<ThroughputView>> {
    let window_s = q.window_s.unwrap_or(300);
    let got = app
        .store
        .engine()
        .queue_throughput(QueueThroughputParams {
            queue: q.queue,
            window: Duration::from_secs(window_s),
        })
        .await?;
    Ok(Json(ThroughputView::from(got)))
}

/// Enqueue a job.
///
/// Add one job to the queue. With a `unique_key` already held by a live job
/// of the queue, nothing is added and the existing job's id comes back with
/// `duplicate: true`. Queue names are used as given: percent-encode them in
/// the path.
#[utoipa::path(post, path = "/api/v1/queues/{queue}/jobs", tag = "queues",
    params(("queue" = String, Path, description = "Queue name")),
    request_body = EnqueueRequest,
    responses((status = 201, description = "Enqueued", body = EnqueuedJob),
        (status = 400, description = "Bad input; nothing written", body = ErrorBody),
        (status = 413, description = "Payload too large; nothing written", body = ErrorBody)))]
async fn enqueue(
    State(app): State<AppState>,
    ApiPath(queue): ApiPath<String>,
    ApiJson(req): ApiJson<EnqueueRequest>,
) -> ApiResult<(StatusCode, Json<EnqueuedJob>)> {
    let job = req.into_job(&queue)?;
    let out = app.store.engine().job_enqueue(vec![job]).await?;
    let first = out
        .into_iter()
        .next()
        .ok_or_else(|| ApiError::from(alkstore::Error::database("enqueue", "no id returned")))?;
    Ok((StatusCode::CREATED, Json(first.into())))
}

/// Enqueue several jobs at once.
///
/// Add 1 to 1,000 jobs to the queue in one transaction: all or none. Each
/// gets its id (or its duplicate's) in request order.
#[utoipa::path(post, path = "/api/v1/queues/{queue}/jobs/batch", tag = "queues",
    params(("queue" = String, Path, description = "Queue name")),
    request_body = EnqueueBatchRequest,
    responses((status = 201, description = "All enqueued, in one transaction", body = EnqueuedJobs),
        (status = 400, description = "Bad input; nothing written", body = ErrorBody),
        (status = 413, description = "Payload too large; nothing written", body = ErrorBody)))]
async fn enqueue_batch(
    State(app): State<AppState>,
    ApiPath(queue): ApiPath<String>,
    ApiJson(req): ApiJson<EnqueueBatchRequest>,
) -> ApiResult<(StatusCode, Json<EnqueuedJobs>)> {
    let jobs = req.into_jobs(&queue)?;
    let out = app.store.engine().job_enqueue(jobs).await?;
    Ok((
        StatusCode::CREATED,
        Json(EnqueuedJobs {
            jobs: out.into_iter().map(EnqueuedJob::from).collect(),
        }),
    ))
}

/// List a queue's jobs.
///
/// A page of the queue's live (and kept completed) jobs, lowest ids first.
/// `state` is as shown: `pending` (due now), `retryable` (waiting out a
/// retry's backoff), `scheduled` (first run due later), `processing` or
/// `completed`; the `pending` filter returns all three waiting kinds. Dead
/// letters are listed at `/dead`.
#[utoipa::path(get, path = "/api/v1/queues/{queue}/jobs", tag = "queues",
    params(("queue" = String, Path, description = "Queue name"), PageQuery),
    responses((status = 200, description = "A page of the queue's live (or kept) jobs", body = JobPage),
        (status = 400, description = "Bad input", body = ErrorBody)))]
async fn list_jobs(
    State(app): State<AppState>,
    ApiPath(queue): ApiPath<String>,
    ApiQuery(q): ApiQuery<PageQuery>,
) -> ApiResult<Json<JobPage>> {
    let limit = batch_limit(q.limit, 100)?;
    let state = match q.state.as_deref() {
        None => None,
        Some(s) => match JobState::parse(s) {
            Some(JobState::Dead) | None => {
                return Err(ApiError::invalid(
                    "state",
                    "must be pending, processing or completed (dead letters: /dead)",
                ))
            }
            some => some,
        },
    };
    let jobs = app
        .store
        .engine()
        .job_list(JobListParams {
            queue: Some(queue),
            state,
            after_id: q.after_id,
            limit,
        })
        .await?;
    Ok(Json(JobPage::new(jobs, limit)))
}

/// Claim jobs to run.
///
/// Claim up to `limit` due jobs of the queue, by priority then due time,
/// waiting up to `wait_ms` for the first. Each claimed job carries a `token`:
/// settle it (ack, retry, fail, release) with the worker's name and that
/// token, and heartbeat it before `claim_expires_at` if it runs long.
#[utoipa::path(post, path = "/api/v1/queues/{queue}/claim", tag = "queues",
    params(("queue" = String, Path, description = "Queue name")),
    request_body = ClaimRequest,
    responses((status = 200, description = "Claimed jobs (maybe none)", body = ClaimedJobs),
        (status = 400, description = "Bad input", body = ErrorBody)))]
async fn claim(
    State(app): State<AppState>,
    ApiPath(queue): ApiPath<String>,
    ApiJson(req): ApiJson<ClaimRequest>,
) -> ApiResult<Json<ClaimedJobs>> {
    let limit = batch_limit(req.limit, 1)?;
    let wait = app.wait(req.wait_ms)?;
    let engine = app.store.engine();
    let params = JobClaimParams::new(queue.clone(), req.worker, limit);
    let jobs = crate::wait::poll(
        engine,
        wait,
        |w| w.concerns(&queue),
        || engine.job_claim(params.clone()),
    )
    .await?;
    Ok(Json(ClaimedJobs {
        jobs: jobs.into_iter().map(ClaimedJob::from).collect(),
    }))
}

/// Get a job.
///
/// Everything known about a live, dead or kept completed job. A finished job
/// is deleted when acked unless its queue keeps completed jobs, so an id
/// acked a moment ago may be 404.
#[utoipa::path(get, path = "/api/v1/jobs/{id}", tag = "jobs",
    params(("id" = i64, Path, description = "Job id")),
    responses((status = 200, description = "The job", body = JobView),
        (status = 404, description = "No such job: never enqueued, or finished and deleted (acked jobs are deleted unless their queue keeps completed jobs; dead letters are pruned after their retention)", body = ErrorBody)))]
async fn get_job(
    State(app): State<AppState>,
    ApiPath(JobId(id)): ApiPath<JobId>,
) -> ApiResult<Json<JobView>> {
    match app.store.engine().job_get(id).await? {
        Some(j) => Ok(Json(JobView::new(j, SystemClock.now()))),
        None => Err(ApiError::not_found(
            "id",
            format!(
                "no job {id}: finished jobs are deleted unless their queue keeps completed jobs"
            ),
        )),
    }
}

/// Ack a job: it is done.
///
/// Finish the claimed job: it is deleted, or kept as `completed` when its
/// queue keeps completed jobs. `done: false` when the claim was no longer
/// held.
#[utoipa::path(post, path = "/api/v1/jobs/{id}/ack", tag = "jobs",
    params(("id" = i64, Path, description = "Job id")),
    request_body = ClaimRef,
    responses((status = 200, description = "Acked, or not held", body = Done),
        (status = 400, description = "Bad input", body = ErrorBody)))]
async fn ack(
    State(app): State<AppState>,
    ApiPath(JobId(id)): ApiPath<JobId>,
    ApiJson(c): ApiJson<ClaimRef>,
) -> ApiResult<Json<Done>> {
    let done = app.store.engine().job_ack(vec![c.claim(id)]).await?;
    Ok(Json(Done {
        done: done.first().copied().unwrap_or(false),
    }))
}

/// Ack several jobs at once.
///
/// Ack 1 to 1,000 claims in one transaction; one flag per claim in request
/// order (false: no longer held).
#[utoipa::path(post, path = "/api/v1/jobs/ack", tag = "jobs",
    request_body = AckBatchRequest,
    responses((status = 200, description = "Each claim acked, or not held", body = AckBatchResponse)))]
async fn ack_batch(
    State(app): State<AppState>,
    ApiJson(req): ApiJson<AckBatchRequest>,
) -> ApiResult<Json<AckBatchResponse>> {
    check_batch("claims", req.claims.len())?;
    if let Some(bad) = req.claims.iter().find(|c| c.id < 1) {
        return Err(ApiError::invalid(
            "id",
            format!("job ids are positive, not {}", bad.id),
        ));
    }
    let claims = req
        .claims
        .into_iter()
        .map(|c| claim_of(c.id, c.worker, c.token))
        .collect::<Vec<_>>();
    let done = app.store.engine().job_ack(claims).await?;
    Ok(Json(AckBatchResponse { done }))
}

/// Retry a job later.
///
/// A failed attempt: the job runs again after the queue's exponential backoff
/// (or `delay_ms`), shown as `retryable` meanwhile; out of attempts it is
/// dead as `exhausted`.
#[utoipa::path(post, path = "/api/v1/jobs/{id}/retry", tag = "jobs",
    params(("id" = i64, Path, description = "Job id")),
    request_body = RetryRequest,
    responses((status = 200, description = "What the retry did", body = RetryResponse),
        (status = 400, description = "Bad input", body = ErrorBody)))]
async fn retry(
    State(app): State<AppState>,
    ApiPath(JobId(id)): ApiPath<JobId>,
    ApiJson(r): ApiJson<RetryRequest>,
) -> ApiResult<Json<RetryResponse>> {
    let outcome = app.store.engine().job_retry(r.into_params(id)).await?;
    Ok(Json(outcome.into()))
}

/// Fail a job for good.
///
/// A permanent failure: the job goes to the queue's dead letters now, with
/// the error, whatever attempts it had left.
#[utoipa::path(post, path = "/api/v1/jobs/{id}/fail", tag = "jobs",
    params(("id" = i64, Path, description = "Job id")),
    request_body = FailRequest,
    responses((status = 200, description = "Dead now, or not held", body = Done),
        (status = 400, description = "Bad input", body = ErrorBody)))]
async fn fail(
    State(app): State<AppState>,
    ApiPath(JobId(id)): ApiPath<JobId>,
    ApiJson(f): ApiJson<FailRequest>,
) -> ApiResult<Json<Done>> {
    let done = app.store.engine().job_fail(f.into_params(id)).await?;
    Ok(Json(Done { done }))
}

/// Renew a job's claim.
///
/// Push the claim's expiry a visibility timeout ahead. `held: false` means
/// the claim lapsed or was taken: stop working on the job.
#[utoipa::path(post, path = "/api/v1/jobs/{id}/heartbeat", tag = "jobs",
    params(("id" = i64, Path, description = "Job id")),
    request_body = ClaimRef,
    responses((status = 200, description = "The claim renewed, or not held", body = HeartbeatResponse),
        (status = 400, description = "Bad input", body = ErrorBody)))]
async fn heartbeat(
    State(app): State<AppState>,
    ApiPath(JobId(id)): ApiPath<JobId>,
    ApiJson(c): ApiJson<ClaimRef>,
) -> ApiResult<Json<HeartbeatResponse>> {
    let until = app.store.engine().job_heartbeat(c.claim(id)).await?;
    Ok(Json(HeartbeatResponse {
        held: until.is_some(),
        claim_expires_at: until,
    }))
}

/// Hand a job back.
///
/// Give the claimed job back to the queue at once without using an attempt (a
/// worker shutting down).
#[utoipa::path(post, path = "/api/v1/jobs/{id}/release", tag = "jobs",
    params(("id" = i64, Path, description = "Job id")),
    request_body = ClaimRef,
    responses((status = 200, description = "Handed back without using an attempt, or not held", body = Done),
        (status = 400, description = "Bad input", body = ErrorBody)))]
async fn release(
    State(app): State<AppState>,
    ApiPath(JobId(id)): ApiPath<JobId>,
    ApiJson(c): ApiJson<ClaimRef>,
) -> ApiResult<Json<Done>> {
    let done = app.store.engine().job_release(c.claim(id)).await?;
    Ok(Json(Done { done }))
}

/// Cancel a job.
///
/// A waiting job is dead as `cancelled` at once; for a running one the
/// cancellation is requested, and its worker is told.
#[utoipa::path(post, path = "/api/v1/jobs/{id}/cancel", tag = "jobs",
    params(("id" = i64, Path, description = "Job id")),
    responses((status = 200, description = "What the cancel did", body = CancelResponse)))]
async fn cancel(
    State(app): State<AppState>,
    ApiPath(JobId(id)): ApiPath<JobId>,
) -> ApiResult<Json<CancelResponse>> {
    let outcome = match app.store.engine().job_cancel(id).await? {
        CancelOutcome::Cancelled => "cancelled",
        CancelOutcome::Requested => "requested",
        CancelOutcome::NotFound => "not_found",
    };
    Ok(Json(CancelResponse {
        outcome: outcome.into(),
    }))
}

/// Pause a queue.
///
/// Nothing is claimed from the queue until it is resumed; enqueues still
/// land.
#[utoipa::path(post, path = "/api/v1/queues/{queue}/pause", tag = "queues",
    params(("queue" = String, Path, description = "Queue name")),
    responses((status = 200, description = "Paused (nothing is claimed from it)", body = Changed),
        (status = 400, description = "Bad input", body = ErrorBody)))]
async fn pause(
    State(app): State<AppState>,
    ApiPath(queue): ApiPath<String>,
) -> ApiResult<Json<Changed>> {
    let changed = app.store.engine().queue_pause(queue.as_str()).await?;
    Ok(Json(Changed { changed }))
}

/// Resume a paused queue.
///
/// Claims take the queue's jobs again.
#[utoipa::path(post, path = "/api/v1/queues/{queue}/resume", tag = "queues",
    params(("queue" = String, Path, description = "Queue name")),
    responses((status = 200, description = "Resumed", body = Changed),
        (status = 400, description = "Bad input", body = ErrorBody)))]
async fn resume(
    State(app): State<AppState>,
    ApiPath(queue): ApiPath<String>,
) -> ApiResult<Json<Changed>> {
    let changed = app.store.engine().queue_resume(queue.as_str()).await?;
    Ok(Json(Changed { changed }))
}

/// List a queue's dead letters.
///
/// A page of the jobs that failed for good, ran out of attempts, expired or
/// were cancelled, lowest ids first, with why and when they died.
#[utoipa::path(get, path = "/api/v1/queues/{queue}/dead", tag = "dead letters",
    params(("queue" = String, Path, description = "Queue name"), DeadPageQuery),
    responses((status = 200, description = "A page of the queue's dead letters", body = JobPage),
        (status = 400, description = "Bad input", body = ErrorBody)))]
async fn dead_list(
    State(app): State<AppState>,
    ApiPath(queue): ApiPath<String>,
    ApiQuery(q): ApiQuery<DeadPageQuery>,
) -> ApiResult<Json<JobPage>> {
    let limit = batch_limit(q.limit, 100)?;
    let jobs = app
        .store
        .engine()
        .dead_list(DeadListParams {
            queue: Some(queue),
            after_id: q.after_id,
            limit,
        })
        .await?;
    Ok(Json(JobPage::new(jobs, limit)))
}

fn dead_select(queue: String, req: DeadSelectRequest) -> DeadSelect {
    DeadSelect {
        queue: Some(queue),
        ids: req.ids,
        limit: None,
    }
}

/// Requeue a queue's dead letters.
///
/// Run the chosen dead letters (default: all of the queue's) again as fresh
/// jobs, with their attempts reset.
#[utoipa::path(post, path = "/api/v1/queues/{queue}/dead/requeue", tag = "dead letters",
    params(("queue" = String, Path, description = "Queue name")),
    request_body(content = DeadSelectRequest, description = "Which ones (default all of the queue)"),
    responses((status = 200, description = "Requeued as fresh jobs", body = Count),
        (status = 400, description = "Bad input", body = ErrorBody)))]
async fn dead_requeue(
    State(app): State<AppState>,
    ApiPath(queue): ApiPath<String>,
    ApiJson(req): ApiJson<DeadSelectRequest>,
) -> ApiResult<Json<Count>> {
    let count = app
        .store
        .engine()
        .dead_requeue(dead_select(queue, req))
        .await?;
    Ok(Json(Count { count }))
}

/// Purge a queue's dead letters.
///
/// Delete the chosen dead letters (default: all of the queue's) for good.
#[utoipa::path(post, path = "/api/v1/queues/{queue}/dead/purge", tag = "dead letters",
    params(("queue" = String, Path, description = "Queue name")),
    request_body(content = DeadSelectRequest, description = "Which ones (default all of the queue)"),
    responses((status = 200, description = "Deleted for good", body = Count),
        (status = 400, description = "Bad input", body = ErrorBody)))]
async fn dead_purge(
    State(app): State<AppState>,
    ApiPath(queue): ApiPath<String>,
    ApiJson(req): ApiJson<DeadSelectRequest>,
) -> ApiResult<Json<Count>> {
    let count = app
        .store
        .engine()
        .dead_purge(dead_select(queue, req))
        .await?;
    Ok(Json(Count { count }))
}
