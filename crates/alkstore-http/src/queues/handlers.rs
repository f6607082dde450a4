//! The queue, job and dead-letter handlers: each reads its request, calls
//! the store's handles (`store.queue(..)`, `store.jobs()`) and shapes the
//! answer. Their doc comments and
//! `utoipa::path` attributes are the operations of the OpenAPI document.

use std::time::Duration;

use alkstore::{
    queue::{
        CancelOutcome, DeadListParams, DeadSelect, JobListParams, JobState, QueueDepthParams,
        QueueThroughputParams,
    },
    Clock, SystemClock,
};
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;

use super::limits::{batch_limit, check_batch, check_tag};
use super::views::{
    DeadPageQuery, DepthQuery, DepthSampleView, DepthView, JobPage, JobView, PageQuery, QueueList,
    QueueView, ThroughputQuery, ThroughputView,
};
use super::wire::{
    claim_of, AckBatchRequest, AckBatchResponse, AckRequest, CancelResponse, Changed, ClaimRef,
    ClaimRequest, ClaimedJob, ClaimedJobs, Count, DeadSelectRequest, Done, EnqueueBatchRequest,
    EnqueueRequest, EnqueuedJob, EnqueuedJobs, FailRequest, HeartbeatResponse, JobId, RetryRequest,
    RetryResponse,
};
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::payload::encode;
use crate::AppState;

/// List every queue with its counts.
///
/// Every queue that has live, dead or kept completed jobs, or finished jobs
/// within the last hour, with its counts by state and whether it is paused.
#[utoipa::path(get, path = "/api/v1/queues", tag = "queues",
    responses((status = 200, description = "Every queue with its counts", body = QueueList)))]
