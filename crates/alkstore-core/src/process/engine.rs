//! [`ProcessEngine`]: the process-registry calls, implemented once for
//! every [`ProcessDriver`] through the one wrapper ([`crate::call`]).

use std::future::Future;

use crate::call::engine_call;
use crate::{Engine, Result};

use super::driver::ProcessDriver;
use super::params::*;
use super::types::*;

/// The registry of running processes (see the [module](super) docs).
/// Every engine has it; the contract suite checks they behave the same.
/// Bad input is a typed error and writes nothing.
///
/// **Unstable**: part of the engines' seam, which changes as the engines
/// do. Applications use the `alkstore` crate's handles (`Store::queue`,
/// `Store::jobs`, …) instead.
pub trait ProcessEngine: Engine {
    /// Register process `id`, or refresh its row: everything it reports,
    /// its heartbeat (now, by the store's clock) and its expiry (now plus
    /// `ttl`). Returns the order an operator left for it (a new process,
    /// or one registering under an id it had in an earlier run, with
    /// another `started_at_ms`, starts with [`ProcessOrder::Run`]). Rows
    /// dead for longer than
    /// [`PROCESS_RETENTION`](super::PROCESS_RETENTION) are deleted on the
    /// way.
    fn process_beat(
        &self,
        params: ProcessBeatParams,
    ) -> impl Future<Output = Result<ProcessOrder>> + Send;

    /// Leave `order` for process `id`, read at its next beat. False when
    /// no such process is registered.
    fn process_order(
        &self,
        params: ProcessOrderParams,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// Remove process `id`'s row (its clean exit). False when there was
    /// none.
    fn process_remove(
        &self,
        params: ProcessRemoveParams,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// Every registered process, alive or dead within the retention, by
    /// kind then id.
    fn process_list(&self) -> impl Future<Output = Result<Vec<ProcessInfo>>> + Send;
}

impl<D: ProcessDriver> ProcessEngine for D {
    async fn process_beat(&self, params: ProcessBeatParams) -> Result<ProcessOrder> {
        engine_call!(self, process_beat, params => ProcessBeatParams, |p| {
            ProcessDriver::process_beat(self, p)
        })
    }

    async fn process_order(&self, params: ProcessOrderParams) -> Result<bool> {
        engine_call!(self, process_order, params => ProcessOrderParams, |p| {
            ProcessDriver::process_order(self, p)
        })
    }

    async fn process_remove(&self, params: ProcessRemoveParams) -> Result<bool> {
        engine_call!(self, process_remove, params => ProcessRemoveParams, |p| {
            ProcessDriver::process_remove(self, p)
        })
    }

    async fn process_list(&self) -> Result<Vec<ProcessInfo>> {
        engine_call!(self, process_list, () => (), |_p| ProcessDriver::process_list(self))
    }
}
