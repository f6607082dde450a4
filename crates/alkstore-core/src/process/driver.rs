//! [`ProcessDriver`]: what an engine implements for the process registry —
//! SQL and nothing else (see [`crate::call`]).

use std::future::Future;

use crate::{Checked, Engine, Result};

use super::params::*;
use super::types::*;

/// The process statements of one engine. Each method takes [`Checked`]
/// parameters; callers use [`ProcessEngine`](super::ProcessEngine), whose
/// methods document the behaviour (the contract suite checks it).
///
/// **Unstable**: part of the engines' seam, which changes as the engines
/// do. Applications use the `alkstore` crate's handles (`Store::queue`,
/// `Store::jobs`, …) instead.
pub trait ProcessDriver: Engine {
    /// See [`ProcessEngine::process_beat`](super::ProcessEngine::process_beat).
    fn process_beat(
        &self,
        params: Checked<ProcessBeatParams>,
    ) -> impl Future<Output = Result<ProcessOrder>> + Send;

    /// See [`ProcessEngine::process_order`](super::ProcessEngine::process_order).
    fn process_order(
        &self,
        params: Checked<ProcessOrderParams>,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// See [`ProcessEngine::process_remove`](super::ProcessEngine::process_remove).
    fn process_remove(
        &self,
        params: Checked<ProcessRemoveParams>,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// See [`ProcessEngine::process_list`](super::ProcessEngine::process_list).
    fn process_list(&self) -> impl Future<Output = Result<Vec<ProcessInfo>>> + Send;
}