pub(super) async fn list_queues(State(app): State<AppState>) -> ApiResult<Json<QueueList>> {
    let paused = app.store.paused_queues().await?;
    let queues = app
        .store
        .queue_stats()
        .await?
        .into_iter()
        .map(|s| {
            let is_paused = paused.contains(&s.queue);
            QueueView::new(s, is_paused)
        })
        .collect();
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
pub(super) async fn queue_stats(
    State(app): State<AppState>,
    ApiPath(queue): ApiPath<String>,
) -> ApiResult<Json<QueueView>> {
    let handle = app.store.queue(queue.as_str());
    let stats = handle.stats().await?;
    let paused = handle.is_paused().await?;
    if !paused && !handle.exists().await? {
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
pub(super) async fn throughput(
    State(app): State<AppState>,
    ApiQuery(q): ApiQuery<ThroughputQuery>,
) -> ApiResult<Json<ThroughputView>> {
    let window_s = q.window_s.unwrap_or(300);
    let got = app
        .store
        .throughput(match q.queue {
            Some(queue) => QueueThroughputParams::queue(queue, Duration::from_secs(window_s)),
            None => QueueThroughputParams::every_queue(Duration::from_secs(window_s)),
        })
        .await?;
    Ok(Json(ThroughputView::from(got)))
}

/// Read queue depth over time.
///
/// Each queue's ready, scheduled, processing and dead counts, sampled by
/// the store's maintenance sweep each time it runs (once a minute by
/// default, by whichever worker holds it) and kept a week, so a chart
/// opened now shows the past day.
#[utoipa::path(get, path = "/api/v1/depth", tag = "queues",
    params(DepthQuery),
    responses((status = 200, description = "Depth samples over the window", body = DepthView),
        (status = 400, description = "Bad input", body = ErrorBody)))]
pub(super) async fn depth(
    State(app): State<AppState>,
    ApiQuery(q): ApiQuery<DepthQuery>,
) -> ApiResult<Json<DepthView>> {
    let window = Duration::from_secs(q.window_s.unwrap_or(86_400));
    let samples = app
        .store
        .depth_history(QueueDepthParams::new(q.queue, window))
        .await?;
    Ok(Json(DepthView {
        samples: samples
            .into_iter()
            .map(|s| DepthSampleView {
                queue: s.queue,
                at: s.at,
                ready: s.ready,
                scheduled: s.scheduled,
                processing: s.processing,
                dead: s.dead,
            })
            .collect(),
    }))
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
pub(super) async fn enqueue(
    State(app): State<AppState>,
    ApiPath(queue): ApiPath<String>,
    ApiJson(req): ApiJson<EnqueueRequest>,
) -> ApiResult<(StatusCode, Json<EnqueuedJob>)> {
    let job = req.into_job(&queue)?;
    let out = app.store.jobs().enqueue(vec![job]).await?;
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
pub(super) async fn enqueue_batch(
    State(app): State<AppState>,
    ApiPath(queue): ApiPath<String>,
    ApiJson(req): ApiJson<EnqueueBatchRequest>,
) -> ApiResult<(StatusCode, Json<EnqueuedJobs>)> {
    let jobs = req.into_jobs(&queue)?;
    let out = app.store.jobs().enqueue(jobs).await?;
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
pub(super) async fn list_jobs(
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
    check_tag(q.tag.as_deref())?;
    let jobs = app
        .store
        .jobs()
        .list({
            let mut params = JobListParams::new(limit).queue(queue);
            params.state = state;
            params.tag = q.tag;
            params.after_id = q.after_id;
            params
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
pub(super) async fn claim(
    State(app): State<AppState>,
    ApiPath(queue): ApiPath<String>,
    ApiJson(req): ApiJson<ClaimRequest>,
) -> ApiResult<Json<ClaimedJobs>> {
    let limit = batch_limit(req.limit, 1)?;
    let wait = app.wait(req.wait_ms)?;
    let jobs = app
        .store
        .jobs()
        .claim_waiting(&queue, &req.worker, limit, wait)
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
pub(super) async fn get_job(
    State(app): State<AppState>,
    ApiPath(JobId(id)): ApiPath<JobId>,
) -> ApiResult<Json<JobView>> {
    match app.store.jobs().get(id).await? {
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
/// queue keeps completed jobs. With `result`, the result is saved first
/// (kept a day, read with `GET /api/v1/jobs/{id}/result`). `done: false`
/// when the claim was no longer held (nothing is saved then).
#[utoipa::path(post, path = "/api/v1/jobs/{id}/ack", tag = "jobs",
    params(("id" = i64, Path, description = "Job id")),
    request_body = AckRequest,
    responses((status = 200, description = "Acked, or not held", body = Done),
        (status = 400, description = "Bad input", body = ErrorBody)))]
pub(super) async fn ack(
    State(app): State<AppState>,
    ApiPath(JobId(id)): ApiPath<JobId>,
    ApiJson(req): ApiJson<AckRequest>,
) -> ApiResult<Json<Done>> {
    let jobs = app.store.jobs();
    let claim = claim_of(id, req.worker, req.token);
    if let Some(result) = &req.result {
        // Saved before the ack, as the Rust worker saves a handler's return
        // value, so whoever sees the job done finds its result; and only
        // while the claim is held, so a worker whose claim lapsed never
        // replaces the result of the attempt that took the job over.
        let value = encode(result).map_err(|e| e.with_field("result"))?;
        if jobs.heartbeat(claim.clone()).await?.is_none() {
            return Ok(Json(Done { done: false }));
        }
        jobs.save_result(id, value).await?;
    }
    let done = jobs.ack(vec![claim]).await?;
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
pub(super) async fn ack_batch(
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
    let done = app.store.jobs().ack(claims).await?;
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
pub(super) async fn retry(
    State(app): State<AppState>,
    ApiPath(JobId(id)): ApiPath<JobId>,
    ApiJson(r): ApiJson<RetryRequest>,
) -> ApiResult<Json<RetryResponse>> {
    let outcome = app.store.jobs().retry(r.into_params(id)).await?;
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
pub(super) async fn fail(
    State(app): State<AppState>,
    ApiPath(JobId(id)): ApiPath<JobId>,
    ApiJson(f): ApiJson<FailRequest>,
) -> ApiResult<Json<Done>> {
    let done = app.store.jobs().fail(f.into_params(id)).await?;
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
pub(super) async fn heartbeat(
    State(app): State<AppState>,
    ApiPath(JobId(id)): ApiPath<JobId>,
    ApiJson(c): ApiJson<ClaimRef>,
) -> ApiResult<Json<HeartbeatResponse>> {
    let until = app.store.jobs().heartbeat(c.claim(id)).await?;
    Ok(Json(HeartbeatResponse {
        held: until.is_some(),
        claim_expires_at: until,
    }))
}

/// Hand a job back.
///
/// Give the claimed job back to the queue at once without using an attempt (a
/// worker shutting down).
#[utoipa::path(post, path = "/api/v1/jobs/{id}/release", tag = "jobs", operation_id = "release_job",
    params(("id" = i64, Path, description = "Job id")),
    request_body = ClaimRef,
    responses((status = 200, description = "Handed back without using an attempt, or not held", body = Done),
        (status = 400, description = "Bad input", body = ErrorBody)))]
pub(super) async fn release(
    State(app): State<AppState>,
    ApiPath(JobId(id)): ApiPath<JobId>,
    ApiJson(c): ApiJson<ClaimRef>,
) -> ApiResult<Json<Done>> {
    let done = app.store.jobs().release(c.claim(id)).await?;
    Ok(Json(Done { done }))
}

/// Cancel a job.
///
/// A waiting job is dead as `cancelled` at once; for a running one the
/// cancellation is requested, and its worker is told.
#[utoipa::path(post, path = "/api/v1/jobs/{id}/cancel", tag = "jobs",
    params(("id" = i64, Path, description = "Job id")),
    responses((status = 200, description = "What the cancel did", body = CancelResponse)))]
pub(super) async fn cancel(
    State(app): State<AppState>,
    ApiPath(JobId(id)): ApiPath<JobId>,
) -> ApiResult<Json<CancelResponse>> {
    let outcome = match app.store.jobs().cancel(id).await? {
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
#[utoipa::path(post, path = "/api/v1/queues/{queue}/pause", tag = "queues", operation_id = "pause_queue",
    params(("queue" = String, Path, description = "Queue name")),
    responses((status = 200, description = "Paused (nothing is claimed from it)", body = Changed),
        (status = 400, description = "Bad input", body = ErrorBody)))]
pub(super) async fn pause(
    State(app): State<AppState>,
    ApiPath(queue): ApiPath<String>,
) -> ApiResult<Json<Changed>> {
    let changed = app.store.queue(queue).pause().await?;
    Ok(Json(Changed { changed }))
}

/// Resume a paused queue.
///
/// Claims take the queue's jobs again.
#[utoipa::path(post, path = "/api/v1/queues/{queue}/resume", tag = "queues", operation_id = "resume_queue",
    params(("queue" = String, Path, description = "Queue name")),
    responses((status = 200, description = "Resumed", body = Changed),
        (status = 400, description = "Bad input", body = ErrorBody)))]
pub(super) async fn resume(
    State(app): State<AppState>,
    ApiPath(queue): ApiPath<String>,
) -> ApiResult<Json<Changed>> {
    let changed = app.store.queue(queue).resume().await?;
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
pub(super) async fn dead_list(
    State(app): State<AppState>,
    ApiPath(queue): ApiPath<String>,
    ApiQuery(q): ApiQuery<DeadPageQuery>,
) -> ApiResult<Json<JobPage>> {
    let limit = batch_limit(q.limit, 100)?;
    check_tag(q.tag.as_deref())?;
    let jobs = app
        .store
        .jobs()
        .dead({
            let mut params = DeadListParams::new(limit).queue(queue);
            params.tag = q.tag;
            params.after_id = q.after_id;
            params
        })
        .await?;
    Ok(Json(JobPage::new(jobs, limit)))
}

fn dead_select(queue: String, req: DeadSelectRequest) -> DeadSelect {
    let mut select = DeadSelect::queue(queue);
    select.ids = req.ids;
    select
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
pub(super) async fn dead_requeue(
    State(app): State<AppState>,
    ApiPath(queue): ApiPath<String>,
    ApiJson(req): ApiJson<DeadSelectRequest>,
) -> ApiResult<Json<Count>> {
    let count = app
        .store
        .jobs()
        .requeue_dead(dead_select(queue, req))
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
pub(super) async fn dead_purge(
    State(app): State<AppState>,
    ApiPath(queue): ApiPath<String>,
    ApiJson(req): ApiJson<DeadSelectRequest>,
) -> ApiResult<Json<Count>> {
    let count = app.store.jobs().purge_dead(dead_select(queue, req)).await?;
    Ok(Json(Count { count }))
}
