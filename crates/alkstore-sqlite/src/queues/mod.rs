//! The queue area on SQLite: the [`QueueDriver`] implementation (here,
//! each call handed to the part that does it) and row decoding
//! (`rows.rs`).
//!
//! - `enqueue`: inserting jobs;
//! - `claim`: claiming jobs, heartbeats, cancel requests;
//! - `rescue`: handing expired rows back (before a claim, and in the sweep);
//! - `settle`: ack, retry, fail, snooze, release and unclaim;
//! - `bury`: moving rows to the dead table, for the three above;
//! - `throughput`: counting finished jobs, and reading the counts;
//! - `admin`: looking jobs and queues up, pausing, cancelling;
//! - `dead`: the dead-letter calls.

mod admin;
mod bury;
pub(crate) mod claim;
mod dead;
pub(crate) mod enqueue;
pub(crate) mod rescue;
mod rows;
pub(crate) mod settle;
pub(crate) mod throughput;

use crate::SqliteEngine;

// Each `QueueDriver` call is handed to the same-named function of the
// part above that does it.
alkstore_core::queue_driver_by_parts!(SqliteEngine);
