//! Rate limits through the facade: a [`RateLimit`] handle
//! ([`Store::rate`](crate::Store::rate)) admits calls while fewer than its
//! limit were admitted in the current window, counted in the store so
//! every process of an application shares one budget. What it promises,
//! and what not, is in [`alkstore_core::rate`].
//!
//! ```no_run
//! # async fn demo(store: alkstore::Store) -> alkstore::Result<()> {
//! use std::time::Duration;
//! let smtp = store.rate("smtp", 50, Duration::from_secs(1));
//! if smtp.acquire().await?.admitted {
//!     // send one email
//! }
//! # Ok(()) }
//! ```

use std::time::Duration;

pub use alkstore_core::rate::{
    window_start, RateAcquireParams, RateDecision, RateEngine, MAX_RATE_WINDOW,
};
use alkstore_core::Result;

use crate::AnyEngine;

/// A handle to one rate limit: `limit` admissions per window of `per`
/// (see the [module](self) docs). Use one `per` per name.
#[derive(Debug, Clone)]
pub struct RateLimit {
    engine: AnyEngine,
    name: String,
    limit: u32,
    per: Duration,
}

impl RateLimit {
    pub(crate) fn new(engine: AnyEngine, name: String, limit: u32, per: Duration) -> RateLimit {
        RateLimit {
            engine,
            name,
            limit,
            per,
        }
    }

    /// The limit's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Admit one call, or refuse it when the window's budget is spent: the
    /// decision says which, how many remain, and when the window resets.
    /// A limit of 0, a window of 0 or longer than [`MAX_RATE_WINDOW`], or
    /// a bad name is [`Error::InvalidInput`](crate::Error) and counts
    /// nothing.
    pub async fn acquire(&self) -> Result<RateDecision> {
        let params = RateAcquireParams::new(self.name.clone(), self.limit, self.per);
        RateEngine::rate_acquire(&self.engine, params).await
    }
}
