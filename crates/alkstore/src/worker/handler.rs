//! What a handler sees (`JobCtx`) and returns (`JobError`), and the type
//! erasure that lets one worker hold handlers of different payload types,
//! plain ([`ErasedHandler`]) or transactional ([`ErasedTxHandler`]).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use alkstore_core::{Job, QueueEngine, Result};
use serde::de::DeserializeOwned;

use super::inflight::Cancel;

use crate::{AnyEngine, Tx, TxFuture};

/// A claimed job handed to a handler, with its decoded payload.
pub struct JobCtx<T> {
    job: Job,
    payload: T,
    engine: AnyEngine,
    cancelled: Cancel,
}

impl<T> JobCtx<T> {
    /// The decoded payload.
    pub fn payload(&self) -> &T {
        &self.payload
    }

    /// Take the payload.
    pub fn into_payload(self) -> T {
        self.payload
    }

    /// The job's id.
    pub fn id(&self) -> i64 {
        self.job.id
    }

    /// This attempt's number, from 1.
    pub fn attempt(&self) -> u32 {
        self.job.attempt
    }

    /// The claimed job (queue, priority, attempts, claim expiry, raw bytes).
    pub fn job(&self) -> &Job {
        &self.job
    }

    /// Save `value` (as JSON) as this job's result, kept a day: others read
    /// it with [`Results::get`](crate::results::Results::get) or wait for
    /// it with [`Results::wait`](crate::results::Results::wait). Saved at
    /// once, in its own transaction; a later attempt's save replaces it.
    /// [`Worker::queue_returning`](crate::Worker::queue_returning) saves a
    /// handler's return value this way.
    pub async fn save_result<R: serde::Serialize>(&self, value: &R) -> Result<()> {
        let bytes = serde_json::to_vec(value).map_err(|e| crate::Error::invalid("result", e))?;
        self.save_result_raw(bytes).await
    }

    /// Save raw bytes as this job's result (see [`JobCtx::save_result`]).
    pub async fn save_result_raw(&self, value: Vec<u8>) -> Result<()> {
        use alkstore_core::ResultEngine;
        self.engine
            .result_save(alkstore_core::results::ResultSaveParams::new(
                self.job.id,
                value,
            ))
            .await
            .map(|_| ())
    }

    /// Throttle this queue's work: admit this job under the store-wide
    /// limit `name` (at most `limit` per `per`, shared by every worker), or
    /// snooze it until the window resets (no attempt is used).
    ///
    /// ```no_run
    /// # async fn demo(job: alkstore::JobCtx<String>) -> alkstore::JobResult {
    /// use std::time::Duration;
    /// job.throttle("smtp", 50, Duration::from_secs(1)).await?;
    /// // … send the mail …
    /// # Ok(()) }
    /// ```
    pub async fn throttle(&self, name: &str, limit: u32, per: Duration) -> JobResult {
        use alkstore_core::{Clock, RateEngine};
        let d = self
            .engine
            .rate_acquire(alkstore_core::rate::RateAcquireParams::new(
                name, limit, per,
            ))
            .await
            .map_err(JobError::retry)?;
        if d.admitted {
            return Ok(());
        }
        // Snoozes are whole seconds: round up, so the job does not come
        // straight back while the window is still full.
        let wait_ms = (d.reset_at_ms - alkstore_core::SystemClock.now_ms()).max(1);
        let wait_s = u64::try_from(wait_ms).unwrap_or(1).div_ceil(1_000);
        Err(JobError::snooze(Duration::from_secs(wait_s)))
    }

    /// Extend the claim now (the worker also does this on its own for long
    /// jobs). Returns false when the claim was lost.
    pub async fn heartbeat(&self) -> Result<bool> {
        Ok(self.engine.job_heartbeat(self.job.claim()).await?.is_some())
    }

    /// Whether someone cancelled this job while it runs (`alk cancel`,
    /// `Queue::cancel`). The worker learns of it within about a second.
    /// Stop early and return any error: the job then ends in dead as
    /// `cancelled` (returning `Ok` acks it as done).
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.is_set()
    }

    /// Resolves when this job is cancelled (never, if it is not), for use in
    /// `tokio::select!` beside the handler's work.
    ///
    /// ```no_run
    /// # async fn demo(job: alkstore::JobCtx<()>) -> alkstore::JobResult {
    /// tokio::select! {
    ///     _ = job.cancelled() => Err(alkstore::JobError::fail("cancelled")),
    ///     _ = tokio::time::sleep(std::time::Duration::from_secs(60)) => Ok(()),
    /// }
    /// # }
    /// ```
    pub async fn cancelled(&self) {
        self.cancelled.wait().await;
    }
}

impl<T: fmt::Debug> fmt::Debug for JobCtx<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobCtx")
            .field("id", &self.job.id)
            .field("queue", &self.job.queue)
            .field("attempt", &self.job.attempt)
            .field("payload", &self.payload)
            .finish()
    }
}

/// Why a handler did not finish its job.
///
/// Any `std::error::Error` converts into a retry, so handlers can use `?`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobError {
    /// Try again with the queue's backoff (or after `after`); dead-lettered
    /// once attempts run out.
    Retry {
        /// What went wrong.
        error: String,
        /// Overrides the backoff.
        after: Option<Duration>,
    },
    /// Do not try again: dead-letter now.
    Fail(String),
    /// Not an error: run the job again after this long, without using an
    /// attempt (waiting on a rate limit or on another job).
    Snooze(Duration),
}

impl JobError {
    /// Retry with the queue's backoff.
    pub fn retry(error: impl fmt::Display) -> Self {
        JobError::Retry {
            error: error.to_string(),
            after: None,
        }
    }

