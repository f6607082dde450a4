//! The base trait every engine implements, whatever areas it serves.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::call::engine_call;
use crate::sweep::{SweepParams, SweepReport};
use crate::{Checked, Limits, Result, Wake, WakeHub};

/// What an engine is and can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// The engine's name (`sqlite`, `postgres`).
    pub name: &'static str,
    /// Whether processes on other hosts can share the store (a server
    /// database) rather than processes on one machine (a file).
    pub multi_host: bool,
    /// Whether the engine pushes notifications to this process's wake hub
    /// (`Wake::Message`, PostgreSQL) rather than keeping them for listeners
    /// to read (`notify_poll`, SQLite).
    pub pushes_notifications: bool,
}

/// What every engine keeps the same way: the store's limits, this
/// process's wake hub, and whether the engine was closed. An engine holds
/// one and hands it out through [`Engine::state`]; the trait's `limits`,
/// `wake_hub`, `is_closed` and (unless the engine has more to release)
/// `close` come from it.
///
/// ```
/// use alkstore_core::{EngineState, Limits};
/// let state = EngineState::new(Limits::default());
/// assert!(!state.is_closed());
/// state.mark_closed();
/// assert!(state.is_closed());
/// ```
#[derive(Debug)]
pub struct EngineState {
    limits: Limits,
    wake: Arc<WakeHub>,
    closed: AtomicBool,
}

impl Default for EngineState {
    fn default() -> Self {
        EngineState::new(Limits::default())
    }
}

impl EngineState {
    /// A fresh, open engine's state under `limits`.
    pub fn new(limits: Limits) -> Self {
        EngineState {
            limits,
            wake: Arc::new(WakeHub::default()),
            closed: AtomicBool::new(false),
        }
    }

    /// The store's limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// This process's wake hub.
    pub fn wake_hub(&self) -> &WakeHub {
        &self.wake
    }

    /// The wake hub, shared: for a watcher that holds it weakly.
    pub fn wake_handle(&self) -> &Arc<WakeHub> {
        &self.wake
    }

    /// Refuse every later call (see [`Engine::close`]).
    pub fn mark_closed(&self) {
        self.closed.store(true, Ordering::SeqCst);
    }

    /// Whether the engine was closed.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }
}

/// The base of every engine: what it is, its limits, its wake hints, and
/// store-wide maintenance. Each area (queues, streams, consumer groups,
/// schedules, locks, rate limits, job results, notify, transactions) adds
/// a driver trait on top (`QueueDriver`, `StreamDriver`, …), and core
/// gives every driver the traits callers use (`QueueEngine`, `QueueAdmin`,
/// `StreamEngine`, …) through the one wrapper in [`crate::call`].
///
/// **Unstable**: part of the engines' seam, which changes as the engines
/// do. Applications use the `alkstore` crate's handles (`Store::queue`,
/// `Store::jobs`, …) instead.
pub trait Engine: Send + Sync + 'static {
    /// What this engine is and can do.
    fn capabilities(&self) -> Capabilities;

    /// The state every engine keeps the same way (see [`EngineState`]).
    fn state(&self) -> &EngineState;

    /// The store's limits, which every call's parameters are checked against.
    fn limits(&self) -> &Limits {
        self.state().limits()
    }

    /// Where this process's wake hints are sent: the wrapper hints here after
    /// a write that made jobs claimable, so workers in this process wake at
    /// once (others learn from the engine's cross-process signal).
    fn wake_hub(&self) -> &WakeHub {
        self.state().wake_hub()
    }

    /// Stop accepting calls: every later call through the engine's traits
    /// fails with [`Error::Closed`](crate::Error::Closed) before it reaches
    /// the database, on every clone of this engine. Calls already running
    /// finish. Engines also release what they hold (PostgreSQL closes its
    /// pools). Idempotent.
    fn close(&self) {
        self.state().mark_closed();
    }

    /// Whether [`Engine::close`] was called (on this engine or a clone).
    fn is_closed(&self) -> bool {
        self.state().is_closed()
    }

    /// Subscribe to wake hints: commits that may have made jobs claimable.
    /// Delayed jobs and expired claims send no hint; they come due on whole
    /// seconds, so a worker polls at second boundaries for them.
    fn wake_subscribe(&self) -> tokio::sync::broadcast::Receiver<Wake>;

    /// Driver: the engine's maintenance pass (see [`Engine::sweep`]); with
    /// `every`, only when nobody swept the store within that interval
    /// (`None` then). Engines implement this; callers use `sweep` and
    /// `sweep_due`.
    fn sweep_if_due(
        &self,
        params: Checked<SweepParams>,
    ) -> impl Future<Output = Result<Option<SweepReport>>> + Send;

    /// Send what the engine holds back after a call returned. On PostgreSQL
    /// the cross-process wake-ups of autocommit enqueues and publishes go
    /// out just after their commit, from a task of their own, so that the
    /// caller does not wait for them: a process about to exit calls this,
    /// or other processes' workers learn of its last writes only at their
    /// next poll. Errors are not returned: a wake-up that cannot be sent is
    /// logged, and the job is found by polling.
    fn flush(&self) -> impl Future<Output = ()> + Send {
        async {}
    }

    /// Reclaim the space of deleted and updated rows in the store's hot
    /// tables when it has grown past a threshold (PostgreSQL: `VACUUM
    /// (SKIP_LOCKED)` of the job table once its dead tuples outnumber
    /// 50,000 and twice its live ones, so a busy queue stays fast even where
    /// autovacuum is off or lagging). Returns how many tables it vacuumed;
    /// engines without dead tuples (SQLite reuses freed pages) do nothing.
    /// The worker's maintenance-lock holder calls it every second.
    fn reclaim(&self) -> impl Future<Output = Result<u64>> + Send {
        async { Ok(0) }
    }

    /// Maintenance on every queue: expire overdue pending jobs, hand expired
    /// claims back (or dead-letter them when out of attempts), and prune dead
    /// letters and kept completed jobs past their retention.
    fn sweep(&self) -> impl Future<Output = Result<SweepReport>> + Send {
        async move {
            let report = sweep_call(self, SweepParams::default()).await?;
            Ok(report.unwrap_or_default())
        }
    }

    /// [`Engine::sweep`], but at most once per `every` for the whole store,
    /// however many processes call it: `None` when another caller swept
    /// within the interval. Workers call this, so a fleet of workers sweeps
    /// a store once per interval, not once per worker.
    fn sweep_due(
        &self,
        every: Duration,
    ) -> impl Future<Output = Result<Option<SweepReport>>> + Send {
        sweep_call(self, SweepParams { every: Some(every) })
    }
}

/// A sweep through the wrapper; rescued claims wake this process's workers.
async fn sweep_call<E: Engine + ?Sized>(
    engine: &E,
    params: SweepParams,
) -> Result<Option<SweepReport>> {
    engine_call!(engine, sweep, params => SweepParams, |p| async move {
        let report = engine.sweep_if_due(p).await?;
        if report.is_some_and(|r| r.rescued > 0) {
            engine.wake_hub().all();
        }
        Ok(report)
    })
}
