//! When a claim should first hand expired rows back: the claim-rescue policy,
//! written once for every engine.
//!
//! Claims and expiries are whole seconds, so rescuing a queue once per clock
//! second before a claim finds every expired claim and expired pending job,
//! while keeping the claim itself a single index scan over pending rows.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Marks beyond this many queues are forgotten (a mark only saves work).
const MAX_MARKS: usize = 10_000;

/// When a queue was last rescued: at a second of the engine's clock, or
/// (when the engine reads the database's clock) at an instant of this host.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mark {
    Second(i64),
    At(Instant),
}

/// Per queue, when expired rows were last handed back.
///
/// ```
/// use alkstore_core::queue::RescueSchedule;
/// let mut s = RescueSchedule::default();
/// assert!(s.due("q", Some(100)));
/// assert!(!s.due("q", Some(100)), "once per second");
/// assert!(s.due("q", Some(101)));
/// ```
#[derive(Default)]
pub struct RescueSchedule {
    marks: HashMap<String, Mark>,
}

impl std::fmt::Debug for RescueSchedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RescueSchedule")
            .field("queues", &self.marks.len())
            .finish()
    }
}

impl RescueSchedule {
    /// Whether a claim on `queue` should rescue first, and if so mark it
    /// done. `now_s` is the engine clock's second when the engine knows it
    /// (a rescue is due once per second of that clock); `None` (the
    /// database's clock, unknown here) means once per second of this host's
    /// monotonic clock.
    pub fn due(&mut self, queue: &str, now_s: Option<i64>) -> bool {
        let mark = match now_s {
            Some(s) => Mark::Second(s),
            None => Mark::At(Instant::now()),
        };
        let due = match (self.marks.get(queue), mark) {
            (Some(Mark::Second(last)), Mark::Second(now)) => *last != now,
            (Some(Mark::At(last)), Mark::At(_)) => last.elapsed() >= Duration::from_secs(1),
            _ => true,
        };
        if due {
            if self.marks.len() >= MAX_MARKS && !self.marks.contains_key(queue) {
                self.marks.clear();
            }
            self.marks.insert(queue.to_string(), mark);
        }
        due
    }

    /// Forget `queue`'s mark (its rescue failed or was rolled back), so the
    /// next claim rescues again.
    pub fn forget(&mut self, queue: &str) {
        self.marks.remove(queue);
    }

    /// Forget every mark (a transaction that may have held rescues was
    /// rolled back).
    pub fn clear(&mut self) {
        self.marks.clear();
    }
}
