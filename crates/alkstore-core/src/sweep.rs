//! The store-wide maintenance sweep's values: what to sweep
//! ([`SweepParams`]) and what it did ([`SweepReport`]). The sweep is the
//! base [`Engine`](crate::Engine)'s, not one area's: it expires jobs,
//! rescues lapsed claims, prunes dead letters and completed jobs, and trims
//! stream events, so its values live beside the engine, not in `queue/`.

use std::time::Duration;

use crate::call::Validate;
use crate::error::Result;
use crate::validate::Limits;

/// Parameters of a maintenance sweep: with `every`, only when nobody swept
/// the store within that interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SweepParams {
    /// Skip the sweep when another caller swept within this interval.
    pub every: Option<Duration>,
}

impl SweepParams {
    /// Sweep unless another caller swept within `interval`.
    pub fn every(interval: Duration) -> Self {
        SweepParams {
            every: Some(interval),
        }
    }
}

impl Validate for SweepParams {
    fn validate_params(&self, _limits: &Limits) -> Result<()> {
        crate::validate::validate_duration("sweep interval", self.every)
    }
}

/// What a maintenance sweep did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Pending jobs past their expiry, moved to dead as `expired`.
    pub expired: u64,
    /// Expired claims with attempts left, handed back (pending again).
    pub rescued: u64,
    /// Expired claims on their last attempt, moved to dead as `exhausted`
    /// (or `cancelled` when their cancellation was requested).
    pub exhausted: u64,
    /// Dead letters past their retention, deleted.
    pub dead_pruned: u64,
    /// Kept completed jobs past their retention, deleted.
    pub completed_pruned: u64,
    /// Stream events past their stream's retention, deleted.
    pub events_trimmed: u64,
}
