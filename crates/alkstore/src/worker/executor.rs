//! Running one claimed job: [`run_job`] calls its handler (catching panics,
//! enforcing the queue's timeout) and hands its [`Outcome`] to the completer:
//! an ack, or a retry, permanent failure or snooze, which the completer
//! records in batches, counts and logs.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use alkstore_core::{Job, JobRetryParams, Settle};
use futures_util::FutureExt;
use tracing::Instrument;

use super::completer;
use super::handler::{JobError, JobResult};
use super::inflight::{claim_of, mark_settled, Cancel};
use super::producer::QueueShared;

/// Run `job`'s handler, settle its outcome, and drop the job from its
/// queue's running map.
pub(crate) async fn run_job(queue: Arc<QueueShared>, job: Job, cancelled: Cancel) {
    let (handler, timeout, running, qm) = (
        queue.spec.handler.clone(),
        queue.spec.timeout,
        &queue.running,
        &queue.qm,
    );
    let key = (job.id, job.claim_token);
    // Built only for outcomes other than an ack (an ack names its job by
    // `key`; the completer adds the worker).
    let claim = || claim_of(&queue.worker, key);
    let span =
        tracing::info_span!("alkstore.job", queue = %job.queue, id = job.id, attempt = job.attempt);
    let last_attempt = job.attempt >= job.max_attempts;
    qm.wait.record((job.claimed_at - job.run_at).max(0) as f64);
    let started = Instant::now();
    // The handler is called inside the future, so a panic while it builds
    // its future is caught like one while it runs. A timeout drops the
    // future; aborting this task (shutdown) cancels it.
    let engine = queue.engine.clone();
    let work = AssertUnwindSafe(
        async move { handler(job, engine, cancelled).await }.instrument(span.clone()),
    )
    .catch_unwind();
    let outcome = match timeout {
        Some(limit) => match tokio::time::timeout(limit, work).await {
            Ok(caught) => Outcome::from_caught(caught),
            Err(_) => Outcome::TimedOut(limit),
        },
        None => Outcome::from_caught(work.await),
    };
    qm.duration.record(started.elapsed().as_secs_f64());
    let retry = |error: String, after: Option<Duration>| {
        Some(Settle::Retry(JobRetryParams {
            claim: claim(),
            error,
            delay: after,
        }))
    };
    let settle = match outcome {
        Outcome::Done => None,
        Outcome::Error(JobError::Retry { error, after }) => retry(error, after),
        Outcome::Error(JobError::Fail(error)) => Some(Settle::Fail {
            claim: claim(),
            error,
        }),
        Outcome::Error(JobError::Snooze(after)) => Some(Settle::Snooze {
            claim: claim(),
            delay: after,
        }),
        Outcome::Panicked(msg) => {
            queue.counters.panicked.fetch_add(1, Ordering::Relaxed);
            span.in_scope(|| tracing::error!(panic = %msg, last_attempt, "handler panicked"));
            retry(format!("handler panicked: {msg}"), None)
        }
        Outcome::TimedOut(limit) => {
            queue.counters.timed_out.fetch_add(1, Ordering::Relaxed);
            span.in_scope(|| tracing::warn!(?limit, last_attempt, "handler timed out"));
            retry(format!("handler timed out after {limit:?}"), None)
        }
    };
    // Every outcome goes to the completer, which records it in a batch; from
    // here on the job is never handed back (it would run again).
    mark_settled(running, key);
    // Back-pressure: waits when the completer is behind.
    let sent = queue
        .acks
        .send(completer::Finished {
            key,
            settle,
            qm: qm.clone(),
            span,
        })
        .await;
    if sent.is_err() {
        tracing::warn!(queue = %queue.spec.name, "the worker is stopping; this job's outcome was not recorded and it returns when its claim expires");
    }
    if let Ok(mut r) = running.lock() {
        r.remove(&key);
    }
}

/// How a handler run ended.
enum Outcome {
    /// Returned `Ok`: ack the job.
    Done,
    /// Returned an error: retry, fail or snooze as it says.
    Error(JobError),
    /// Panicked, with the panic's message: a failed attempt.
    Panicked(String),
    /// Ran past the queue's timeout: a failed attempt.
    TimedOut(Duration),
}

impl Outcome {
    /// The outcome of a handler run whose panic, if any, was caught.
    fn from_caught(caught: std::thread::Result<JobResult>) -> Outcome {
        match caught {
            Ok(Ok(())) => Outcome::Done,
            Ok(Err(e)) => Outcome::Error(e),
            Err(payload) => {
                let msg = payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "non-string panic".into());
                Outcome::Panicked(msg)
            }
        }
    }
}
