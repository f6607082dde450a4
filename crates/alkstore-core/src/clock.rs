use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A source of "now" in unix seconds, the unit every stored timestamp uses.
///
/// Engines take an optional clock so tests can move time instead of sleeping.
/// Without one, the SQLite engine reads the system clock and the PostgreSQL
/// engine uses the database server's clock (so worker hosts whose clocks
/// disagree never hold the same claim or lease at once).
pub trait Clock: Send + Sync + fmt::Debug + 'static {
    /// The current time in unix seconds.
    fn now(&self) -> i64;

    /// The current time in unix milliseconds (leases, whose TTLs can be
    /// shorter than a second). A clock that only knows seconds reports
    /// whole seconds.
    fn now_ms(&self) -> i64 {
        self.now().saturating_mul(1000)
    }
}

/// The operating system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
            .unwrap_or(0)
    }

    fn now_ms(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or(0)
    }
}

/// A clock that only moves when told to; clones share the same time. It
/// keeps milliseconds (leases, locks and schedules use them); `now()` is
/// the whole second they fall in.
///
/// ```
/// use alkstore_core::{Clock, ManualClock};
/// use std::time::Duration;
/// let clock = ManualClock::new(1_000);
/// clock.advance(Duration::from_secs(30));
/// assert_eq!(clock.now(), 1_030);
/// clock.advance(Duration::from_millis(1_500));
/// assert_eq!((clock.now(), clock.now_ms()), (1_031, 1_031_500));
/// ```
#[derive(Debug, Clone)]
pub struct ManualClock(Arc<AtomicI64>);

impl ManualClock {
    /// A clock stopped at `unix_seconds`.
    pub fn new(unix_seconds: i64) -> Self {
        ManualClock(Arc::new(AtomicI64::new(unix_seconds.saturating_mul(1000))))
    }

    /// A clock stopped at the system's current time (whole seconds).
    pub fn starting_now() -> Self {
        Self::new(SystemClock.now())
    }

    /// Move the clock forward.
    pub fn advance(&self, by: Duration) {
        let ms = i64::try_from(by.as_millis()).unwrap_or(i64::MAX / 4);
        self.0.fetch_add(ms, Ordering::SeqCst);
    }

    /// Set the clock to `unix_seconds`.
    pub fn set(&self, unix_seconds: i64) {
        self.set_ms(unix_seconds.saturating_mul(1000));
    }

    /// Set the clock to `unix_ms`.
    pub fn set_ms(&self, unix_ms: i64) {
        self.0.store(unix_ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> i64 {
        self.0.load(Ordering::SeqCst).div_euclid(1000)
    }

    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}
