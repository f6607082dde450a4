//! Batched outcomes. Every finished job is sent here: acks, and the retries,
//! failures and snoozes of jobs that did not succeed. One task takes whatever
//! has queued up and records it in as few calls as possible: one ack
//! statement for the successes, one transaction (`job_settle`) for the rest.
//! While one flush is in flight the next batch accumulates, so batches grow
//! with load and latency stays low when idle. The channel is bounded: when
//! the store falls behind, handlers wait (back-pressure) instead of piling up
//! unbounded memory.

use alkstore_core::Writes as _;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use alkstore_core::{Claim, RetryOutcome, Settle, Settled};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::inflight::claim_of;
use super::shared::{AckStats, Counters, Finished};
use crate::AnyEngine;

/// Flushes allowed in flight at once.
const FLUSHES_IN_FLIGHT: usize = 2;

/// The smallest batch that starts a flush while another is in flight.
const SECOND_FLUSH_MIN: usize = 64;

/// Move what is queued on `rx` into `batch`, up to `max` in all.
fn take_queued(rx: &mut mpsc::Receiver<Finished>, batch: &mut Vec<Finished>, max: usize) {
    while batch.len() < max {
        match rx.try_recv() {
            Ok(c) => batch.push(c),
            Err(_) => break,
        }
    }
}

/// The task that records finished jobs, and the sender that feeds it.
pub(crate) struct Completer {
    tx: mpsc::Sender<Finished>,
    task: JoinHandle<()>,
}

impl Completer {
    pub(crate) fn spawn(
        engine: AnyEngine,
        worker: &str,
        max_batch: usize,
        stats: Arc<AckStats>,
        counters: Arc<Counters>,
    ) -> Completer {
        let (tx, mut rx) = mpsc::channel::<Finished>(max_batch.max(1) * 4);
        let worker: Arc<str> = Arc::from(worker);
        let task = tokio::spawn(async move {
            // Up to FLUSHES_IN_FLIGHT batches at once: PostgreSQL runs them on
            // separate connections (and cores); SQLite folds them into one
            // group commit.
            let mut in_flight = tokio::task::JoinSet::new();
            while let Some(first) = rx.recv().await {
                let mut batch = Vec::with_capacity(max_batch);
                batch.push(first);
                take_queued(&mut rx, &mut batch, max_batch);
                // A second flush runs beside the first only with a batch
                // worth a statement of its own; a smaller one waits for the
                // flush in flight and grows meanwhile. (Under load, handlers
                // finishing one by one would otherwise keep a connection busy
                // with one-job acks.) With nothing in flight it goes at once.
                while in_flight.len() >= FLUSHES_IN_FLIGHT
                    || (!in_flight.is_empty() && batch.len() < SECOND_FLUSH_MIN)
                {
                    in_flight.join_next().await;
                    take_queued(&mut rx, &mut batch, max_batch);
                }
                let (engine, worker, stats, counters) = (
                    engine.clone(),
                    worker.clone(),
                    stats.clone(),
                    counters.clone(),
                );
                in_flight
                    .spawn(async move { flush(&engine, &worker, batch, &stats, &counters).await });
            }
            while in_flight.join_next().await.is_some() {}
        });
        Completer { tx, task }
    }

    pub(crate) fn sender(&self) -> mpsc::Sender<Finished> {
        self.tx.clone()
    }

    /// Flush everything sent so far and stop. Call after every sender is gone.
    pub(crate) async fn close(self) {
        drop(self.tx);
        let _ = self.task.await;
    }
}

/// Record one batch: the acks in one statement and the other outcomes in
/// one transaction, side by side.
async fn flush(
    engine: &AnyEngine,
    worker: &str,
    batch: Vec<Finished>,
    stats: &AckStats,
    counters: &Counters,
) {
    let (acks, others): (Vec<Finished>, Vec<Finished>) =
        batch.into_iter().partition(|f| f.settle.is_none());
    tokio::join!(
        flush_acks(engine, worker, acks, stats),
        flush_settles(engine, others, stats, counters)
    );
}

