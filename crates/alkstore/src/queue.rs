use alkstore_core::{
    CancelOutcome, Claim, EnqueueOpts, Enqueued, Error, Job, JobClaimParams, JobInfo,
    JobRetryParams, NewJob, QueueAdmin, QueueEngine, QueueOpts, QueueStats, Result, RetryOutcome,
};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::Store;

/// A handle to one queue: enqueue serde payloads, claim, ack.
#[derive(Debug, Clone)]
pub struct Queue {
    store: Store,
    name: String,
    opts: QueueOpts,
}

fn encode<T: Serialize + ?Sized>(payload: &T) -> Result<Vec<u8>> {
    serde_json::to_vec(payload).map_err(|e| Error::Payload {
        direction: "encoding",
        source: e.into(),
    })
}

impl Queue {
    pub(crate) fn new(store: Store, name: String, opts: QueueOpts) -> Queue {
        Queue { store, name, opts }
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
    pub async fn enqueue_bytes(&self, payload: Vec<u8>, opts: EnqueueOpts) -> Result<Enqueued> {
        let mut out = self
            .store
            .engine()
            .job_enqueue(vec![self.new_job(payload, opts)])
            .await?;
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
        self.store.engine().job_enqueue(jobs).await
    }

    /// Claim up to `n` due jobs for `worker`.
    pub async fn claim(&self, worker: &str, n: u32) -> Result<Vec<Job>> {
        self.store
            .engine()
            .job_claim(JobClaimParams::new(self.name.clone(), worker, n))
            .await
    }

    /// Acknowledge finished jobs; true per claim that was still valid.
    pub async fn ack(&self, claims: Vec<Claim>) -> Result<Vec<bool>> {
        self.store.engine().job_ack(claims).await
    }

    /// Retry a failed attempt with the queue's backoff.
    pub async fn retry(&self, claim: Claim, error: impl Into<String>) -> Result<RetryOutcome> {
        self.store
            .engine()
            .job_retry(JobRetryParams {
                claim,
                error: error.into(),
                delay: None,
            })
            .await
    }

    /// Retry after a fixed delay instead of the backoff.
    pub async fn retry_after(
        &self,
        claim: Claim,
        error: impl Into<String>,
        delay: std::time::Duration,
    ) -> Result<RetryOutcome> {
        self.store
            .engine()
            .job_retry(JobRetryParams {
                claim,
                error: error.into(),
                delay: Some(delay),
            })
            .await
    }

    /// Dead-letter a claimed job now; false when the claim is no longer held.
    pub async fn fail(&self, claim: Claim, error: impl Into<String>) -> Result<bool> {
        self.store.engine().job_fail((claim, error.into())).await
    }

    /// Extend a claim by the job's visibility timeout; `None` when lost.
    pub async fn heartbeat(&self, claim: Claim) -> Result<Option<i64>> {
        self.store.engine().job_heartbeat(claim).await
    }

    /// Hand a claimed job back unfinished, without using an attempt.
    pub async fn release(&self, claim: Claim) -> Result<bool> {
        self.store.engine().job_release(claim).await
    }

    /// Run a claimed job again after `delay` without using an attempt;
    /// returns the new due time, or `None` when the claim is no longer held.
    pub async fn snooze(&self, claim: Claim, delay: std::time::Duration) -> Result<Option<i64>> {
        self.store.engine().job_snooze((claim, delay)).await
    }

    /// Look up a job (of any queue) by id, live or dead.
    pub async fn get(&self, id: i64) -> Result<Option<JobInfo>> {
        self.store.engine().job_get(id).await
    }

    /// Cancel a live job (of any queue) by id: a pending job moves to dead
    /// as `cancelled`; a running one is flagged and its handler told.
    pub async fn cancel(&self, id: i64) -> Result<CancelOutcome> {
        self.store.engine().job_cancel(id).await
    }

    /// Counts by state.
    pub async fn stats(&self) -> Result<QueueStats> {
        self.store.engine().queue_stats(self.name.clone()).await
    }
}

/// Decoding helpers on [`Job`].
pub trait JobExt {
    /// Decode the payload from JSON.
    fn decode<T: DeserializeOwned>(&self) -> Result<T>;
}

impl JobExt for Job {
    fn decode<T: DeserializeOwned>(&self) -> Result<T> {
        serde_json::from_slice(&self.payload).map_err(|e| Error::Payload {
            direction: "decoding",
            source: e.into(),
        })
    }
}
