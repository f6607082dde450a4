//! Jobs across queues, as operators know them: counts per state (pending,
//! scheduled, retryable, running, dead, cancelled, completed), a search by
//! state, queue, tag and a payload field (`$.customer_id = 42`), and bulk
//! actions on the jobs found (retry, run now, cancel, delete).
//!
//! The search pages through the store's job (or dead-letter) listing,
//! filtered by queue, state and tag in the store, and keeps what matches
//! the payload filter, reading at most [`SCAN_ROWS`] rows per request: a
//! page can come back short with `next_after_id` set, to read on. A bulk
//! action takes ids, or the same filters (`matching`) and acts on what the
//! search finds, a page per request.

use alkstore::jobs::Jobs;
use alkstore::queue::{
    CancelOutcome, DeadListParams, DeadSelect, JobDeleteParams, JobInfo, JobListParams,
    JobRunNowParams, JobState,
};
use alkstore::{Clock, SystemClock};
use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::{ApiJson, ApiQuery};
use crate::queues::{batch_limit, check_tag, JobPage, JobView};
use crate::AppState;

/// The most rows one search reads before it answers.
pub const SCAN_ROWS: usize = 10_000;

/// Rows read per store call while searching.
const SCAN_PAGE: u32 = 1_000;

pub(crate) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(search_jobs))
        .routes(routes!(job_counts))
        .routes(routes!(bulk_jobs))
}

/// A job state as shown to operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shown {
    Pending,
    Scheduled,
    Retryable,
    Running,
    Completed,
    Dead,
    Cancelled,
}

impl Shown {
    fn parse(s: &str) -> Option<Shown> {
        Some(match s {
            "pending" => Shown::Pending,
            "scheduled" => Shown::Scheduled,
            "retryable" => Shown::Retryable,
            "running" | "processing" => Shown::Running,
            "completed" => Shown::Completed,
            "dead" => Shown::Dead,
            "cancelled" => Shown::Cancelled,
            _ => return None,
        })
    }

    /// Whether job `j` is in this state at `now`.
    fn holds(self, j: &JobInfo, now: i64) -> bool {
        match self {
            Shown::Pending => j.state == JobState::Pending && j.run_at <= now,
            Shown::Scheduled => j.shown_state(now) == "scheduled",
            Shown::Retryable => j.shown_state(now) == "retryable",
            Shown::Running => j.state == JobState::Processing,
            Shown::Completed => j.state == JobState::Completed,
            Shown::Dead => j.state == JobState::Dead,
            Shown::Cancelled => {
                j.state == JobState::Dead && j.dead_reason.as_deref() == Some("cancelled")
            }
        }
    }
}

/// A payload filter: a JSON path of object keys and array indexes, and
/// the value it must equal.
#[derive(Debug, PartialEq)]
struct PayloadFilter {
    path: Vec<PathStep>,
    value: Value,
}

#[derive(Debug, PartialEq)]
enum PathStep {
    Key(String),
    Index(usize),
}

impl PayloadFilter {
    /// `$.customer.id = 42`, `$.tags[0] = "vip"`, `$.kind = "refund"`: a
    /// path from `$`, `=`, and a JSON value.
    fn parse(text: &str) -> Result<PayloadFilter, String> {
        let (path, value) = text
            .split_once('=')
            .ok_or("write it as `$.field = value`, the value in JSON")?;
        let value: Value = serde_json::from_str(value.trim())
            .map_err(|e| format!("the value after `=` is not JSON ({e}); quote strings"))?;
        let path = path.trim();
        let mut rest = path
            .strip_prefix('$')
            .ok_or("the path starts with `$`, as in `$.customer_id`")?;
        let mut steps = Vec::new();
        while !rest.is_empty() {
            if let Some(after) = rest.strip_prefix('.') {
                let end = after.find(['.', '[']).unwrap_or(after.len());
                let key = &after[..end];
                if key.is_empty() {
                    return Err("an empty key in the path".into());
                }
                steps.push(PathStep::Key(key.to_string()));
                rest = &after[end..];
            } else if let Some(after) = rest.strip_prefix('[') {
                let end = after.find(']').ok_or("an unclosed `[` in the path")?;
                let index = after[..end]
                    .trim()
                    .parse()
                    .map_err(|_| "an array index in the path is not a number")?;
                steps.push(PathStep::Index(index));
                rest = &after[end + 1..];
            } else {
                return Err(format!("unexpected `{rest}` in the path"));
            }
        }
        Ok(PayloadFilter { path: steps, value })
    }

