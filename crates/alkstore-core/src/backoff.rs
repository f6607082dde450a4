//! [`Backoff`]: the one doubling wait between retries, capped, that every
//! retry loop of the runtime and the engines uses; each caller states its
//! first wait and its cap where it makes one.

use std::time::Duration;

/// A wait that doubles after each failure up to a cap, and starts over
/// after a success.
///
/// ```
/// use std::time::Duration;
/// use alkstore_core::Backoff;
/// let mut b = Backoff::new(Duration::from_millis(100), Duration::from_millis(300));
/// assert_eq!(b.next(), Duration::from_millis(100));
/// assert_eq!(b.next(), Duration::from_millis(200));
/// assert_eq!(b.next(), Duration::from_millis(300));
/// assert_eq!(b.next(), Duration::from_millis(300));
/// b.reset();
/// assert_eq!(b.next(), Duration::from_millis(100));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    first: Duration,
    cap: Duration,
    next: Duration,
}

impl Backoff {
    /// Wait `first` after the first failure, doubling to at most `cap`.
    pub fn new(first: Duration, cap: Duration) -> Self {
        let first = first.min(cap);
        Backoff {
            first,
            cap,
            next: first,
        }
    }

    /// The wait after this failure; the one after the next is doubled.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Duration {
        let now = self.next;
        self.next = self.next.saturating_mul(2).min(self.cap);
        now
    }

    /// Start over from the first wait (after a success).
    pub fn reset(&mut self) {
        self.next = self.first;
    }
}
