//! Schedules through the facade: register one through its [`Schedule`]
//! handle ([`Store::schedule`]), and run a [`Scheduler`] — in as many
//! processes as you like; each boundary still fires exactly once, with no
//! leader.
//!
//! ```no_run
//! # async fn demo(store: alkstore::Store) -> alkstore::Result<()> {
//! use alkstore::schedule::{ScheduleOpts, Scheduler};
//!
//! store
//!     .schedule("nightly-report")
//!     .set_with("0 2 * * *", "reports", ScheduleOpts::default().tz("Europe/Paris"))
//!     .await?;
//! Scheduler::new(store).run_until(alkstore::shutdown_signal()).await?;
//! # Ok(()) }
//! ```

use crate::runs::Runs;
use alkstore_core::Writes as _;
use std::future::Future;
use std::time::Duration;

pub use alkstore_core::schedule::{
    fired_job_key, schedule_not_found, FireReport, Fired, ScheduleFire, ScheduleFireParams,
    ScheduleFiresParams, ScheduleInfo, ScheduleNameParams, ScheduleSetParams, Spec, MAX_CATCH_UP,
    MAX_FIRES_KEPT,
};
use alkstore_core::{Clock, Error, Result, ScheduleEngine, SystemClock};
use serde::Serialize;

use crate::{AnyEngine, Store};

/// A handle to one schedule (see the [module](self) docs): register or
/// change it, pause, resume, remove, look it up.
#[derive(Debug, Clone)]
pub struct Schedule<R: Runs = Store> {
    at: R,
    name: String,
}

/// What a schedule's jobs carry beside its spec and queue: the zone its
/// cron pattern is read in, the payload, the priority, and how many missed
/// boundaries it makes up for.
///
/// ```
/// use alkstore::schedule::ScheduleOpts;
/// let opts = ScheduleOpts::default().tz("Europe/Paris").priority(5).max_catch_up(3);
/// # let _ = opts;
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ScheduleOpts {
    tz: Option<String>,
    payload: Vec<u8>,
    priority: i32,
    max_catch_up: Option<u32>,
}

impl ScheduleOpts {
    /// Read the cron pattern in this IANA zone (default UTC).
    #[must_use]
    pub fn tz(mut self, tz: impl Into<String>) -> Self {
        self.tz = Some(tz.into());
        self
    }

    /// Every job's payload, as given (default empty).
    #[must_use]
    pub fn payload(mut self, payload: impl Into<Vec<u8>>) -> Self {
        self.payload = payload.into();
        self
    }

    /// Every job's payload, serialized as JSON.
    pub fn json<T: Serialize + ?Sized>(mut self, payload: &T) -> Result<Self> {
        self.payload = serde_json::to_vec(payload).map_err(|e| Error::Payload {
            direction: "encoding",
            source: e.into(),
        })?;
        Ok(self)
    }

    /// Every job's priority (default 0).
    #[must_use]
    pub fn priority(mut self, priority: i32) -> Self {
        self.priority = priority;
        self
    }

    /// Most missed boundaries fired at once after a pause in firing
    /// (default 1, at most [`MAX_CATCH_UP`]); the rest are skipped.
    #[must_use]
    pub fn max_catch_up(mut self, n: u32) -> Self {
        self.max_catch_up = Some(n);
        self
    }
}

/// Its writes (`set`, `pause`, `resume`, `remove`) run where the handle
/// was made (see [`Runs`]): `store.schedule(..)` commits each on its own,
/// `tx.schedule(..)` with the transaction.
impl<R: Runs> Schedule<R> {
    pub(crate) fn new(at: R, name: String) -> Schedule<R> {
        Schedule { at, name }
    }

    /// The schedule's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Register it, or change it: at each boundary of `spec` (a cron
    /// pattern, or `@every 30s`) a job goes onto `queue`. Re-registering
    /// the same spec keeps the pending boundary, so registering at every
    /// start-up neither skips nor repeats one; a paused schedule stays
    /// paused. A bad spec or zone is [`Error::InvalidInput`] and writes
    /// nothing.
    pub async fn set(
        &self,
        spec: impl Into<String>,
        queue: impl Into<String>,
    ) -> Result<ScheduleInfo> {
        self.set_with(spec, queue, ScheduleOpts::default()).await
    }