    fn matches(&self, payload: &[u8]) -> bool {
        let Ok(mut at) = serde_json::from_slice::<Value>(payload) else {
            return false;
        };
        for step in &self.path {
            at = match (step, at) {
                (PathStep::Key(k), Value::Object(mut m)) => match m.remove(k) {
                    Some(v) => v,
                    None => return false,
                },
                (PathStep::Index(i), Value::Array(mut a)) if *i < a.len() => a.swap_remove(*i),
                _ => return false,
            };
        }
        at == self.value
    }
}

/// Which jobs: the filters a search and a bulk action share.
#[derive(Debug, Default, Deserialize, IntoParams, ToSchema)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct JobFilter {
    /// `pending` (due now), `scheduled`, `retryable`, `running`,
    /// `completed`, `dead` or `cancelled` (default: every live job).
    #[param(
        pattern = "^(pending|scheduled|retryable|running|processing|completed|dead|cancelled)$"
    )]
    #[schema(
        pattern = "^(pending|scheduled|retryable|running|processing|completed|dead|cancelled)$"
    )]
    pub state: Option<String>,
    /// Only this queue.
    pub queue: Option<String>,
    /// Only jobs carrying this tag.
    pub tag: Option<String>,
    /// Only jobs whose payload has this value at this path:
    /// `$.customer_id = 42`, `$.order.kind = "refund"`, `$.items[0] = 3`.
    #[serde(rename = "where")]
    #[param(rename = "where")]
    #[schema(rename = "where")]
    pub payload_where: Option<String>,
    /// Start after this id.
    pub after_id: Option<i64>,
    /// Most jobs to return (a search: default 100) or act on (a bulk
    /// action: default 1,000): 1 to 1,000.
    #[param(minimum = 1, maximum = 1000)]
    #[schema(minimum = 1, maximum = 1000)]
    pub limit: Option<u32>,
}

/// A [`JobFilter`], checked: what a search reads and keeps.
struct Finder {
    shown: Option<Shown>,
    payload: Option<PayloadFilter>,
    queue: Option<String>,
    tag: Option<String>,
}

impl Finder {
    fn new(f: &JobFilter) -> ApiResult<Finder> {
        let shown = match f.state.as_deref() {
            None => None,
            Some(s) => Some(Shown::parse(s).ok_or_else(|| {
                ApiError::invalid(
                    "state",
                    "must be pending, scheduled, retryable, running, completed, dead or cancelled",
                )
            })?),
        };
        let payload = f
            .payload_where
            .as_deref()
            .map(PayloadFilter::parse)
            .transpose()
            .map_err(|e| ApiError::invalid("where", e))?;
        if let Some(queue) = &f.queue {
            alkstore::queue::validate_queue_name(queue)
                .map_err(|e| ApiError::from(e).with_field("queue"))?;
        }
        check_tag(f.tag.as_deref())?;
        Ok(Finder {
            shown,
            payload,
            queue: f.queue.clone(),
            tag: f.tag.clone(),
        })
    }

    /// Up to `limit` matching jobs after id `after`, lowest ids first,
    /// reading at most [`SCAN_ROWS`] rows; and where to read on (`None`:
    /// every job was read).
    async fn find(
        &self,
        jobs: &Jobs,
        mut after: i64,
        limit: usize,
        now: i64,
    ) -> ApiResult<(Vec<JobInfo>, Option<i64>)> {
        let (mut found, mut scanned) = (Vec::new(), 0usize);
        let exhausted = loop {
            let page = match self.shown {
                Some(Shown::Dead | Shown::Cancelled) => {
                    let mut p = DeadListParams::new(SCAN_PAGE);
                    p.queue = self.queue.clone();
                    p.tag = self.tag.clone();
                    p.after_id = Some(after);
                    jobs.dead(p).await?
                }
                _ => {
                    let mut p = JobListParams::new(SCAN_PAGE);
                    p.queue = self.queue.clone();
                    p.tag = self.tag.clone();
                    p.after_id = Some(after);
                    p.state = match self.shown {
                        Some(Shown::Completed) => Some(JobState::Completed),
                        Some(Shown::Running) => Some(JobState::Processing),
                        Some(Shown::Pending | Shown::Scheduled | Shown::Retryable) => {
                            Some(JobState::Pending)
                        }
                        _ => None,
                    };
                    jobs.list(p).await?
                }
            };
            let full = page.len() >= SCAN_PAGE as usize;
            for j in page {
                scanned += 1;
                after = j.id;
                let keep = self.shown.is_none_or(|s| s.holds(&j, now))
                    && self.payload.as_ref().is_none_or(|f| f.matches(&j.payload));
                if keep {
                    found.push(j);
                    if found.len() >= limit {
                        break;
                    }
                }
            }
            if found.len() >= limit {
                break false;
            }
            if !full {
                break true;
            }
            if scanned >= SCAN_ROWS {
                break false;
            }
        };
        Ok((found, (!exhausted).then_some(after)))
    }
}

