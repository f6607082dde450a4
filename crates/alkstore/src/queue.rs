//! Job queues through the facade: a [`Queue`] handle
//! ([`Store::queue`](crate::Store::queue)) enqueues serde payloads, claims,
//! acks and administers one queue; a [`Worker`](crate::Worker) runs
//! handlers over queues. The queue's types (options, jobs, claims,
//! outcomes) are here too.

pub use alkstore_core::queue::{meta_json, tags_json, validate_queue_name, validate_text};
pub use alkstore_core::queue::{
    AttemptError, CancelOutcome, Claim, DeadCountParams, DeadListParams, DeadPurgeParams,
    DeadRequeueParams, DeadSelect, EnqueueOpts, Enqueued, EnqueuedClaimed, Job, JobClaimParams,
    JobDeleteParams, JobEnqueueClaimedParams, JobFailParams, JobInfo, JobListParams,
    JobRetryParams, JobRunNowParams, JobSnoozeParams, JobState, NewJob, QueueAdmin,
    QueueDepthParams, QueueDepthSample, QueueEngine, QueueOpts, QueueStats, QueueThroughput,
    QueueThroughputParams, QueueTotals, RetryOutcome, Settle, Settled, Settlement,
    ThroughputBucket, DEFAULT_MAX_ATTEMPTS, MAX_ACTION_IDS, MAX_ERRORS_KEPT, MAX_ERROR_BYTES,
    MAX_META_BYTES, MAX_TAGS, THROUGHPUT_BUCKET_S, THROUGHPUT_COARSE_S, THROUGHPUT_HISTORY,
    THROUGHPUT_RETENTION,
};
use alkstore_core::Writes as _;

use alkstore_core::{Engine, Error, Result, Taker};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::runs::Runs;
use crate::{AnyEngine, Store};

/// A handle to one queue: enqueue serde payloads, claim, ack, administer.
///
/// Its writes (`enqueue…`, `ack`, `retry`, `fail`, `snooze`) run where the
/// handle was made: `store.queue(..)` commits each call on its own,
/// `tx.queue(..)` inside the transaction (see [`Runs`]). Reads and
/// administration are the store's handle's.
#[derive(Debug, Clone)]
pub struct Queue<R: Runs = Store> {
    at: R,
    name: String,
    opts: QueueOpts,
}

/// A payload as JSON (a queue's job, a stream's event).
pub(crate) fn encode<T: Serialize + ?Sized>(payload: &T) -> Result<Vec<u8>> {
    serde_json::to_vec(payload).map_err(|e| Error::Payload {
        direction: "encoding",
        source: e.into(),
    })
}

/// Enqueue `job` claimed for the waiting worker `taker` and give it over;
/// a job left pending (its queue paused, another due job ahead of it) is
/// woken for as usual, and one the worker no longer waits for is handed
/// back. On a task of its own, so that a caller that stops waiting cannot
/// leave a claimed job with nobody to run it until its claim expires.
async fn hand_off(engine: AnyEngine, job: NewJob, taker: Taker) -> Result<Enqueued> {
    let task = tokio::spawn(async move {
        let params = JobEnqueueClaimedParams::new(job, taker.worker());
        let out = engine.job_enqueue_claimed(params).await?;
        if let Some(job) = out.claimed {
            if let Some(job) = taker.give(job) {
                if let Err(e) = engine.job_release(job.claim()).await {
                    tracing::warn!(error = %e, job = job.id, "could not hand back a job its idle worker stopped waiting for; it returns when its claim expires");
                }
            }
        }
        Ok(out.enqueued)
    });
    task.await
        .map_err(|e| Error::database("job_enqueue", e.to_string()))?
}

impl<R: Runs> Queue<R> {
    pub(crate) fn new(at: R, name: String, opts: QueueOpts) -> Queue<R> {
        Queue { at, name, opts }
    }

    /// The queue's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The options stamped on this handle's enqueues.
    pub fn opts(&self) -> &QueueOpts {
        &self.opts
    }

