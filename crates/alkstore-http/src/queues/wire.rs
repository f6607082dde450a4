//! The bodies of the queue writes: what enqueue, claim, the settles,
//! cancel, pause and the dead-letter calls take and answer, with their
//! serde shapes and OpenAPI schemas, and how each request becomes the
//! engine call's parameters. Separate from the handlers so the atomic
//! route reuses the same bodies for its ops.

use std::time::Duration;

use alkstore::queue::{Claim, EnqueueOpts, Enqueued, Job, JobRetryParams, NewJob, RetryOutcome};
use alkstore_core::queue::JobFailParams;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::limits::check_batch;
use crate::error::{ApiError, ApiResult};
use crate::payload::{decode, encode};

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
    #[schema(minimum = 1, default = json!(alkstore::queue::DEFAULT_MAX_ATTEMPTS))]
    pub max_attempts: Option<i32>,
    /// Dead as `expired` when not started this many milliseconds after due
    /// (at least 1,000).
    #[schema(minimum = 1000, maximum = 1_099_511_627_776_999_u64)]
    pub expires_in_ms: Option<u64>,
    /// At most one live job per queue with this key: a second enqueue
    /// returns the first one's id with `duplicate: true`.
    #[schema(min_length = 1, max_length = 200, pattern = "^[^\\u0000]+$")]
    pub unique_key: Option<String>,
    /// Labels to find the job by (`GET /api/v1/jobs?tag=`): at most 20,
    /// each 1 to 200 bytes; repeats are kept once.
    #[serde(default)]
    #[schema(max_items = 20)]
    pub tags: Vec<Tag>,
    /// Facts about the job kept beside its payload and shown with it (who
    /// asked, a trace id): a JSON object of at most 8,192 bytes.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub meta: serde_json::Map<String, serde_json::Value>,
}

/// A job's tag: 1 to 200 bytes of UTF-8, no NUL.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(transparent)]
#[schema(value_type = String, min_length = 1, max_length = 200, pattern = "^[^\\u0000]+$")]
pub struct Tag(pub String);

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
            tags: self.tags.into_iter().map(|t| t.0).collect(),
            meta: self.meta,
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
    /// The jobs to store on `queue`: 1 to [`MAX_BATCH`](super::MAX_BATCH).
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
    /// Its tags, as enqueued.
    pub tags: Vec<String>,
    /// Its metadata, as enqueued (an empty object when none).
    #[schema(value_type = Object)]
    pub meta: serde_json::Map<String, serde_json::Value>,
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
            tags: j.tags,
            meta: j.meta,
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

/// The claim to ack, and what the job produced.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AckRequest {
    /// The worker named in the claim.
    #[schema(min_length = 1, max_length = 200, pattern = "^[^\\u0000]+$")]
    pub worker: String,
    /// The claim's token.
    pub token: i64,
    /// The job's result, any JSON: saved (kept a day) before the ack, for
    /// `GET /api/v1/jobs/{id}/result`. A later attempt's result replaces it.
    #[serde(default)]
    pub result: Option<serde_json::Value>,
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
        let mut params = JobRetryParams::new(claim_of(id, self.worker, self.token), self.error);
        params.delay = self.delay_ms.map(Duration::from_millis);
        params
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
        JobFailParams::new(claim_of(id, self.worker, self.token), self.error)
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

pub(super) fn claim_of(id: i64, worker: String, token: i64) -> Claim {
    Claim { id, worker, token }
}