/// Search jobs.
///
/// Jobs of every queue (or one) in a state as operators know it, and
/// optionally with a tag or a payload field equal to a value, lowest ids
/// first. Reads at most 10,000 jobs per request: a short page with
/// `next_after_id` set means read on from there.
#[utoipa::path(get, path = "/api/v1/jobs", tag = "jobs",
    params(JobFilter),
    responses((status = 200, description = "A page of the jobs found", body = JobPage),
        (status = 400, description = "Bad input", body = ErrorBody)))]
async fn search_jobs(
    State(app): State<AppState>,
    ApiQuery(q): ApiQuery<JobFilter>,
) -> ApiResult<Json<JobPage>> {
    let limit = batch_limit(q.limit, 100)? as usize;
    let finder = Finder::new(&q)?;
    let now = SystemClock.now();
    let after = q.after_id.unwrap_or(0);
    let (found, next) = finder.find(&app.store.jobs(), after, limit, now).await?;
    Ok(Json(JobPage {
        jobs: found.into_iter().map(|j| JobView::new(j, now)).collect(),
        next_after_id: next,
    }))
}

/// Which queue to count.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct CountsQuery {
    /// Only this queue (default: every queue).
    pub queue: Option<String>,
}

/// Jobs per state, as operators know them.
#[derive(Debug, Default, Serialize, ToSchema)]
pub struct JobCounts {
    /// Waiting and due now.
    pub pending: u64,
    /// Waiting for their first run, due later.
    pub scheduled: u64,
    /// Waiting out a retry's backoff.
    pub retryable: u64,
    /// Claimed by a worker (lapsed claims included).
    pub running: u64,
    /// Past their expiry, about to be dead.
    pub expired: u64,
    /// Dead letters (the cancelled ones included).
    pub dead: u64,
    /// Dead letters that were cancelled.
    pub cancelled: u64,
    /// Acked and kept.
    pub completed: u64,
}

/// Count jobs per state.
///
/// Every queue's jobs (or one queue's) counted per state as operators know
/// them: pending, scheduled, retryable, running, dead (and of those
/// cancelled), completed.
#[utoipa::path(get, path = "/api/v1/jobs/counts", tag = "jobs",
    params(CountsQuery),
    responses((status = 200, description = "Jobs per state", body = JobCounts),
        (status = 400, description = "Bad input", body = ErrorBody)))]
async fn job_counts(
    State(app): State<AppState>,
    ApiQuery(q): ApiQuery<CountsQuery>,
) -> ApiResult<Json<JobCounts>> {
    let stats = match q.queue {
        Some(queue) => vec![app
            .store
            .queue(queue)
            .stats()
            .await
            .map_err(|e| ApiError::from(e).with_field("queue"))?],
        None => app.store.queue_stats().await?,
    };
    let mut c = JobCounts::default();
    for s in stats {
        c.pending += s.ready;
        c.scheduled += s.scheduled - s.retryable.min(s.scheduled);
        c.retryable += s.retryable;
        c.running += s.processing + s.expired_claims;
        c.expired += s.expired;
        c.dead += s.dead;
        c.cancelled += s.cancelled;
        c.completed += s.completed;
    }
    Ok(Json(c))
}

/// An action on chosen jobs.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkRequest {
    /// `retry` (dead letters run again as fresh jobs; waiting jobs run
    /// now), `run_now` (scheduled and retryable jobs run now), `cancel`
    /// (pending jobs go to the dead letters as cancelled; running ones are
    /// asked to stop) or `delete` (pending jobs and dead letters go for
    /// good).
    #[schema(pattern = "^(retry|run_now|cancel|delete)$")]
    pub action: String,
    /// 1 to 1,000 job ids. Give these or `matching`, not both.
    #[schema(min_items = 1, max_items = 1000)]
    pub ids: Option<Vec<i64>>,
    /// Every job the search with these filters finds, up to `limit` (default
    /// 1,000) per request: repeat with `after_id` set to the answer's
    /// `next_after_id` until it is absent.
    pub matching: Option<JobFilter>,
}

