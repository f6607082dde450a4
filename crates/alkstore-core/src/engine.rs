//! The base trait every engine implements, whatever areas it serves.

use std::future::Future;
use std::time::Duration;

use crate::{Result, SweepReport, Wake};

/// What an engine is and can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// The engine's name (`sqlite`, `postgres`).
    pub name: &'static str,
    /// Whether processes on other hosts can share the store (a server
    /// database) rather than processes on one machine (a file).
    pub multi_host: bool,
}

/// The base of every engine: what it is, its wake hints, and store-wide
/// maintenance. Each area (queues today; streams, groups, schedules, locks
/// next) adds its own traits on top (`QueueEngine`, `QueueAdmin`, …).
pub trait Engine: Send + Sync + 'static {
    /// What this engine is and can do.
    fn capabilities(&self) -> Capabilities;

    /// Subscribe to wake hints: commits that may have made jobs claimable.
    /// Delayed jobs and expired claims send no hint; they come due on whole
    /// seconds, so a worker polls at second boundaries for them.
    fn wake_subscribe(&self) -> tokio::sync::broadcast::Receiver<Wake>;

    /// The engine's maintenance pass (see [`Engine::sweep`]); with
    /// `every`, only when nobody swept the store within that interval
    /// (`None` then). Engines implement this; callers use `sweep` and
    /// `sweep_due`, which validate first.
    fn sweep_if_due(
        &self,
        every: Option<Duration>,
    ) -> impl Future<Output = Result<Option<SweepReport>>> + Send;

    /// Maintenance on every queue: expire overdue pending jobs, hand expired
    /// claims back (or dead-letter them when out of attempts), and prune dead
    /// letters and kept completed jobs past their retention.
    fn sweep(&self) -> impl Future<Output = Result<SweepReport>> + Send {
        async move { Ok(self.sweep_if_due(None).await?.unwrap_or_default()) }
    }

    /// [`Engine::sweep`], but at most once per `every` for the whole store,
    /// however many processes call it: `None` when another caller swept
    /// within the interval. Workers call this, so a fleet of workers sweeps
    /// a store once per interval, not once per worker.
    fn sweep_due(
        &self,
        every: Duration,
    ) -> impl Future<Output = Result<Option<SweepReport>>> + Send {
        async move {
            crate::validate::validate_duration("sweep interval", Some(every))?;
            self.sweep_if_due(Some(every)).await
        }
    }
}
