//! Running one claimed job: [`run_job`] calls its handler (catching panics,
//! enforcing the queue's timeout) and hands its [`Outcome`] to the completer:
//! an ack, or a retry, permanent failure or snooze, which the completer
//! records in batches, counts and logs. A transactional handler runs in the
//! job's own transaction, which acks the job and commits itself
//! ([`run_in_tx`]); only its other outcomes go to the completer.

use alkstore_core::Writes as _;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use alkstore_core::{Claim, ErrorKind, Job, JobRetryParams, Settle};
use futures_util::FutureExt;
use tracing::Instrument;

use super::handler::{ErasedTxHandler, Handler, JobError, JobResult};
use super::inflight::{claim_of, mark_settled, Cancel, Running};
use super::shared::{Finished, QueueShared};
use crate::{AnyEngine, Tx};

/// Run `job`'s handler, settle its outcome, and drop the job from its
/// queue's running map.
pub(crate) async fn run_job(queue: Arc<QueueShared>, job: Job, cancelled: Cancel) {
    let (ctx, qm) = (&queue.ctx, &queue.qm);
    let key = (job.id, job.claim_token);
    // Built only for outcomes other than an ack (an ack names its job by
    // `key`; the completer adds the worker).
    let claim = || claim_of(&ctx.worker, key);
    let span =
        tracing::info_span!("alkstore.job", queue = %job.queue, id = job.id, attempt = job.attempt);
    let last_attempt = job.attempt >= job.max_attempts;
    qm.wait.record((job.claimed_at - job.run_at).max(0) as f64);
    let started = Instant::now();
    // A panic while the handler builds its future is caught like one while
    // it runs. The handler is called before the first await, so this task's
    // future holds the handler's (boxed) future, not the job: with a
    // thousand jobs in flight, a smaller task keeps more of the store's
    // pages in cache. A timeout drops the future; aborting this task
    // (shutdown) cancels it.
    let engine = ctx.engine.clone();
    let outcome = match &queue.spec.handler {
        Handler::Plain(handler) => {
            let built = span.in_scope(|| {
                std::panic::catch_unwind(AssertUnwindSafe(|| handler(job, engine, cancelled)))
            });
            finish_run(built, queue.spec.timeout, &span).await
        }
        // Boxed: its transaction would enlarge every plain job's task.
        Handler::Tx(handler) => {
            Box::pin(run_in_tx(
                handler,
                job,
                engine,
                cancelled,
                claim(),
                queue.spec.timeout,
                &span,
            ))
            .await
        }
    };
    qm.duration.record(started.elapsed().as_secs_f64());
    settle_outcome(&queue, key, last_attempt, span, outcome).await;
}

/// Record how the run of the job with claim `key` ended: a transactional
/// commit or a lost claim is counted here; anything else goes to the
/// completer (an ack, a retry, a failure, a snooze). Then the job leaves
/// its queue's running map.
pub(crate) async fn settle_outcome(
    queue: &QueueShared,
    key: (i64, i64),
    last_attempt: bool,
    span: tracing::Span,
    outcome: Outcome,
) {
    let (ctx, running, qm) = (&queue.ctx, &queue.running, &queue.qm);
    let claim = || claim_of(&ctx.worker, key);
    let retry = |error: String, after: Option<Duration>| {
        let mut params = JobRetryParams::new(claim(), error);
        params.delay = after;
        Some(Settle::Retry(params))
    };
    let settle = match outcome {
        Outcome::Done => None,
        Outcome::Committed => {
            ctx.ack_stats.acked.fetch_add(1, Ordering::Relaxed);
            qm.completed.increment(1);
            forget(running, key);
            return;
        }
        Outcome::Lost => {
            ctx.ack_stats.lost.fetch_add(1, Ordering::Relaxed);
            span.in_scope(|| {
                tracing::warn!("the claim was lost before the commit: the handler's writes were rolled back; the job is left to whoever holds it now");
            });
            forget(running, key);
            return;
        }
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
            ctx.counters.panicked.fetch_add(1, Ordering::Relaxed);
            span.in_scope(|| tracing::error!(panic = %msg, last_attempt, "handler panicked"));
            retry(format!("handler panicked: {msg}"), None)
        }
        Outcome::TimedOut(limit) => {
            ctx.counters.timed_out.fetch_add(1, Ordering::Relaxed);
            span.in_scope(|| tracing::warn!(?limit, last_attempt, "handler timed out"));
            retry(format!("handler timed out after {limit:?}"), None)
        }
    };
    // Every outcome goes to the completer, which records it in a batch; from
    // here on the job is never handed back (it would run again).
    let finished = Finished {
        key,
        settle,
        qm: qm.clone(),
        span,
    };
    // Back-pressure: waits when the completer is behind, the job marked
    // settled meanwhile. Sent at once (no await before the removal below),
    // it needs no mark. The waiting send is boxed: its future would enlarge
    // every job's task.
    use tokio::sync::mpsc::error::TrySendError;
    let sent = match ctx.acks.try_send(finished) {
        Ok(()) => true,
        Err(TrySendError::Full(finished)) => {
            mark_settled(running, key);
            Box::pin(ctx.acks.send(finished)).await.is_ok()
        }
        Err(TrySendError::Closed(_)) => false,
    };
    if !sent {
        tracing::warn!(queue = %queue.spec.name, "the worker is stopping; this job's outcome was not recorded and it returns when its claim expires");
    }
    forget(running, key);
}

