//! Batched acks. Finished jobs are sent here; one task acks whatever has
//! queued up in a single statement. While one ack is in flight the next batch
//! accumulates, so batches grow with load and latency stays low when idle.
//! The channel is bounded: when acks fall behind, handlers wait (back-pressure)
//! instead of piling up unbounded memory.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use alkstore_core::{Claim, QueueEngine};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::AnyEngine;

/// Counters shared with the worker report.
#[derive(Debug, Default)]
pub(crate) struct AckStats {
    pub acked: AtomicU64,
    /// Acks refused because the claim had expired (the job will run again).
    pub lost: AtomicU64,
    /// Acks given up after repeated database errors.
    pub failed: AtomicU64,
}

/// A finished job to ack, with its queue's completion counter.
pub(crate) struct Finished {
    pub claim: Claim,
    pub completed: metrics::Counter,
}

/// Ack statements allowed in flight at once.
const FLUSHES_IN_FLIGHT: usize = 2;

pub(crate) struct Completer {
    tx: mpsc::Sender<Finished>,
    task: JoinHandle<()>,
}

impl Completer {
    pub(crate) fn spawn(engine: AnyEngine, max_batch: usize, stats: Arc<AckStats>) -> Completer {
        let (tx, mut rx) = mpsc::channel::<Finished>(max_batch.max(1) * 4);
        let task = tokio::spawn(async move {
            // Up to FLUSHES_IN_FLIGHT batches at once: PostgreSQL runs them on
            // separate connections (and cores); SQLite folds them into one
            // group commit.
            let mut in_flight = tokio::task::JoinSet::new();
            while let Some(first) = rx.recv().await {
                let mut batch = Vec::with_capacity(max_batch);
                batch.push(first);
                while batch.len() < max_batch {
                    match rx.try_recv() {
                        Ok(c) => batch.push(c),
                        Err(_) => break,
                    }
                }
                if in_flight.len() >= FLUSHES_IN_FLIGHT {
                    in_flight.join_next().await;
                }
                let (engine, stats) = (engine.clone(), stats.clone());
                in_flight.spawn(async move { flush(&engine, batch, &stats).await });
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

async fn flush(engine: &AnyEngine, batch: Vec<Finished>, stats: &AckStats) {
    let n = batch.len() as u64;
    let claims: Vec<Claim> = batch.iter().map(|f| f.claim.clone()).collect();
    let mut delay = Duration::from_millis(20);
    for attempt in 1..=10 {
        match engine.job_ack(claims.clone()).await {
            Ok(flags) => {
                let ok = flags.iter().filter(|f| **f).count() as u64;
                stats.acked.fetch_add(ok, Ordering::Relaxed);
                stats.lost.fetch_add(n - ok, Ordering::Relaxed);
                for (f, acked) in batch.iter().zip(&flags) {
                    if *acked {
                        f.completed.increment(1);
                    }
                }
                if ok < n {
                    tracing::warn!(
                        lost = n - ok,
                        "acks refused: claims had expired; those jobs will run again"
                    );
                }
                return;
            }
            Err(e) => {
                tracing::warn!(error = %e, attempt, "batch ack failed; retrying");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(2));
            }
        }
    }
    stats.failed.fetch_add(n, Ordering::Relaxed);
    tracing::error!(
        jobs = n,
        "giving up on acks; the jobs will run again when their claims expire"
    );
}