/// What a bulk action did.
#[derive(Debug, Serialize, ToSchema)]
pub struct BulkResult {
    /// Jobs it changed (for `cancel`: cancelled at once).
    pub changed: u64,
    /// For `cancel`: running jobs asked to stop.
    pub requested: u64,
    /// With `matching`: the jobs found and acted on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matched: Option<u64>,
    /// With `matching`: more jobs may match after this id; pass it as
    /// `matching.after_id` to go on. Absent when every job was read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_after_id: Option<i64>,
}

/// Act on many jobs.
///
/// Retry, run now, cancel or delete the chosen jobs (`ids`), or the jobs a
/// search finds (`matching`), whatever their queues: each job is acted on
/// as its state allows, and the others are left alone (counted out of
/// `changed`).
#[utoipa::path(post, path = "/api/v1/jobs/bulk", tag = "jobs",
    request_body = BulkRequest,
    responses((status = 200, description = "What changed", body = BulkResult),
        (status = 400, description = "Bad input", body = ErrorBody)))]
async fn bulk_jobs(
    State(app): State<AppState>,
    ApiJson(req): ApiJson<BulkRequest>,
) -> ApiResult<Json<BulkResult>> {
    let jobs = app.store.jobs();
    if !matches!(
        req.action.as_str(),
        "retry" | "run_now" | "cancel" | "delete"
    ) {
        return Err(ApiError::invalid(
            "action",
            "must be retry, run_now, cancel or delete",
        ));
    }
    let (ids, matched, next_after_id) = match (req.ids, req.matching) {
        (Some(ids), None) => (ids, None, None),
        (None, Some(f)) => {
            let limit = batch_limit(f.limit, 1000).map_err(|e| e.under("matching"))? as usize;
            let finder = Finder::new(&f).map_err(|e| e.under("matching"))?;
            let now = SystemClock.now();
            let (found, next) = finder
                .find(&jobs, f.after_id.unwrap_or(0), limit, now)
                .await?;
            let ids: Vec<i64> = found.iter().map(|j| j.id).collect();
            if ids.is_empty() {
                return Ok(Json(BulkResult {
                    changed: 0,
                    requested: 0,
                    matched: Some(0),
                    next_after_id: next,
                }));
            }
            (ids, Some(found.len() as u64), next)
        }
        _ => {
            return Err(ApiError::invalid(
                "ids",
                "give the job ids or `matching` filters, one of the two",
            ))
        }
    };
    // The store checks the ids for the calls that take a list; checked
    // here too, so `cancel` (one call per id) refuses the same lists.
    JobRunNowParams::new(ids.clone())
        .validate(app.store.limits())
        .map_err(ApiError::from)?;
    let (mut changed, mut requested) = (0, 0);
    match req.action.as_str() {
        "retry" => {
            changed += jobs.requeue_dead(DeadSelect::ids(ids.clone())).await?;
            changed += jobs.run_now(JobRunNowParams::new(ids)).await?;
        }
        "run_now" => changed = jobs.run_now(JobRunNowParams::new(ids)).await?,
        "cancel" => {
            for id in ids {
                match jobs.cancel(id).await? {
                    CancelOutcome::Cancelled => changed += 1,
                    CancelOutcome::Requested => requested += 1,
                    _ => {}
                }
            }
        }
        "delete" => {
            changed += jobs.delete(JobDeleteParams::new(ids.clone())).await?;
            changed += jobs.purge_dead(DeadSelect::ids(ids)).await?;
        }
        _ => {
            return Err(ApiError::invalid(
                "action",
                "must be retry, run_now, cancel or delete",
            ))
        }
    }
    Ok(Json(BulkResult {
        changed,
        requested,
        matched,
        next_after_id,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_filters_parse_and_match() {
        let f = PayloadFilter::parse("$.customer.id = 42").expect("parse");
        assert!(f.matches(br#"{"customer": {"id": 42}}"#));
        assert!(!f.matches(br#"{"customer": {"id": "42"}}"#));
        assert!(!f.matches(br#"{"customer": 42}"#));
        assert!(!f.matches(b"\xff not json"));
        let f = PayloadFilter::parse(r#"$.items[1].kind="refund""#).expect("parse");
        assert!(f.matches(br#"{"items": [{}, {"kind": "refund"}]}"#));
        assert!(!f.matches(br#"{"items": [{"kind": "refund"}]}"#));
        let f = PayloadFilter::parse("$ = null").expect("parse");
        assert!(f.matches(b"null"));
        for bad in [
            "customer_id = 1",
            "$.a",
            "$.a = nope",
            "$..a = 1",
            "$.a[x] = 1",
            "$.a[1 = 1",
        ] {
            assert!(PayloadFilter::parse(bad).is_err(), "{bad}");
        }
    }
}
