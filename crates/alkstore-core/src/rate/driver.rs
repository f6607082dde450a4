//! [`RateDriver`]: what an engine implements for rate limits — SQL and
//! nothing else (see [`crate::call`]).

use std::future::Future;

use crate::{Checked, Engine, Result};

use super::{RateAcquireParams, RateDecision};

/// The rate-limit statement of one engine; callers use
/// [`RateEngine`](super::RateEngine).
///
/// **Unstable**: part of the engines' seam, which changes as the engines
/// do. Applications use the `alkstore` crate's handles (`Store::queue`,
/// `Store::jobs`, …) instead.
pub trait RateDriver: Engine {
    /// See [`RateEngine::rate_acquire`](super::RateEngine::rate_acquire).
    fn rate_acquire(
        &self,
        params: Checked<RateAcquireParams>,
    ) -> impl Future<Output = Result<RateDecision>> + Send;
}
