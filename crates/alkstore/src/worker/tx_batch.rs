//! Transactional handlers in batches ([`Worker::tx_batch`]): up to N
//! claimed jobs of a queue run one after another in one transaction, which
//! acks them all and commits once, so a backlog of short jobs costs one
//! commit per batch instead of one per job.
//!
//! When a job's handler fails (an error, a panic, a timeout, or a call of
//! its own that failed inside the transaction), the whole transaction rolls
//! back: that job's outcome goes the normal way (retry, fail or snooze, in
//! the completer), and the batch's other jobs run again in a new
//! transaction, since their writes went with the rollback. A job whose
//! claim is found lost at the ack is dropped the same way (left to its new
//! holder) and the rest run again. So in a batch a job's handler may run
//! more than once within one attempt; only the run that commits leaves
//! writes in the database.
//!
//! [`Worker::tx_batch`]: crate::Worker::tx_batch

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Instant;

use alkstore_core::queue::JobAckParams;
use alkstore_core::{Claim, Error, Job, Result};

use super::executor::{finish_run, settle_outcome, Outcome};
use super::handler::{Handler, JobError};
use super::inflight::{claim_of, Cancel};
use super::shared::QueueShared;
use crate::Tx;

/// A job of the batch not settled yet.
struct Pending {
    job: Job,
    cancel: Cancel,
    key: (i64, i64),
    last_attempt: bool,
    span: tracing::Span,
}

/// Run `jobs` (claimed by this worker, registered in the queue's running
/// map) through the queue's transactional handler in as few transactions
/// as their outcomes allow (see the module docs), and settle each.
pub(crate) async fn run_tx_batch(queue: Arc<QueueShared>, jobs: Vec<(Job, Cancel)>) {
    let Handler::Tx(handler) = &queue.spec.handler else {
        // Batches are made only for transactional handlers.
        for (job, cancel) in jobs {
            super::executor::run_job(queue.clone(), job, cancel).await;
        }
        return;
    };
    let ctx = &queue.ctx;
    let mut pending: Vec<Pending> = jobs
        .into_iter()
        .map(|(job, cancel)| {
            queue
                .qm
                .wait
                .record((job.claimed_at - job.run_at).max(0) as f64);
            Pending {
                key: (job.id, job.claim_token),
                last_attempt: job.attempt >= job.max_attempts,
                span: tracing::info_span!("alkstore.job", queue = %job.queue, id = job.id, attempt = job.attempt),
                job,
                cancel,
            }
        })
        .collect();
    while !pending.is_empty() {
        let tx = match Tx::begin(&ctx.engine).await {
            Ok(tx) => tx,
            Err(e) => {
                let error = format!("could not begin the jobs' transaction: {e}");
                return settle_all(&queue, pending, || Outcome::Error(JobError::retry(&error)))
                    .await;
            }
        };
        let (mut tx, failed) = run_handlers(&queue, handler, tx, &pending).await;
        if let Some((i, outcome)) = failed {
            rollback(tx).await;
            let failed = pending.remove(i);
            settle_outcome(
                &queue,
                failed.key,
                failed.last_attempt,
                failed.span,
                outcome,
            )
            .await;
            continue;
        }
        match ack_all(&mut tx, &ctx.worker, &pending).await {
            Ok(held) if held.iter().all(|h| *h) => {}
            Ok(held) => {
                rollback(tx).await;
                let mut kept = Vec::with_capacity(pending.len());
                for (p, held) in pending.into_iter().zip(held) {
                    if held {
                        kept.push(p);
                    } else {
                        settle_outcome(&queue, p.key, p.last_attempt, p.span, Outcome::Lost).await;
                    }
                }
                pending = kept;
                continue;
            }
            Err(e) => {
                rollback(tx).await;
                let error = format!("acking the jobs failed: {e}");
                return settle_all(&queue, pending, || Outcome::Error(JobError::retry(&error)))
                    .await;
            }
        }
        return match tx.commit().await {
            Ok(()) => settle_all(&queue, pending, || Outcome::Committed).await,
            // Not committed (or, on a connection lost during the commit,
            // maybe committed: then the retries find the jobs gone and
            // change nothing).
            Err(e) => {
                let error = format!("committing the jobs' transaction failed: {e}");
                settle_all(&queue, pending, || Outcome::Error(JobError::retry(&error))).await
            }
        };
    }
}

/// Run each pending job's handler in turn inside `tx`; `tx` back, with
/// the first job that did not succeed (its index and outcome), if any.
async fn run_handlers(
    queue: &QueueShared,
    handler: &super::handler::ErasedTxHandler,
    mut tx: Tx,
    pending: &[Pending],
) -> (Tx, Option<(usize, Outcome)>) {
    let engine = &queue.ctx.engine;
    for (i, p) in pending.iter().enumerate() {
        let started = Instant::now();
        // Moved in, so the closure runs once and may hand out the
        // future borrowing the transaction.
        let (job, engine, cancel) = (p.job.clone(), engine.clone(), p.cancel.clone());
        let built = p.span.in_scope(|| {
            std::panic::catch_unwind(AssertUnwindSafe(|| handler(&mut tx, job, engine, cancel)))
        });
        let ran = finish_run(built, queue.spec.timeout, &p.span).await;
        queue.qm.duration.record(started.elapsed().as_secs_f64());
        match ran {
            // A call of the handler's own failed and it returned `Ok`
            // anyway: the transaction cannot commit; a failed attempt.
            Outcome::Done => {
                if let Some(reason) = tx.poisoned() {
                    let error = format!("the jobs' transaction cannot commit: {reason}");
                    return (tx, Some((i, Outcome::Error(JobError::retry(error)))));
                }
            }
            other => return (tx, Some((i, other))),
        }
    }
    (tx, None)
}

/// Ack every pending job inside `tx` in one statement: whether each claim
/// was still held. (The engine's call for many claims; the wrapper's
/// `job_ack` takes one.) On an error the caller rolls back.
async fn ack_all(tx: &mut Tx, worker: &str, pending: &[Pending]) -> Result<Vec<bool>> {
    let claims: Vec<Claim> = pending.iter().map(|p| claim_of(worker, p.key)).collect();
    // Unfenced: a lost claim is a `false` here, for the caller to settle.
    let held = tx.run_unfenced::<JobAckParams>(claims).await?;
    if held.len() != pending.len() {
        return Err(Error::database("job_ack", "one outcome per claim expected"));
    }
    Ok(held)
}

/// Settle every job of `pending` with the outcome `outcome` makes.
async fn settle_all(queue: &QueueShared, pending: Vec<Pending>, outcome: impl Fn() -> Outcome) {
    for p in pending {
        settle_outcome(queue, p.key, p.last_attempt, p.span, outcome()).await;
    }
}

/// Roll `tx` back (a failure is only logged: the transaction ends either
/// way).
async fn rollback(tx: Tx) {
    if let Err(e) = tx.rollback().await {
        tracing::warn!(error = %e, "rolling back the jobs' transaction failed");
    }
}
