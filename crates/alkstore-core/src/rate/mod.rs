//! Rate limits: fixed windows counted in the store, so every process of an
//! application shares one budget.
//!
//! `rate_acquire(name, limit, per)` admits a call while fewer than `limit`
//! were admitted in the current window of length `per` (windows are
//! multiples of `per` since the Unix epoch, by the store's clock). The
//! count and the check are one statement on one row, so no concurrency
//! admits more than `limit` per window. Use one `per` per name.
//!
//! Throttling a queue: call it in the handler and snooze the job until the
//! window resets when it is refused.
//!
//! # What it promises, and what not
//!
//! Promised: at most `limit` admissions per window of `name`, counted
//! over every caller of every process of the store. Windows are cut by the
//! store's clock: the database server's on PostgreSQL, the calling
//! process's system clock on SQLite (the processes that share a SQLite
//! file share its host, so they read one clock).
//!
//! Not promised: any share per caller or per process, or any order among
//! callers. A call is admitted or refused at once; nothing waits in a
//! queue, and a refused call is not remembered, so the next window's
//! admissions go to whichever calls reach the database first. On SQLite the
//! processes take the file's write lock in no particular order (SQLite's
//! busy wait, not a queue), and a process whose writer is committing
//! carries its own waiting callers in the same transaction, so one process
//! can take most or all of a window while another gets nothing (in one
//! test, one of four processes took 179 of 220 admissions and another
//! none); tasks of one process share it just as unevenly. Where shares
//! matter, give each process or caller its own name with its own part of
//! the limit.

mod driver;
mod engine;

pub use driver::RateDriver;
pub use engine::RateEngine;

use std::time::Duration;

use crate::validate::{validate_text, validate_ttl};
use crate::{Error, Limits, Result, Validate};

/// The longest window: a day.
pub const MAX_RATE_WINDOW: Duration = Duration::from_secs(86_400);

/// Parameters of `rate_acquire`.
///
/// ```
/// use std::time::Duration;
/// use alkstore_core::rate::RateAcquireParams;
/// let p = RateAcquireParams::new("smtp", 50, Duration::from_secs(1));
/// assert_eq!(p.window_ms(), 1_000);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RateAcquireParams {
    /// The limit's name.
    pub name: String,
    /// Most admissions per window (≥ 1).
    pub limit: u32,
    /// The window's length (1 ms..=1 day).
    pub per: Duration,
}

impl RateAcquireParams {
    /// At most `limit` admissions of `name` per `per`.
    pub fn new(name: impl Into<String>, limit: u32, per: Duration) -> Self {
        RateAcquireParams {
            name: name.into(),
            limit,
            per,
        }
    }

    /// The window in whole milliseconds (validated to fit).
    pub fn window_ms(&self) -> i64 {
        crate::validate::millis(self.per)
    }
}

impl Validate for RateAcquireParams {
    fn validate_params(&self, _limits: &Limits) -> Result<()> {
        validate_text("rate limit name", &self.name)?;
        if self.limit == 0 {
            return Err(Error::invalid(
                "rate limit",
                "must admit at least 1 per window",
            ));
        }
        validate_ttl("rate window", self.per, MAX_RATE_WINDOW)
    }
}

impl RateDecision {
    /// The decision for a window starting at `window_start_ms` of length
    /// `window_ms`, given the window's admissions after the call (`None`:
    /// refused, the window was full).
    pub fn new(admitted: Option<i64>, limit: u32, window_start_ms: i64, window_ms: i64) -> Self {
        let used = admitted.unwrap_or(i64::from(limit));
        RateDecision {
            admitted: admitted.is_some(),
            remaining: u32::try_from(i64::from(limit) - used).unwrap_or(0),
            reset_at_ms: window_start_ms.saturating_add(window_ms),
        }
    }
}

/// The start of the window of length `window_ms` that `now_ms` falls in.
pub fn window_start(now_ms: i64, window_ms: i64) -> i64 {
    now_ms.div_euclid(window_ms) * window_ms
}

/// What `rate_acquire` decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateDecision {
    /// Whether this call was admitted.
    pub admitted: bool,
    /// Admissions left in the current window after this call.
    pub remaining: u32,
    /// When the current window ends (unix ms, the store's clock).
    pub reset_at_ms: i64,
}
