//! Consumer groups: a stream's events split into N buckets, each owned by
//! one worker at a time through a renewable lease.
//!
//! A keyed event goes to bucket `(((hashtextextended(key, 0) % N) + N) % N)`
//! — PostgreSQL's own hash, so the same SQL gives the same bucket on
//! either engine and in any PostgreSQL query; an event without a key is
//! spread by its offset. Same key, same bucket, so per-key order holds.

mod hash;

pub use hash::{bucket_of, bucket_of_offset, hashtextextended};

/// The most buckets a group may have: each bucket is a lease row, a
/// checkpoint and a reader, and a worker renews all of its leases every
/// heartbeat.
pub const MAX_BUCKETS: u32 = 4096;