    fn new_job(&self, payload: Vec<u8>, opts: EnqueueOpts) -> NewJob {
        NewJob {
            queue: self.name.clone(),
            payload,
            opts,
            queue_opts: self.opts.clone(),
        }
    }

    /// Enqueue a payload, serialized as JSON.
    pub async fn enqueue<T: Serialize + ?Sized>(&self, payload: &T) -> Result<Enqueued> {
        self.enqueue_with(payload, EnqueueOpts::default()).await
    }

    /// Enqueue a JSON payload with options.
    pub async fn enqueue_with<T: Serialize + ?Sized>(
        &self,
        payload: &T,
        opts: EnqueueOpts,
    ) -> Result<Enqueued> {
        self.enqueue_bytes(encode(payload)?, opts).await
    }

    /// Enqueue raw bytes with options.
    ///
    /// A job due now, with no unique key, goes straight to an idle worker
    /// of this process when one waits for the queue: inserted already
    /// claimed for it (see [`QueueEngine::job_enqueue_claimed`]), it starts
    /// without the worker's claim round trip.
    pub async fn enqueue_bytes(&self, payload: Vec<u8>, opts: EnqueueOpts) -> Result<Enqueued> {
        let job = self.new_job(payload, opts);
        let engine = self.at.place();
        let due_now = job.opts.run_at.is_none() && job.opts.delay.is_none_or(|d| d.is_zero());
        if let Some(store) = self.at.autocommit() {
            if due_now && job.opts.unique_key.is_none() {
                if let Some(taker) = store.wake_hub().takers().take(&job.queue) {
                    return hand_off(store.clone(), job, taker).await;
                }
            }
        }
        let mut out = engine.job_enqueue(vec![job]).await?;
        out.pop()
            .ok_or_else(|| Error::database("job_enqueue", "the engine returned no outcome"))
    }

    /// Enqueue many JSON payloads atomically (all or none).
    pub async fn enqueue_batch<T: Serialize>(
        &self,
        payloads: impl IntoIterator<Item = T>,
    ) -> Result<Vec<Enqueued>> {
        let jobs = payloads
            .into_iter()
            .map(|p| Ok(self.new_job(encode(&p)?, EnqueueOpts::default())))
            .collect::<Result<Vec<_>>>()?;
        self.at.place().job_enqueue(jobs).await
    }

    /// Acknowledge finished jobs; `true` per claim that was still valid.
    /// On a transaction's handle a claim no longer held is
    /// [`Error::NotHeld`] and the transaction will not commit.
    pub async fn ack(&self, claims: Vec<Claim>) -> Result<Vec<bool>> {
        self.at.place().job_ack(claims).await
    }

    /// Retry a failed attempt with the queue's backoff.
    pub async fn retry(&self, claim: Claim, error: impl Into<String>) -> Result<RetryOutcome> {
        self.at
            .place()
            .job_retry(JobRetryParams::new(claim, error))
            .await
    }

    /// Retry after a fixed delay instead of the backoff.
    pub async fn retry_after(
        &self,
        claim: Claim,
        error: impl Into<String>,
        delay: std::time::Duration,
    ) -> Result<RetryOutcome> {
        self.at
            .place()
            .job_retry(JobRetryParams::new(claim, error).delay(delay))
            .await
    }

    /// Dead-letter a claimed job now; `false` when the claim is no longer
    /// held (on a transaction's handle: [`Error::NotHeld`], and the
    /// transaction will not commit).
    pub async fn fail(&self, claim: Claim, error: impl Into<String>) -> Result<bool> {
        self.at
            .place()
            .job_fail(JobFailParams::new(claim, error.into()))
            .await
    }

    /// Run a claimed job again after `delay` without using an attempt;
    /// returns the new due time, or `None` when the claim is no longer
    /// held (on a transaction's handle: [`Error::NotHeld`], and the
    /// transaction will not commit).
    pub async fn snooze(&self, claim: Claim, delay: std::time::Duration) -> Result<Option<i64>> {
        self.at
            .place()
            .job_snooze(JobSnoozeParams::new(claim, delay))
            .await
    }
}

