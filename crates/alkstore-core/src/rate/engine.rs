//! [`RateEngine`]: the rate-limit call, implemented once for every
//! [`RateDriver`] through the one wrapper ([`crate::call`]).

use std::future::Future;

use crate::call::engine_call;
use crate::{Engine, Result};

use super::driver::RateDriver;
use super::{RateAcquireParams, RateDecision};

/// Fixed-window rate limits shared by every process of a store (see the
/// [module](super) docs).
///
/// **Unstable**: part of the engines' seam, which changes as the engines
/// do. Applications use the `alkstore` crate's handles (`Store::queue`,
/// `Store::jobs`, …) instead.
pub trait RateEngine: Engine {
    /// Admit one call of `name` if fewer than `limit` were admitted in the
    /// current window; never more than `limit` per window, under any
    /// concurrency. A refusal counts nothing. First come, first served:
    /// no caller or process is promised a share or a turn (see the
    /// [module](super) docs).
    fn rate_acquire(
        &self,
        params: RateAcquireParams,
    ) -> impl Future<Output = Result<RateDecision>> + Send;
}

impl<D: RateDriver> RateEngine for D {
    async fn rate_acquire(&self, params: RateAcquireParams) -> Result<RateDecision> {
        engine_call!(self, rate_acquire, params => RateAcquireParams, |p| {
            RateDriver::rate_acquire(self, p)
        })
    }
}
