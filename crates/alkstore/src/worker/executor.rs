//! Running one claimed job: [`run_job`] calls its handler (catching panics,
//! enforcing the queue's timeout) and settles the [`Outcome`]: an ack handed
//! to the completer, or a retry, permanent failure or snooze recorded in the
//! store, each counted, measured and logged.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use alkstore_core::{Job, QueueEngine, Result, RetryParams};
use futures_util::FutureExt;
use tokio::sync::watch;
use tracing::Instrument;

use super::completer;
use super::handler::{ErasedHandler, JobError, JobResult};
use super::inflight::{mark_settled, Running};
use super::producer::{LoopCtx, QueueMetrics};

/// Run `job`'s handler, settle its outcome, and drop the job from `running`.
pub(crate) async fn run_job(
    ctx: LoopCtx,
    handler: ErasedHandler,
    timeout: Option<Duration>,
    job: Job,
    cancelled: watch::Receiver<bool>,
    running: Running,
    qm: QueueMetrics,
) {
    let claim = job.claim();
    let span =
        tracing::info_span!("alkstore.job", queue = %job.queue, id = job.id, attempt = job.attempt);
    let queue = job.queue.clone();
    let last_attempt = job.attempt >= job.max_attempts;
    qm.wait.record((job.claimed_at - job.run_at).max(0) as f64);
    let started = Instant::now();
    // The handler is called inside the future, so a panic while it builds
    // its future is caught like one while it runs. A timeout drops the
    // future; aborting this task (shutdown) cancels it.
    let engine = ctx.engine.clone();
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
    let retry = |error: String, after: Option<Duration>| RetryParams {
        claim: claim.clone(),
        error,
        delay: after,
    };
    let settled = match outcome {
        Outcome::Done => {
            mark_settled(&running, &claim);
            // Back-pressure: waits when the completer is behind.
            let _ = ctx
                .acks
                .send(completer::Finished {
                    claim: claim.clone(),
                    completed: qm.completed.clone(),
                })
                .await;
            Ok(())
        }
        Outcome::Error(JobError::Retry { error, after }) => {
            settle_retry(&ctx, retry(error, after), &qm, &span).await
        }
        Outcome::Error(JobError::Fail(error)) => ctx
            .engine
            .job_fail(claim.clone(), error.clone())
            .await
            .map(|moved| {
                if moved {
                    ctx.counters.dead.fetch_add(1, Ordering::Relaxed);
                    qm.dead.increment(1);
                    span.in_scope(
                        || tracing::warn!(%error, "job failed permanently; dead-lettered"),
                    );
                }
            }),
        Outcome::Error(JobError::Snooze(after)) => ctx
            .engine
            .job_snooze(claim.clone(), after)
            .await
            .map(|due| {
                if due.is_some() {
                    ctx.counters.snoozed.fetch_add(1, Ordering::Relaxed);
                    qm.snoozed.increment(1);
                    span.in_scope(|| tracing::debug!(?after, "job snoozed"));
                }
            }),
        Outcome::Panicked(msg) => {
            ctx.counters.panicked.fetch_add(1, Ordering::Relaxed);
            span.in_scope(|| tracing::error!(panic = %msg, last_attempt, "handler panicked"));
            settle_retry(
                &ctx,
                retry(format!("handler panicked: {msg}"), None),
                &qm,
                &span,
            )
            .await
        }
        Outcome::TimedOut(limit) => {
            ctx.counters.timed_out.fetch_add(1, Ordering::Relaxed);
            span.in_scope(|| tracing::warn!(?limit, last_attempt, "handler timed out"));
            settle_retry(
                &ctx,
                retry(format!("handler timed out after {limit:?}"), None),
                &qm,
                &span,
            )
            .await
        }
    };
    if let Err(e) = settled {
        tracing::warn!(queue = %queue, error = %e, "could not record the job's outcome; it returns when its claim expires");
    }
    if let Ok(mut r) = running.lock() {
        r.remove(&(claim.id, claim.token));
    }
}

/// Record a failed attempt and log what became of the job, with the error:
/// rescheduled (INFO); dead-lettered, or stopped and dead-lettered as
/// cancelled (WARN); or not recorded because its claim had lapsed (WARN).
async fn settle_retry(
    ctx: &LoopCtx,
    params: RetryParams,
    qm: &QueueMetrics,
    span: &tracing::Span,
) -> Result<()> {
    let error = params.error.clone();
    match ctx.engine.job_retry(params).await? {
        alkstore_core::RetryOutcome::Scheduled(run_at) => {
            ctx.counters.retried.fetch_add(1, Ordering::Relaxed);
            qm.retried.increment(1);
            span.in_scope(|| tracing::info!(%error, run_at, "job failed; retrying"));
        }
        alkstore_core::RetryOutcome::Dead => {
            ctx.counters.dead.fetch_add(1, Ordering::Relaxed);
            qm.dead.increment(1);
            span.in_scope(
                || tracing::warn!(%error, "job failed on its last attempt; dead-lettered"),
            );
        }
        alkstore_core::RetryOutcome::Cancelled => {
            ctx.counters.dead.fetch_add(1, Ordering::Relaxed);
            qm.dead.increment(1);
            span.in_scope(
                || tracing::warn!(%error, "cancelled job stopped; dead-lettered as cancelled"),
            );
        }
        alkstore_core::RetryOutcome::NotHeld => {
            span.in_scope(
                || tracing::warn!(%error, "job failed but its claim had lapsed; it runs again"),
            );
        }
    }
    Ok(())
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
