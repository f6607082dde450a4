//! [`ScheduleEngine`]: the schedule calls, implemented once for every
//! [`ScheduleDriver`] through the one wrapper ([`crate::call`]).

use std::future::Future;

use crate::call::engine_call;
use crate::{Engine, Result};

use super::driver::ScheduleDriver;
use super::params::*;
use super::types::*;

/// Register, inspect and fire schedules (see the [module](super) docs).
/// Every engine has it (through its [`ScheduleDriver`]); the contract suite
/// checks they behave the same. Bad input — an invalid spec, an unknown
/// zone — is a typed error with a message that says what is wrong, and
/// writes nothing.
///
/// **Unstable**: part of the engines' seam, which changes as the engines
/// do. Applications use the `alkstore` crate's handles (`Store::queue`,
/// `Store::jobs`, …) instead.
pub trait ScheduleEngine: Engine {
    /// Every schedule, by name.
    fn schedule_list(&self) -> impl Future<Output = Result<Vec<ScheduleInfo>>> + Send;

    /// Fire every due, unpaused schedule (up to `limit` of them): for each,
    /// enqueue one job per due boundary (at most its `max_catch_up`, oldest
    /// first; the rest are skipped) and advance its next boundary past now,
    /// in one transaction conditional on the boundary read — so however
    /// many callers race, each boundary fires exactly once. Each job
    /// carries its boundary: unique key `{schedule}@{boundary_ms}` and
    /// `run_at` the boundary (in seconds).
    fn schedule_fire_due(
        &self,
        params: ScheduleFireParams,
    ) -> impl Future<Output = Result<FireReport>> + Send;

    /// Enqueue schedule `name`'s job now, paused or not, outside its
    /// boundaries (which do not move): due now, with no unique key (each
    /// run is a job of its own). Kept in its history as a manual fire. `None` when there is
    /// no such schedule.
    fn schedule_run_now(
        &self,
        params: impl Into<ScheduleNameParams> + Send,
    ) -> impl Future<Output = Result<Option<Fired>>> + Send;

    /// A schedule's last fires (boundaries and manual runs), newest first:
    /// the last [`MAX_FIRES_KEPT`](super::MAX_FIRES_KEPT) are kept, and a
    /// removed schedule's go with it.
    fn schedule_fires(
        &self,
        params: ScheduleFiresParams,
    ) -> impl Future<Output = Result<Vec<ScheduleFire>>> + Send;
}

impl<D: ScheduleDriver> ScheduleEngine for D {
    async fn schedule_list(&self) -> Result<Vec<ScheduleInfo>> {
        engine_call!(self, schedule_list, () => (), |_p| ScheduleDriver::schedule_list(self))
    }

    async fn schedule_fire_due(&self, params: ScheduleFireParams) -> Result<FireReport> {
        engine_call!(self, schedule_fire_due, params => ScheduleFireParams, |p| async move {
            let report = ScheduleDriver::schedule_fire_due(self, p).await?;
            let mut queues: Vec<&str> = report.fired.iter().map(|f| f.queue.as_str()).collect();
            queues.sort_unstable();
            queues.dedup();
            for q in queues {
                self.wake_hub().queue(q);
            }
            Ok(report)
        })
    }

    async fn schedule_run_now(
        &self,
        params: impl Into<ScheduleNameParams> + Send,
    ) -> Result<Option<Fired>> {
        engine_call!(self, schedule_run_now, params => ScheduleNameParams, |p| async move {
            let fired = ScheduleDriver::schedule_run_now(self, p).await?;
            if let Some(f) = &fired {
                self.wake_hub().queue(&f.queue);
            }
            Ok(fired)
        })
    }

    async fn schedule_fires(&self, params: ScheduleFiresParams) -> Result<Vec<ScheduleFire>> {
        engine_call!(self, schedule_fires, params => ScheduleFiresParams, |p| {
            ScheduleDriver::schedule_fires(self, p)
        })
    }
}