    /// [`Schedule::set`] with a zone, payload, priority or catch-up.
    pub async fn set_with(
        &self,
        spec: impl Into<String>,
        queue: impl Into<String>,
        opts: ScheduleOpts,
    ) -> Result<ScheduleInfo> {
        let mut p = ScheduleSetParams::new(self.name.clone(), spec, queue)
            .payload(opts.payload)
            .priority(opts.priority);
        if let Some(tz) = opts.tz {
            p = p.tz(tz);
        }
        if let Some(n) = opts.max_catch_up {
            p = p.max_catch_up(n);
        }
        self.at.place().schedule_set(p).await
    }

    /// Stop firing it until [`Schedule::resume`];
    /// [`Error::NotFound`] when there is none.
    pub async fn pause(&self) -> Result<ScheduleInfo> {
        self.at.place().schedule_pause(self.name.clone()).await
    }

    /// Fire it again from its next boundary after now (those that passed
    /// while paused are skipped); [`Error::NotFound`] when there is none.
    pub async fn resume(&self) -> Result<ScheduleInfo> {
        self.at.place().schedule_resume(self.name.clone()).await
    }

    /// Remove it; `false` when there was none (its history goes with it).
    /// Jobs it already enqueued stay.
    pub async fn remove(&self) -> Result<bool> {
        self.at.place().schedule_remove(self.name.clone()).await
    }
}

impl Schedule {
    /// Enqueue its job now, outside its boundaries (which do not move),
    /// paused or not; `None` when there is no such schedule (see
    /// [`ScheduleEngine::schedule_run_now`]).
    pub async fn run_now(&self) -> Result<Option<Fired>> {
        self.at.engine().schedule_run_now(self.name.clone()).await
    }

    /// Its last `limit` fires (boundaries and manual runs), newest first,
    /// with their jobs (see [`ScheduleEngine::schedule_fires`]).
    pub async fn fires(&self, limit: u32) -> Result<Vec<ScheduleFire>> {
        self.at
            .engine()
            .schedule_fires(ScheduleFiresParams::new(self.name.clone(), limit))
            .await
    }

    /// Its registration and next boundary; `None` when there is none.
    pub async fn get(&self) -> Result<Option<ScheduleInfo>> {
        let all = self.at.engine().schedule_list().await?;
        Ok(all.into_iter().find(|s| s.name == self.name))
    }
}

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
    worker: String,
}

impl Scheduler {
    /// A scheduler for `store` with default options.
    pub fn new(store: Store) -> Scheduler {
        Scheduler {
            engine: store.engine().clone(),
            opts: SchedulerOpts::default(),
            worker: crate::worker::default_worker_id(),
        }
    }

    /// Name this scheduler in the store's process list (default: unique
    /// per process run).
    #[must_use]
    pub fn worker_id(mut self, id: impl Into<String>) -> Scheduler {
        self.worker = id.into();
        self
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
        alkstore_core::validate::validate_worker(&self.worker)?;
        let mut report = SchedulerReport::default();
        let registration = {
            use crate::process::{Registration, Role, PROCESS_HEARTBEAT};
            let p = Role {
                kind: "scheduler",
                id: self.worker.clone(),
                roles: Vec::new(),
                concurrency: 1,
            };
            Registration::start(
                self.engine.clone(),
                p,
                PROCESS_HEARTBEAT,
                std::sync::Arc::new(|| 0),
            )
        };
        let shutdown = registration.or_ordered(shutdown);
        tokio::pin!(shutdown);
        let params = ScheduleFireParams::new(self.opts.batch);
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
                Err(alkstore_core::Error::Closed) => {
                    registration.end().await;
                    return Err(alkstore_core::Error::Closed);
                }
                Err(e) => {
                    tracing::warn!(error = %e, "firing schedules failed; retrying");
                    Duration::from_secs(1).min(self.opts.poll)
                }
            };
            tokio::select! {
                () = &mut shutdown => break,
                () = tokio::time::sleep(wait) => {}
            }
        }
        registration.end().await;
        Ok(report)
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