/// Try `call` up to 10 times with a growing pause; `None` when it never
/// succeeded (the jobs come back when their claims expire).
async fn with_retries<T, F, Fut>(what: &str, mut call: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = alkstore_core::Result<T>>,
{
    // 20 ms, doubling to 2 s, ten tries.
    let mut delay = alkstore_core::Backoff::new(Duration::from_millis(20), Duration::from_secs(2));
    for attempt in 1..=10 {
        match call().await {
            Ok(v) => return Some(v),
            Err(e) => {
                tracing::warn!(error = %e, attempt, "{what} failed; retrying");
                tokio::time::sleep(delay.next()).await;
            }
        }
    }
    None
}

async fn flush_acks(engine: &AnyEngine, worker: &str, batch: Vec<Finished>, stats: &AckStats) {
    if batch.is_empty() {
        return;
    }
    let n = batch.len() as u64;
    let claims: Vec<Claim> = batch.iter().map(|f| claim_of(worker, f.key)).collect();
    let Some(flags) = with_retries("batch ack", || engine.job_ack(claims.clone())).await else {
        stats.failed.fetch_add(n, Ordering::Relaxed);
        tracing::error!(
            jobs = n,
            "giving up on acks; the jobs will run again when their claims expire"
        );
        return;
    };
    let ok = flags.iter().filter(|f| **f).count() as u64;
    stats.acked.fetch_add(ok, Ordering::Relaxed);
    stats.lost.fetch_add(n - ok, Ordering::Relaxed);
    for (f, acked) in batch.iter().zip(&flags) {
        if *acked {
            f.qm.completed.increment(1);
        }
    }
    if ok < n {
        tracing::warn!(
            lost = n - ok,
            "acks refused: claims had expired; those jobs will run again"
        );
    }
}

async fn flush_settles(
    engine: &AnyEngine,
    batch: Vec<Finished>,
    stats: &AckStats,
    counters: &Counters,
) {
    if batch.is_empty() {
        return;
    }
    let settles: Vec<Settle> = batch.iter().filter_map(|f| f.settle.clone()).collect();
    let Some(outcomes) =
        with_retries("recording outcomes", || engine.job_settle(settles.clone())).await
    else {
        stats
            .failed
            .fetch_add(batch.len() as u64, Ordering::Relaxed);
        tracing::error!(
            jobs = batch.len(),
            "could not record the jobs' outcomes; they return when their claims expire"
        );
        return;
    };
    for (f, outcome) in batch.iter().zip(outcomes) {
        record(f, outcome, counters);
    }
}

/// Count and log what became of one job that did not succeed.
fn record(f: &Finished, outcome: Settled, counters: &Counters) {
    let error = match &f.settle {
        Some(Settle::Retry(p)) => p.error.as_str(),
        Some(Settle::Fail { error, .. }) => error.as_str(),
        _ => "",
    };
    let dead = || {
        counters.dead.fetch_add(1, Ordering::Relaxed);
        f.qm.dead.increment(1);
    };
    let _in_span = f.span.enter();
    match outcome {
        Settled::Retried(RetryOutcome::Scheduled(run_at)) => {
            counters.retried.fetch_add(1, Ordering::Relaxed);
            f.qm.retried.increment(1);
            tracing::info!(%error, run_at, "job failed; retrying");
        }
        Settled::Retried(RetryOutcome::Dead) => {
            dead();
            tracing::warn!(%error, "job failed on its last attempt; dead-lettered");
        }
        Settled::Retried(RetryOutcome::Cancelled) => {
            dead();
            tracing::warn!(%error, "cancelled job stopped; dead-lettered as cancelled");
        }
        Settled::Failed(true) => {
            dead();
            tracing::warn!(%error, "job failed permanently; dead-lettered");
        }
        Settled::Snoozed(Some(run_at)) => {
            counters.snoozed.fetch_add(1, Ordering::Relaxed);
            f.qm.snoozed.increment(1);
            tracing::debug!(run_at, "job snoozed");
        }
        Settled::Retried(RetryOutcome::NotHeld)
        | Settled::Failed(false)
        | Settled::Snoozed(None) => {
            tracing::warn!(%error, "the job's outcome was not recorded: its claim had lapsed (or it was cancelled); it runs again or is dead");
        }
    }
}
