//! Processes through the facade: every [`Worker`](crate::Worker),
//! [`Subscriber`](crate::Subscriber), group runner and scheduler registers
//! itself in the store while it runs and keeps its row fresh with a
//! heartbeat, so [`Store::processes`](crate::Store::processes) (and `alk
//! processes`, the dashboard, `/metrics`) show who is alive. An operator's
//! order ([`Store::process`](crate::Store::process)) reaches a process at
//! its next heartbeat: a worker told to go **quiet** claims nothing new and
//! finishes what it runs; told to **stop**, it shuts down as at SIGTERM.
//! What the store promises is in [`alkstore_core::process`].
//!
//! ```no_run
//! # async fn demo(store: alkstore::Store) -> alkstore::Result<()> {
//! for p in store.processes().await? {
//!     println!("{} {} on {} (pid {}): {} running", p.kind, p.id, p.host, p.pid, p.running);
//! }
//! # Ok(()) }
//! ```

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

pub use alkstore_core::process::{
    host_name, new_worker_id, ProcessBeatParams, ProcessInfo, ProcessOrder, ProcessOrderParams,
    ProcessRemoveParams, MAX_PROCESS_ROLES, MAX_PROCESS_TTL, PROCESS_RETENTION,
};
use alkstore_core::{ProcessEngine, Result};
use tokio::sync::watch;

use crate::AnyEngine;

/// How often a running process beats.
pub const PROCESS_HEARTBEAT: Duration = Duration::from_secs(5);

/// How long a beat keeps a process alive: three missed beats and it is
/// shown as dead.
pub const PROCESS_TTL: Duration = Duration::from_secs(15);

/// A handle to one registered process (see the [module](self) docs).
#[derive(Debug, Clone)]
pub struct Process {
    engine: AnyEngine,
    id: String,
}

impl Process {
    pub(crate) fn new(engine: AnyEngine, id: String) -> Process {
        Process { engine, id }
    }

    /// The process's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Ask it to claim nothing new and finish what it runs (at its next
    /// heartbeat). False when no such process is registered.
    pub async fn quiet(&self) -> Result<bool> {
        self.order(ProcessOrder::Quiet).await
    }

    /// Ask it to shut down gracefully (at its next heartbeat). False when
    /// no such process is registered.
    pub async fn stop(&self) -> Result<bool> {
        self.order(ProcessOrder::Stop).await
    }

    /// Leave `order` for it.
    pub async fn order(&self, order: ProcessOrder) -> Result<bool> {
        self.engine
            .process_order(ProcessOrderParams::new(self.id.clone(), order))
            .await
    }
}

/// What a registration reports at each beat besides its fixed facts.
pub(crate) type RunningNow = Arc<dyn Fn() -> u32 + Send + Sync>;

/// A running process's registration: a task that beats every
/// [`PROCESS_HEARTBEAT`] and publishes the order it reads; dropped or
/// [`Registration::end`]ed, it stops beating (`end` also removes the row).
pub(crate) struct Registration {
    engine: AnyEngine,
    id: String,
    task: tokio::task::JoinHandle<()>,
    order: watch::Receiver<ProcessOrder>,
    /// Tells the beat task to stop between beats (see `end`).
    stop: watch::Sender<bool>,
}

/// What a runtime registers itself as: the one description every
/// runtime (worker, subscriber, group member, scheduler) gives.
pub(crate) struct Role {
    /// `worker`, `subscriber`, `group` or `scheduler`.
    pub kind: &'static str,
    /// Its id (the worker id).
    pub id: String,
    /// What it serves: queues, `stream/consumer`, `group/stream`.
    pub roles: Vec<String>,
    /// How many jobs or buckets it can run at once.
    pub concurrency: u32,
}

impl Registration {
    /// Register `role` now and beat every `every`; one rule for every
    /// runtime: a process missing three beats is shown as dead (its TTL is
    /// three intervals), with `running` read at each beat. A store error
    /// never stops the process: it is logged and the next beat tries
    /// again.
    pub(crate) fn start(
        engine: AnyEngine,
        role: Role,
        every: Duration,
        running: RunningNow,
    ) -> Self {
        let mut params = ProcessBeatParams::new(role.id, role.kind, every * 3);
        params.roles = role.roles.into_iter().take(MAX_PROCESS_ROLES).collect();
        params.concurrency = role.concurrency;
        let (tx, order) = watch::channel(ProcessOrder::Run);
        let (stop, mut stopping) = watch::channel(false);
        let id = params.id.clone();
        let beats = engine.clone();
        let task = tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                // Stop only between beats: a beat is never cut off in
                // flight, where it could still land after `end`'s removal.
                tokio::select! {
                    _ = ticks.tick() => {}
                    _ = stopping.wait_for(|s| *s) => return,
                }
                let mut p = params.clone();
                p.running = running();
                match beats.process_beat(p).await {
                    Ok(o) => {
                        tx.send_if_modified(|now| std::mem::replace(now, o) != o);
                    }
                    Err(e) => {
                        tracing::warn!(process = %params.id, error = %e, "process heartbeat failed; trying again")
                    }
                }
            }
        });
        Registration {
            engine,
            id,
            task,
            order,
            stop,
        }
    }

    /// The orders as they come.
    pub(crate) fn orders(&self) -> watch::Receiver<ProcessOrder> {
        self.order.clone()
    }

    /// `shutdown`, or an operator's quiet or stop order, whichever comes
    /// first: how a process that cannot idle (a subscriber, a group
    /// member, a scheduler) obeys either order.
    pub(crate) fn or_ordered<F: Future<Output = ()>>(
        &self,
        shutdown: F,
    ) -> impl Future<Output = ()> {
        let ordered = quiet_ordered(self.orders());
        async move {
            tokio::select! {
                () = shutdown => {}
                () = ordered => {}
            }
        }
    }

    /// Stop beating and remove the row (a clean exit); a failed removal
    /// only leaves the row to expire. The beat task is let finish a beat
    /// in flight first (aborted, that beat could still reach the store
    /// after the removal and register the process again), for at most
    /// [`PROCESS_HEARTBEAT`].
    pub(crate) async fn end(mut self) {
        self.stop.send_replace(true);
        if tokio::time::timeout(PROCESS_HEARTBEAT, &mut self.task)
            .await
            .is_err()
        {
            self.task.abort();
        }
        if let Err(e) = self
            .engine
            .process_remove(ProcessRemoveParams::new(self.id.clone()))
            .await
        {
            tracing::debug!(process = %self.id, error = %e, "process row not removed; it expires");
        }
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Resolves once `orders` says [`ProcessOrder::Stop`] (never, when the
/// registration is gone).
pub(crate) async fn stop_ordered(mut orders: watch::Receiver<ProcessOrder>) {
    if orders.wait_for(|o| *o == ProcessOrder::Stop).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Resolves once `orders` says [`ProcessOrder::Quiet`] or
/// [`ProcessOrder::Stop`].
pub(crate) async fn quiet_ordered(mut orders: watch::Receiver<ProcessOrder>) {
    if orders.wait_for(|o| *o != ProcessOrder::Run).await.is_err() {
        std::future::pending::<()>().await;
    }
}
