//! [`ScheduleDriver`]: what an engine implements for schedules — SQL and
//! nothing else (see [`crate::call`]).

use std::future::Future;

use crate::{Checked, Engine, Result};

use super::params::*;
use super::types::*;

/// The schedule statements of one engine. Each method takes [`Checked`]
/// parameters; callers use [`ScheduleEngine`](super::ScheduleEngine), whose
/// methods document the behaviour (the contract suite checks it). "Now" is
/// the database's clock (the engine's injected clock in tests).
///
/// **Unstable**: part of the engines' seam, which changes as the engines
/// do. Applications use the `alkstore` crate's handles (`Store::queue`,
/// `Store::jobs`, …) instead.
pub trait ScheduleDriver: Engine {
    /// See [`ScheduleEngine::schedule_list`](super::ScheduleEngine::schedule_list).
    fn schedule_list(&self) -> impl Future<Output = Result<Vec<ScheduleInfo>>> + Send;

    /// See [`ScheduleEngine::schedule_fire_due`](super::ScheduleEngine::schedule_fire_due).
    fn schedule_fire_due(
        &self,
        params: Checked<ScheduleFireParams>,
    ) -> impl Future<Output = Result<FireReport>> + Send;

    /// See [`ScheduleEngine::schedule_run_now`](super::ScheduleEngine::schedule_run_now).
    fn schedule_run_now(
        &self,
        params: Checked<ScheduleNameParams>,
    ) -> impl Future<Output = Result<Option<Fired>>> + Send;

    /// See [`ScheduleEngine::schedule_fires`](super::ScheduleEngine::schedule_fires).
    fn schedule_fires(
        &self,
        params: Checked<ScheduleFiresParams>,
    ) -> impl Future<Output = Result<Vec<ScheduleFire>>> + Send;
}
