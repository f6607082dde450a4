//! The state a worker's tasks share: the report's tallies ([`Counters`],
//! [`AckStats`]), what a finished job sends the completer ([`Finished`]),
//! and what every loop ([`LoopCtx`]) and every job of one queue
//! ([`QueueShared`], [`QueueMetrics`]) hold. Kept in one leaf module so the
//! builder, the claim loops, the executor, the heartbeat sweeper and the
//! completer all import it rather than each other.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use alkstore_core::Settle;
use tokio::sync::{watch, Semaphore};

use super::inflight::Running;
use super::opts::{QueueSpec, WorkerOpts};
use crate::AnyEngine;

/// Worker-wide tallies behind the [`WorkerReport`](super::WorkerReport), shared by every queue
/// (acks are tallied by the completer's [`AckStats`]).
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) claimed: AtomicU64,
    pub(crate) claims: AtomicU64,
    pub(crate) empty_claims: AtomicU64,
    pub(crate) handed_off: AtomicU64,
    pub(crate) retried: AtomicU64,
    pub(crate) dead: AtomicU64,
    pub(crate) panicked: AtomicU64,
    pub(crate) timed_out: AtomicU64,
    pub(crate) released: AtomicU64,
    pub(crate) snoozed: AtomicU64,
    pub(crate) cancelled: AtomicU64,
    /// Each queue's running jobs, for the process registry's count.
    pub(crate) running: std::sync::Mutex<Vec<super::inflight::Running>>,
}

impl Counters {
    /// Jobs running now, over every queue.
    pub(crate) fn running_now(&self) -> u32 {
        let maps = self.running.lock().map(|m| m.clone()).unwrap_or_default();
        let n: usize = maps
            .iter()
            .map(|r| r.lock().map(|r| r.len()).unwrap_or(0))
            .sum();
        u32::try_from(n).unwrap_or(u32::MAX)
    }
}

/// Counters shared with the worker report.
#[derive(Debug, Default)]
pub(crate) struct AckStats {
    pub(crate) acked: AtomicU64,
    /// Acks refused because the claim had expired (the job will run again).
    pub(crate) lost: AtomicU64,
    /// Outcomes given up after repeated database errors.
    pub(crate) failed: AtomicU64,
}

/// A finished job: ack it (`settle` is `None`) or record its other outcome.
pub(crate) struct Finished {
    /// Its claim's job id and token (the worker is the completer's).
    pub(crate) key: (i64, i64),
    pub(crate) settle: Option<Settle>,
    /// Its queue's metrics.
    pub(crate) qm: Arc<QueueMetrics>,
    /// Its `alkstore.job` span, so the outcome is logged inside it.
    pub(crate) span: tracing::Span,
}

/// What every loop and job task of a worker shares; each queue loop gets a
/// clone.
#[derive(Clone)]
pub(crate) struct LoopCtx {
    pub(crate) engine: AnyEngine,
    /// This worker's id, named in its claims.
    pub(crate) worker: String,
    pub(crate) opts: WorkerOpts,
    /// Where finished jobs go to be acked in batches.
    pub(crate) acks: tokio::sync::mpsc::Sender<Finished>,
    /// The report's ack tallies (transactional handlers ack themselves).
    pub(crate) ack_stats: Arc<AckStats>,
    pub(crate) counters: Arc<Counters>,
    /// Turns true when the worker should stop claiming.
    pub(crate) stop: watch::Receiver<bool>,
}

/// Per-queue metric handles, created once instead of per job.
#[derive(Clone)]
pub(crate) struct QueueMetrics {
    pub(crate) duration: metrics::Histogram,
    pub(crate) wait: metrics::Histogram,
    pub(crate) retried: metrics::Counter,
    pub(crate) dead: metrics::Counter,
    pub(crate) snoozed: metrics::Counter,
    pub(crate) cancelled: metrics::Counter,
    pub(crate) completed: metrics::Counter,
}

/// What the claim loops and job tasks of one queue share: each job task
/// holds one reference instead of its own copies.
pub(crate) struct QueueShared {
    pub(crate) spec: QueueSpec,
    pub(super) slots: Arc<Semaphore>,
    pub(crate) running: Running,
    pub(crate) qm: Arc<QueueMetrics>,
    pub(super) claimed_total: metrics::Counter,
    /// How many claim loops share the slots.
    pub(super) claimers: usize,
    /// Told when a claim came back full (a backlog): the claim loops other
    /// than the first wait for it when the queue runs dry.
    pub(super) backlog: tokio::sync::Notify,
    /// The worker's engine, ack sender, counters and id.
    pub(crate) ctx: LoopCtx,
}