    /// Retry after a fixed delay.
    pub fn retry_after(error: impl fmt::Display, after: Duration) -> Self {
        JobError::Retry {
            error: error.to_string(),
            after: Some(after),
        }
    }

    /// Dead-letter without further attempts.
    pub fn fail(error: impl fmt::Display) -> Self {
        JobError::Fail(error.to_string())
    }

    /// Run again after `after` without using an attempt.
    pub fn snooze(after: Duration) -> Self {
        JobError::Snooze(after)
    }
}

impl<E: std::error::Error> From<E> for JobError {
    fn from(e: E) -> Self {
        JobError::retry(e)
    }
}

/// A handler's result.
pub type JobResult = std::result::Result<(), JobError>;

pub(crate) type BoxFuture = Pin<Box<dyn Future<Output = JobResult> + Send>>;

/// A handler with its payload type erased: decodes, then calls the user's
/// function. A payload that does not decode is a permanent failure.
pub(crate) type ErasedHandler = Arc<dyn Fn(Job, AnyEngine, Cancel) -> BoxFuture + Send + Sync>;

pub(crate) fn raw<F, Fut>(f: F) -> ErasedHandler
where
    F: Fn(JobCtx<Vec<u8>>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = JobResult> + Send + 'static,
{
    Arc::new(move |mut job: Job, engine: AnyEngine, cancelled| {
        let payload = std::mem::take(&mut job.payload);
        Box::pin(f(JobCtx {
            job,
            payload,
            engine,
            cancelled,
        }))
    })
}

/// A handler whose return value is saved as the job's result (JSON) before
/// the job is acked; a failed save retries the job.
pub(crate) fn returning<T, R, F, Fut>(f: F) -> ErasedHandler
where
    T: DeserializeOwned + Send + 'static,
    R: serde::Serialize + Send + 'static,
    F: Fn(JobCtx<T>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = std::result::Result<R, JobError>> + Send + 'static,
{
    let f = Arc::new(f);
    typed(move |job: JobCtx<T>| {
        let f = f.clone();
        async move {
            let (engine, id) = (job.engine.clone(), job.job.id);
            let value = f(job).await?;
            let bytes = serde_json::to_vec(&value)
                .map_err(|e| JobError::Fail(format!("the result does not encode: {e}")))?;
            use alkstore_core::ResultEngine;
            engine
                .result_save(alkstore_core::results::ResultSaveParams::new(id, bytes))
                .await
                .map_err(|e| JobError::retry(format!("saving the result failed: {e}")))?;
            Ok(())
        }
    })
}

pub(crate) fn typed<T, F, Fut>(f: F) -> ErasedHandler
where
    T: DeserializeOwned + Send + 'static,
    F: Fn(JobCtx<T>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = JobResult> + Send + 'static,
{
    let f = Arc::new(f);
    Arc::new(move |job: Job, engine: AnyEngine, cancelled| {
        let decoded: std::result::Result<T, _> = serde_json::from_slice(&job.payload);
        match decoded {
            Ok(payload) => {
                let f = f.clone();
                Box::pin(async move {
                    f(JobCtx {
                        job,
                        payload,
                        engine,
                        cancelled,
                    })
                    .await
                })
            }
            Err(e) => {
                let msg = format!("payload does not decode: {e}");
                Box::pin(async move { Err(JobError::Fail(msg)) })
            }
        }
    })
}

/// A transactional handler's future, borrowing the transaction.
pub(crate) type TxBoxFuture<'t> = TxFuture<'t, (), JobError>;

/// A transactional handler with its payload type erased (see
/// [`Worker::queue_tx`](crate::Worker::queue_tx)): decodes, then calls the
/// user's function with the transaction the worker opened for the job.
pub(crate) type ErasedTxHandler =
    Arc<dyn for<'t> Fn(&'t mut Tx, Job, AnyEngine, Cancel) -> TxBoxFuture<'t> + Send + Sync>;

/// A queue's handler: plain, or transactional.
#[derive(Clone)]
pub(crate) enum Handler {
    /// Acked after it returns (at least once).
    Plain(ErasedHandler),
    /// Runs inside a transaction that the job's ack commits with.
    Tx(ErasedTxHandler),
}

pub(crate) fn tx_raw<F>(f: F) -> ErasedTxHandler
where
    F: for<'t> Fn(&'t mut Tx, JobCtx<Vec<u8>>) -> TxBoxFuture<'t> + Send + Sync + 'static,
{
    Arc::new(
        move |tx: &mut Tx, mut job: Job, engine: AnyEngine, cancelled| {
            let payload = std::mem::take(&mut job.payload);
            f(
                tx,
                JobCtx {
                    job,
                    payload,
                    engine,
                    cancelled,
                },
            )
        },
    )
}

pub(crate) fn tx_typed<T, F>(f: F) -> ErasedTxHandler
where
    T: DeserializeOwned + Send + 'static,
    F: for<'t> Fn(&'t mut Tx, JobCtx<T>) -> TxBoxFuture<'t> + Send + Sync + 'static,
{
    Arc::new(
        move |tx: &mut Tx, job: Job, engine: AnyEngine, cancelled| match serde_json::from_slice::<T>(
            &job.payload,
        ) {
            Ok(payload) => f(
                tx,
                JobCtx {
                    job,
                    payload,
                    engine,
                    cancelled,
                },
            ),
            Err(e) => {
                let msg = format!("payload does not decode: {e}");
                Box::pin(async move { Err(JobError::Fail(msg)) })
            }
        },
    )
}
