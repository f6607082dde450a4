//! Input validation shared by every area: names, durations, times, and the
//! store-wide [`Limits`]. Every engine call validates through these, so one
//! rule holds for every queue name, delay and page size.

use std::time::Duration;

use crate::{Error, Result};

/// Whole seconds of `d`, saturating (validation keeps real values far below).
pub fn secs(d: Duration) -> i64 {
    i64::try_from(d.as_secs()).unwrap_or(i64::MAX / 4)
}

/// Whole milliseconds of `d`, saturating (validated durations fit).
pub fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// Furthest accepted time or duration, in seconds: keeps every stored time
/// far from `i64` overflow, since engines add to them.
const FAR_S: i64 = 1 << 40;

/// Reject a unix time (seconds) too far from the epoch to compute with.
pub fn validate_time(what: &'static str, unix_s: i64) -> Result<()> {
    if !(-FAR_S..=FAR_S).contains(&unix_s) {
        return Err(Error::invalid(
            what,
            "out of range (more than ~34,000 years away)",
        ));
    }
    Ok(())
}

/// Reject a duration too long to compute with. Every delay, timeout and
/// retention the contract accepts goes through here, so one limit holds for
/// all of them (enqueue delay, retry delay, snooze, …).
pub fn validate_duration(what: &'static str, d: Option<Duration>) -> Result<()> {
    match d {
        Some(d) if d.as_secs() > FAR_S as u64 => Err(Error::invalid(
            what,
            "out of range (more than ~34,000 years)",
        )),
        _ => Ok(()),
    }
}

/// Reject a lease or lock TTL outside 1 ms..=`max` (`max` is a day for
/// both).
pub fn validate_ttl(what: &'static str, ttl: Duration, max: Duration) -> Result<()> {
    if ttl < Duration::from_millis(1) || ttl > max {
        return Err(Error::invalid(
            what,
            format!("{ttl:?} is outside 1 ms..={max:?}"),
        ));
    }
    Ok(())
}

/// The most bytes (of UTF-8) a name may have: see [`validate_text`].
pub const NAME_MAX_BYTES: usize = 200;

/// The one rule for every name, key and worker id (queues, streams,
/// consumers, groups, schedules, locks, channels, rate limits, unique keys,
/// event keys, worker ids): non-empty, at most [`NAME_MAX_BYTES`] (200)
/// **bytes** of UTF-8, and no NUL byte (PostgreSQL cannot store NUL in
/// `TEXT`; SQLite would, so both refuse it). Nothing else is refused: any
/// other character, spaces, `/` and control characters included, is
/// stored as given, so a client that puts a name in a URL path must
/// percent-encode it.
pub fn validate_text(what: &'static str, text: &str) -> Result<()> {
    if text.is_empty() {
        return Err(Error::invalid(what, "must not be empty"));
    }
    if text.len() > NAME_MAX_BYTES {
        return Err(Error::invalid(
            what,
            format!(
                "{} bytes of UTF-8, more than the {NAME_MAX_BYTES} allowed",
                text.len()
            ),
        ));
    }
    if text.contains('\0') {
        return Err(Error::invalid(what, "must not contain a NUL byte"));
    }
    Ok(())
}

/// Reject empty, oversized or NUL-containing queue names.
pub fn validate_queue_name(queue: &str) -> Result<()> {
    validate_text("queue name", queue)
}

/// Reject empty, oversized or NUL-containing worker names.
pub fn validate_worker(worker: &str) -> Result<()> {
    validate_text("worker id", worker)
}

impl Limits {
    /// Reject a page or batch size outside `1..=max_page`.
    pub fn check_page(&self, what: &'static str, n: u32) -> Result<()> {
        if !(1..=self.max_page).contains(&n) {
            return Err(Error::invalid(
                what,
                format!("{n} is outside 1..={}", self.max_page),
            ));
        }
        Ok(())
    }
}

/// Store-wide limits, checked before writing: the one source of every cap
/// an engine call enforces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Largest accepted payload (default 1 MiB).
    pub max_payload_bytes: usize,
    /// Largest accepted claim batch (default 10,000).
    pub max_claim: u32,
    /// Most rows one listing or batch returns or touches (default 10,000).
    pub max_page: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_payload_bytes: 1 << 20,
            max_claim: 10_000,
            max_page: 10_000,
        }
    }
}

/// A count read from SQL (`BIGINT`/`INTEGER`) as `u64`; a negative count
/// (impossible from `count(*)`) reads as 0.
pub fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

/// An attempt number read from SQL as `u32`, clamped to `0..=u32::MAX`
/// (validation keeps stored attempts far below).
pub fn attempts(n: i64) -> u32 {
    u32::try_from(n.max(0)).unwrap_or(u32::MAX)
}