impl Queue {
    /// Claim up to `n` due jobs for `worker`.
    pub async fn claim(&self, worker: &str, n: u32) -> Result<Vec<Job>> {
        self.at
            .engine()
            .job_claim(JobClaimParams::new(self.name.clone(), worker, n))
            .await
    }

    /// Extend a claim by the job's visibility timeout; `None` when lost.
    pub async fn heartbeat(&self, claim: Claim) -> Result<Option<i64>> {
        self.at.engine().job_heartbeat(claim).await
    }

    /// Hand a claimed job back unfinished, without using an attempt.
    pub async fn release(&self, claim: Claim) -> Result<bool> {
        self.at.engine().job_release(claim).await
    }

    /// Look up one of this queue's jobs by id, live, dead or kept after
    /// completion; `None` when there is none (or the id is another
    /// queue's).
    pub async fn get(&self, id: i64) -> Result<Option<JobInfo>> {
        let job = self.at.engine().job_get(id).await?;
        Ok(job.filter(|j| j.queue == self.name))
    }

    /// Cancel one of this queue's live jobs by id: a pending job moves to
    /// dead as `cancelled`; a running one is flagged and its handler told.
    /// [`CancelOutcome::NotFound`] when no live job of this queue has the
    /// id (a job of another queue is left alone).
    pub async fn cancel(&self, id: i64) -> Result<CancelOutcome> {
        match self.get(id).await? {
            Some(_) => self.at.engine().job_cancel(id).await,
            None => Ok(CancelOutcome::NotFound),
        }
    }

    /// Stop claims from this queue on every worker of the store (enqueues
    /// go on; running jobs finish). `true` when it was not paused yet.
    pub async fn pause(&self) -> Result<bool> {
        self.at.engine().queue_pause(self.name.clone()).await
    }

    /// Let claims go on again; `true` when it was paused.
    pub async fn resume(&self) -> Result<bool> {
        self.at.engine().queue_resume(self.name.clone()).await
    }

    /// Whether the queue is paused.
    pub async fn is_paused(&self) -> Result<bool> {
        Ok(self.at.engine().queue_paused().await?.contains(&self.name))
    }

    /// Up to `limit` of this queue's dead letters with ids above
    /// `after_id` (paging: the last id of the previous page), lowest first.
    pub async fn dead_letters(&self, after_id: Option<i64>, limit: u32) -> Result<Vec<JobInfo>> {
        let mut params = DeadListParams::new(limit).queue(self.name.clone());
        if let Some(id) = after_id {
            params = params.after_id(id);
        }
        self.at.engine().dead_list(params).await
    }

    /// How many dead letters the queue holds.
    pub async fn dead_count(&self) -> Result<u64> {
        self.at
            .engine()
            .dead_count(DeadSelect::queue(self.name.clone()))
            .await
    }

    /// Run dead letters of this queue again (these ids, or all of them):
    /// pending again with fresh attempts; how many were requeued.
    pub async fn requeue_dead(&self, ids: Option<Vec<i64>>) -> Result<u64> {
        self.at.engine().dead_requeue(self.dead_select(ids)).await
    }

    /// Delete dead letters of this queue for good (these ids, or all of
    /// them); how many were deleted.
    pub async fn purge_dead(&self, ids: Option<Vec<i64>>) -> Result<u64> {
        self.at.engine().dead_purge(self.dead_select(ids)).await
    }

    fn dead_select(&self, ids: Option<Vec<i64>>) -> DeadSelect {
        let select = DeadSelect::queue(self.name.clone());
        match ids {
            Some(ids) => select.with_ids(ids),
            None => select,
        }
    }

    /// Counts by state.
    pub async fn stats(&self) -> Result<QueueStats> {
        self.at.engine().queue_stats(self.name.clone()).await
    }

