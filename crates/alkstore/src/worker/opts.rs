//! What a worker is configured with: the worker-wide [`WorkerOpts`] and
//! each registered queue's [`QueueSpec`]. Plain data, kept apart from the
//! builder so the per-queue loops read it without importing the builder.

use std::time::Duration;

use super::handler::Handler;

/// Worker-wide options.
#[derive(Debug, Clone)]
pub struct WorkerOpts {
    /// How long graceful shutdown waits for running handlers before handing
    /// their jobs back (default 30 s).
    pub shutdown_timeout: Duration,
    /// Longest idle wait between claims when no hint arrives (default 1 s).
    /// An idle wait also ends just after the next whole second, where delayed
    /// jobs and claim expiries fall due, so values above 1 s wait no longer.
    pub poll_interval: Duration,
    /// Most jobs per claim (default 1,000).
    pub max_claim: u32,
    /// Most acks per statement (default 1,000).
    pub ack_batch: usize,
    /// Claim loops per queue with at least 128 handler slots (default 2): one
    /// claims while the other's claim is being written.
    pub claimers: usize,
    /// How often the worker runs the store's maintenance sweep: expiring
    /// overdue jobs, handing expired claims back, and pruning dead letters
    /// and kept completed jobs past retention (default 60 s; `None` leaves it
    /// to someone else).
    pub sweep_interval: Option<Duration>,
    /// How often the worker beats in the store's process registry, where
    /// it also reads an operator's quiet or stop order (default 5 s;
    /// 10 ms..=20 min). Three missed beats and it is shown as dead.
    pub process_heartbeat: Duration,
}

impl Default for WorkerOpts {
    fn default() -> Self {
        WorkerOpts {
            shutdown_timeout: Duration::from_secs(30),
            poll_interval: Duration::from_secs(1),
            max_claim: 1_000,
            ack_batch: 1_000,
            claimers: 2,
            sweep_interval: Some(Duration::from_secs(60)),
            process_heartbeat: crate::process::PROCESS_HEARTBEAT,
        }
    }
}

/// A registered queue: its handler and per-queue settings.
pub(crate) struct QueueSpec {
    pub(crate) name: String,
    pub(crate) handler: Handler,
    pub(crate) concurrency: usize,
    pub(crate) timeout: Option<Duration>,
    /// Most jobs of a transactional handler per transaction (1: one each).
    pub(crate) tx_batch: usize,
}