/// Drop a finished job from its queue's running map.
fn forget(running: &Running, key: (i64, i64)) {
    if let Ok(mut r) = running.lock() {
        r.remove(&key);
    }
}

/// Await a handler's future (`built`: or the panic that building it
/// raised), catching a panic and enforcing the queue's timeout.
pub(crate) async fn finish_run<F>(
    built: std::thread::Result<F>,
    timeout: Option<Duration>,
    span: &tracing::Span,
) -> Outcome
where
    F: std::future::Future<Output = JobResult>,
{
    let fut = match built {
        Err(panic) => return Outcome::from_caught(Err(panic)),
        Ok(fut) => fut,
    };
    let work = AssertUnwindSafe(fut.instrument(span.clone())).catch_unwind();
    match timeout {
        // Boxed: its timer would enlarge every job's task.
        Some(limit) => match Box::pin(tokio::time::timeout(limit, work)).await {
            Ok(caught) => Outcome::from_caught(caught),
            Err(_) => Outcome::TimedOut(limit),
        },
        None => Outcome::from_caught(work.await),
    }
}

/// Run a transactional handler: open the job's transaction, run the
/// handler in it, and on `Ok` ack the job inside it and commit. Anything
/// else rolls the handler's writes back and returns the outcome for the
/// normal path (retry, fail, snooze); a claim found lost at the ack is
/// [`Outcome::Lost`].
async fn run_in_tx(
    handler: &ErasedTxHandler,
    job: Job,
    engine: AnyEngine,
    cancelled: Cancel,
    claim: Claim,
    timeout: Option<Duration>,
    span: &tracing::Span,
) -> Outcome {
    let mut tx = match Tx::begin(&engine).await {
        Ok(tx) => tx,
        Err(e) => {
            return Outcome::Error(JobError::retry(format!(
                "could not begin the job's transaction: {e}"
            )))
        }
    };
    let built = span.in_scope(|| {
        std::panic::catch_unwind(AssertUnwindSafe(|| {
            handler(&mut tx, job, engine, cancelled)
        }))
    });
    let ran = finish_run(built, timeout, span).await;
    let not_committed = |tx: Tx, outcome: Outcome| async move {
        if let Err(e) = tx.rollback().await {
            span.in_scope(
                || tracing::warn!(error = %e, "rolling back the job's transaction failed"),
            );
        }
        outcome
    };
    if !matches!(ran, Outcome::Done) {
        return not_committed(tx, ran).await;
    }
    // A call of the handler's own failed and it returned `Ok` anyway: the
    // transaction cannot commit; a failed attempt.
    if let Some(reason) = tx.poisoned() {
        let error = format!("the job's transaction cannot commit: {reason}");
        return not_committed(tx, Outcome::Error(JobError::retry(error))).await;
    }
    if let Err(e) = tx.job_ack(claim).await {
        let outcome = match e.kind() {
            ErrorKind::NotHeld => Outcome::Lost,
            _ => Outcome::Error(JobError::retry(format!("acking the job failed: {e}"))),
        };
        return not_committed(tx, outcome).await;
    }
    match tx.commit().await {
        Ok(()) => Outcome::Committed,
        Err(e) if matches!(e.kind(), ErrorKind::NotHeld | ErrorKind::RolledBack) => Outcome::Lost,
        // Not committed (or, on a connection lost during the commit,
        // maybe committed: then the retry finds the job gone and changes
        // nothing).
        Err(e) => Outcome::Error(JobError::retry(format!(
            "committing the job's transaction failed: {e}"
        ))),
    }
}

/// How a handler run ended.
pub(crate) enum Outcome {
    /// Returned `Ok`: ack the job.
    Done,
    /// A transactional handler returned `Ok` and its writes committed
    /// with the job's ack.
    Committed,
    /// A transactional handler returned `Ok` but the job's claim was lost
    /// before the commit: its writes were rolled back.
    Lost,
    /// Returned an error: retry, fail or snooze as it says.
    Error(JobError),
    /// Panicked, with the panic's message: a failed attempt.
    Panicked(String),
    /// Ran past the queue's timeout: a failed attempt.
    TimedOut(Duration),
}

impl Outcome {
    /// The outcome of a handler run whose panic, if any, was caught.
    pub(crate) fn from_caught(caught: std::thread::Result<JobResult>) -> Outcome {
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