    /// Whether the queue exists yet. Queues have no rows of their own: one
    /// exists while it holds jobs (live, dead, or completed and kept), once
    /// it has finished one (the store's throughput totals), and while it is
    /// paused. Each is a look-up of this one queue, cheapest first (no scan
    /// of every queue's jobs).
    pub async fn exists(&self) -> Result<bool> {
        let e = self.at.engine();
        let s = self.stats().await?;
        if s.live() + s.dead + s.completed > 0 || e.queue_paused().await?.contains(&self.name) {
            return Ok(true);
        }
        let window = std::time::Duration::from_secs(THROUGHPUT_BUCKET_S.unsigned_abs());
        let finished = e
            .queue_throughput(QueueThroughputParams::queue(self.name.clone(), window))
            .await?;
        Ok(finished
            .totals
            .iter()
            .any(|t| t.queue == self.name && t.completed + t.failed > 0))
    }
}

/// Decoding helpers on [`Job`].
pub trait JobExt {
    /// Decode the payload from JSON.
    fn decode<T: DeserializeOwned>(&self) -> Result<T>;
}

impl JobExt for Job {
    fn decode<T: DeserializeOwned>(&self) -> Result<T> {
        decode(&self.payload)
    }
}

/// A JSON payload decoded (a job's, an event's).
pub(crate) fn decode<T: DeserializeOwned>(payload: &[u8]) -> Result<T> {
    serde_json::from_slice(payload).map_err(|e| Error::Payload {
        direction: "decoding",
        source: e.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A worker that stops waiting after its offer was taken (shutdown)
    /// does not strand the job claimed for it: the job is handed back,
    /// pending with its attempt given back, and anyone can claim it.
    #[tokio::test]
    async fn a_job_for_a_worker_that_stopped_waiting_is_handed_back() {
        let dir = tempfile::tempdir().expect("tmp");
        let url = format!("sqlite://{}", dir.path().join("t.db").display());
        let store = Store::open(&url).await.expect("open");
        let queue = store.queue("mail");
        let takers = store.engine().wake_hub().takers();
        let waiting = takers.offer("mail", "gone");
        let taker = takers.take("mail").expect("the offer");
        assert_eq!(takers.waiting("mail"), 0);
        drop(waiting);
        let job = NewJob::new("mail", b"1".to_vec());
        let id = hand_off(store.engine().clone(), job, taker)
            .await
            .expect("enqueue")
            .id();
        let stats = queue.stats().await.expect("stats");
        assert_eq!((stats.ready, stats.processing), (1, 0));
        let again = queue.claim("w2", 10).await.expect("claim");
        assert_eq!((again.len(), again[0].id, again[0].attempt), (1, id, 1));
    }

    /// Offers whose worker stopped waiting are skipped, and an enqueue
    /// with nobody waiting takes the usual path.
    #[tokio::test]
    async fn offers_of_workers_that_stopped_waiting_are_skipped() {
        let dir = tempfile::tempdir().expect("tmp");
        let url = format!("sqlite://{}", dir.path().join("t.db").display());
        let store = Store::open(&url).await.expect("open");
        let takers = store.engine().wake_hub().takers();
        drop(takers.offer("mail", "a"));
        let live = takers.offer("mail", "b");
        drop(takers.offer("mail", "c"));
        assert_eq!(takers.waiting("mail"), 1);
        assert_eq!(takers.take("mail").expect("b").worker(), "b");
        assert!(takers.take("mail").is_none());
        assert!(!takers.withdraw(&live), "taken: its taker answers");
        let mut kept = takers.offer("mail", "d");
        assert!(takers.withdraw(&kept), "not taken");
        assert!(takers.take("mail").is_none());
        drop(live);
        assert_eq!(kept.given().await, None, "a withdrawn offer gets nothing");
        store.queue("mail").enqueue(&1).await.expect("enqueue");
        assert_eq!(store.queue("mail").stats().await.expect("stats").ready, 1);
    }
}
