//! Schedules through the facade: register them with
//! [`ScheduleEngine`] calls on the store's engine,
//! and run a [`Scheduler`] — in as many processes as you like; each
//! boundary still fires exactly once, with no leader.
//!
//! ```no_run
//! # async fn demo(store: alkstore::Store) -> alkstore::Result<()> {
//! use alkstore::schedule::{ScheduleSetParams, Scheduler};
//! use alkstore::ScheduleEngine;
//!
//! store
//!     .engine()
//!     .schedule_set(ScheduleSetParams::new("nightly-report", "0 2 * * *", "reports").tz("Europe/Paris"))
//!     .await?;
//! Scheduler::new(store).run_until(alkstore::shutdown_signal()).await?;
//! # Ok(()) }
//! ```

use std::future::Future;
use std::time::Duration;

pub use alkstore_core::schedule::{
    fired_job_key, schedule_not_found, FireReport, Fired, ScheduleFireParams, ScheduleInfo,
    ScheduleNameParams, ScheduleSetParams, Spec, MAX_CATCH_UP,
};
use alkstore_core::{Clock, Result, ScheduleEngine, SystemClock};

use crate::{AnyEngine, Store};

/// Scheduler options.
#[derive(Debug, Clone)]
pub struct SchedulerOpts {
    /// The longest the scheduler sleeps (default 10 s). It wakes at the
    /// next boundary it knows of; a schedule registered or changed
    /// elsewhere with an earlier boundary is noticed within this.
    pub poll: Duration,
    /// Most schedules fired per call (default 100); more due ones are
    /// fired by the next call at once.
    pub batch: u32,
}

impl Default for SchedulerOpts {
    fn default() -> Self {
        SchedulerOpts {
            poll: Duration::from_secs(10),
            batch: 100,
        }
    }
}

/// What a scheduler did before it stopped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SchedulerReport {
    /// Jobs it enqueued (one per boundary it fired).
    pub fired: u64,
    /// Missed boundaries it skipped under the catch-up cap.
    pub skipped: u64,
}

/// Fires the store's due schedules, waking at their next boundary.
#[derive(Debug, Clone)]
pub struct Scheduler {
    engine: AnyEngine,
    opts: SchedulerOpts,
}

impl Scheduler {
    /// A scheduler for `store` with default options.
    pub fn new(store: Store) -> Scheduler {
        Scheduler {
            engine: store.engine().clone(),
            opts: SchedulerOpts::default(),
        }
    }

    /// Replace the options.
    #[must_use]
    pub fn opts(mut self, opts: SchedulerOpts) -> Scheduler {
        self.opts = opts;
        self
    }

    /// Fire due schedules until `shutdown` resolves. Store errors are
    /// logged and retried a second later (a boundary fires late, never
    /// twice or not at all).
    pub async fn run_until(self, shutdown: impl Future<Output = ()>) -> Result<SchedulerReport> {
        self.run_until_with(shutdown, |_| {}).await
    }

    /// [`Scheduler::run_until`], calling `on_fire` with each job it
    /// enqueues right after the enqueue commits (to log it, or to measure
    /// how long after its boundary it fired).
    pub async fn run_until_with(
        self,
        shutdown: impl Future<Output = ()>,
        mut on_fire: impl FnMut(&Fired),
    ) -> Result<SchedulerReport> {
        let mut report = SchedulerReport::default();
        tokio::pin!(shutdown);
        let params = ScheduleFireParams {
            limit: self.opts.batch,
        };
        loop {
            let wait = match self.engine.schedule_fire_due(params).await {
                Ok(r) => {
                    report.fired += r.fired.len() as u64;
                    report.skipped += r.skipped;
                    for f in &r.fired {
                        on_fire(f);
                        tracing::debug!(schedule = %f.schedule, boundary_ms = f.boundary_ms, job = f.job_id, "schedule fired");
                    }
                    if r.skipped > 0 {
                        tracing::warn!(
                            skipped = r.skipped,
                            "missed schedule boundaries skipped (catch-up cap)"
                        );
                    }
                    if r.fired.len() >= params.limit as usize {
                        Duration::ZERO
                    } else {
                        // By this host's clock (read now: the closest
                        // wake), unless it runs ahead of the store's and
                        // woke too early: then by the store's (its time
                        // was read inside the call, so a millisecond on).
                        let host = until(r.next_due_ms, SystemClock.now_ms());
                        let store =
                            until(r.next_due_ms, r.now_ms).saturating_add(Duration::from_millis(1));
                        let wait = if r.fired.is_empty() && host.is_zero() {
                            store
                        } else {
                            host.min(store)
                        };
                        wait.min(self.opts.poll)
                    }
                }
                Err(alkstore_core::Error::Closed) => return Err(alkstore_core::Error::Closed),
                Err(e) => {
                    tracing::warn!(error = %e, "firing schedules failed; retrying");
                    Duration::from_secs(1).min(self.opts.poll)
                }
            };
            tokio::select! {
                () = &mut shutdown => return Ok(report),
                () = tokio::time::sleep(wait) => {}
            }
        }
    }
}

/// How long from `now_ms` until `at_ms` (`MAX` when there is no boundary).
fn until(at_ms: Option<i64>, now_ms: i64) -> Duration {
    let Some(at) = at_ms else {
        return Duration::MAX;
    };
    let ms = at.saturating_sub(now_ms);
    Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}
