//! [`GroupOpts`]: how a group runner leases, reads and checkpoints, with
//! its defaults and the checks `run_until` makes before it writes anything. Plain
//! data, apart from the runner that uses it.

use std::time::Duration;

use alkstore_core::group::MAX_LEASE_TTL;
use alkstore_core::validate::{validate_duration, validate_ttl};
use alkstore_core::{Error, Limits};

use crate::stream::OnError;

/// How a [`GroupRunner`](super::GroupRunner) leases, reads and checkpoints. `run_until` refuses
/// options outside the ranges below before it writes anything.
#[derive(Debug, Clone)]
pub struct GroupOpts {
    /// How long a lease lasts unless renewed (default 30 s; 1 ms..=1 day):
    /// a dead worker's buckets move after at most this plus one heartbeat.
    pub ttl: Duration,
    /// How often leases are renewed and shares rebalanced (default 10 s;
    /// must be below `ttl`).
    pub heartbeat: Duration,
    /// Events read per query (default 2,000; at most the store's
    /// [`Limits::max_page`], 10,000 by default).
    pub batch: u32,
    /// Checkpoint a bucket after this many handled events (default 1,000;
    /// at least 1) …
    pub commit_every: u32,
    /// … or this long after its last checkpoint (default 1 s), whichever
    /// comes first; and when caught up, and when the bucket is given up.
    pub commit_interval: Duration,
    /// Re-read a caught-up bucket this often without a wake hint (1 s;
    /// above zero).
    pub poll_interval: Duration,
    /// How often a failing event runs before it goes to the group's dead
    /// letters (with its error) and the bucket goes on (retry attempts: at
    /// least 1).
    pub on_error: OnError,
}

impl Default for GroupOpts {
    fn default() -> Self {
        GroupOpts {
            ttl: Duration::from_secs(30),
            heartbeat: Duration::from_secs(10),
            batch: 2000,
            commit_every: 1_000,
            commit_interval: Duration::from_secs(1),
            poll_interval: Duration::from_secs(1),
            on_error: OnError::default(),
        }
    }
}

impl GroupOpts {
    /// Refuse options a worker could not run with, against the store's
    /// `limits`: a TTL outside 1 ms..=[`MAX_LEASE_TTL`], a heartbeat not
    /// between zero and the TTL, a batch outside `1..=max_page` (every
    /// read would be refused), a `commit_every` or a retry count of 0, a
    /// poll interval of 0 (the reader would spin), a duration too far out.
    pub(super) fn validate(&self, limits: &Limits) -> Result<(), Error> {
        validate_ttl("group ttl", self.ttl, MAX_LEASE_TTL)?;
        if self.heartbeat.is_zero() || self.heartbeat >= self.ttl {
            return Err(Error::invalid(
                "group heartbeat",
                format!(
                    "{:?} must be above zero and below the lease ttl ({:?})",
                    self.heartbeat, self.ttl
                ),
            ));
        }
        limits.check_page("group batch", self.batch)?;
        if self.commit_every == 0 {
            return Err(Error::invalid("commit_every", "must be at least 1"));
        }
        validate_duration("group commit_interval", Some(self.commit_interval))?;
        validate_duration("group poll_interval", Some(self.poll_interval))?;
        if self.poll_interval.is_zero() {
            return Err(Error::invalid("group poll_interval", "must be above zero"));
        }
        if let OnError::Retry { attempts, backoff } = self.on_error {
            if attempts == 0 {
                return Err(Error::invalid(
                    "group on_error",
                    "retry attempts must be at least 1 (runs in all, the first included)",
                ));
            }
            validate_duration("group retry backoff", Some(backoff))?;
        }
        Ok(())
    }
}
