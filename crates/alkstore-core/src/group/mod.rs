//! Consumer groups: a stream's events split into N buckets, each owned by
//! one worker at a time through a renewable lease.
//!
//! A keyed event goes to bucket `(((hashtextextended(key, 0) % N) + N) % N)`
//! — PostgreSQL's own hash, so the same SQL gives the same bucket on
//! either engine and in any PostgreSQL query; an event without a key is
//! spread by its offset. Same key, same bucket, so per-key order holds.

mod driver;
mod engine;
mod hash;
mod params;
mod share;
mod types;

pub use driver::GroupDriver;
pub use engine::GroupEngine;
pub use hash::{bucket_of, bucket_of_offset, hashtextextended};
pub use params::*;
pub use share::{rebalance, Rebalance};
pub use types::*;

use crate::validate::validate_text;
use crate::Result;

/// Reject empty, oversized or NUL-containing group names.
pub fn validate_group_name(group: &str) -> Result<()> {
    validate_text("group name", group)
}

/// The fencing decision of a checkpoint, both engines': `found` is the
/// bucket's row as the call read it (its owner, epoch and saved
/// checkpoint; `None`: no such bucket). [`NotHeld`](crate::Error::NotHeld)
/// unless the caller holds the bucket under `p.epoch`; then `Some(saved)`
/// when the checkpoint is already at or past `p.offset` (it never moves
/// back, and the call returns it), or `None`: the checkpoint is to move to
/// `p.offset` (if that is not beyond the stream's head).
///
/// ```
/// use alkstore_core::group::{checkpoint_fence, GroupCheckpointParams};
/// let p = GroupCheckpointParams::new("g", 0, "w1", 3, 10);
/// assert_eq!(checkpoint_fence(&p, Some((Some("w1"), 3, 4))).unwrap(), None);
/// assert_eq!(checkpoint_fence(&p, Some((Some("w1"), 3, 12))).unwrap(), Some(12));
/// assert!(checkpoint_fence(&p, Some((Some("w2"), 3, 4))).is_err());
/// assert!(checkpoint_fence(&p, Some((Some("w1"), 4, 4))).is_err());
/// assert!(checkpoint_fence(&p, None).is_err());
/// ```
pub fn checkpoint_fence(
    p: &GroupCheckpointParams,
    found: Option<(Option<&str>, i64, i64)>,
) -> Result<Option<i64>> {
    match found {
        Some((Some(owner), epoch, saved)) if owner == p.worker && epoch == p.epoch => {
            Ok((saved >= p.offset).then_some(saved))
        }
        _ => Err(fenced(&p.group, p.bucket, p.epoch)),
    }
}

/// The error for a group that does not exist.
pub fn group_not_found(group: &str) -> crate::Error {
    crate::Error::NotFound {
        what: format!("group {group:?}"),
        detail: "no worker or command has created it".into(),
    }
}

/// The error for a checkpoint under an epoch that is no longer current.
pub fn fenced(group: &str, bucket: u32, epoch: i64) -> crate::Error {
    crate::Error::NotHeld {
        what: format!("lease on bucket {bucket} of group {group:?} (epoch {epoch})"),
    }
}

/// Refuse a read of a bucket outside the group's `0..buckets` (no event
/// is ever in it: an empty page would hide the caller's mistake).
pub fn check_buckets(group: &str, wanted: &[u32], buckets: u32) -> Result<()> {
    match wanted.iter().find(|b| **b >= buckets) {
        Some(b) => Err(crate::Error::invalid(
            "bucket",
            format!("{b} is outside 0..{buckets} of group {group:?}"),
        )),
        None => Ok(()),
    }
}

/// The most buckets a group may have: each bucket is a lease row, a
/// checkpoint and a reader, and a worker renews all of its leases every
/// heartbeat.
pub const MAX_BUCKETS: u32 = 4096;

/// How long a group's handoffs are kept one by one (their counts by cause
/// are kept for good).
pub const HANDOFF_RETENTION: std::time::Duration = std::time::Duration::from_secs(7 * 86_400);

/// The error for a resize while leases are live.
pub fn resize_refused(group: &str, live: u64) -> crate::Error {
    crate::Error::Conflict {
        op: "group_resize",
        reason: format!(
            "{live} bucket(s) of group {group:?} still have live leases; stop its workers (or let the leases lapse) first"
        ),
    }
}
