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

pub(crate) struct Completer {
    tx: mpsc::Sender<Claim>,
    task: JoinHandle<()>,
}

impl Completer {
    pub(crate) fn spawn(engine: AnyEngine, max_batch: usize, stats: Arc<AckStats>) -> Completer {
        let (tx, mut rx) = mpsc::channel::<Claim>(max_batch.max(1) * 4);
        let task = tokio::spawn(async move {
            let mut batch = Vec::with_capacity(max_batch);
            while let Some(first) = rx.recv().await {
                batch.push(first);
                while batch.len() < max_batch {
                    match rx.try_recv() {
                        Ok(c) => batch.push(c),
                        Err(_) => break,
                    }
                }
                flush(&engine, std::mem::take(&mut batch), &stats).await;
            }
        });
        Completer { tx, task }
    }

    pub(crate) fn sender(&self) -> mpsc::Sender<Claim> {
        self.tx.clone()
    }

    /// Flush everything sent so far and stop. Call after every sender is gone.
    pub(crate) async fn close(self) {
        drop(self.tx);
        let _ = self.task.await;
    }
}

async fn flush(engine: &AnyEngine, claims: Vec<Claim>, stats: &AckStats) {
    let n = claims.len() as u64;
    let mut delay = Duration::from_millis(20);
    for attempt in 1..=10 {
        match engine.job_ack(claims.clone()).await {
            Ok(flags) => {
                let ok = flags.iter().filter(|f| **f).count() as u64;
                stats.acked.fetch_add(ok, Ordering::Relaxed);
                stats.lost.fetch_add(n - ok, Ordering::Relaxed);
                metrics::counter!("alkstore_jobs_completed_total").increment(ok);
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
