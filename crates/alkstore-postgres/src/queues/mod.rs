//! The queue area on PostgreSQL: the [`QueueDriver`] implementation
//! (here, each call handed to the part that does it), statement texts
//! (`sql.rs`) and row shapes (`rows.rs`).
//!
//! - `enqueue`: inserting jobs, alone, in batches, grouped across calls;
//! - `claim`: claiming jobs, heartbeats, cancel requests;
//! - `rescue`: handing a queue's expired rows back before a claim;
//! - `settle`: ack, retry, fail, snooze, release and unclaim;
//! - `throughput`: counting finished jobs, and reading the counts;
//! - `admin`: looking jobs and queues up, pausing, cancelling;
//! - `dead`: the dead-letter calls.

mod admin;
mod claim;
mod dead;
pub(crate) mod enqueue;
mod rescue;
mod rows;
pub(crate) mod settle;
pub(crate) mod sql;
pub(crate) mod throughput;

use crate::PgEngine;

// Each `QueueDriver` call is handed to the same-named function of the
// part above that does it.
alkstore_core::queue_driver_by_parts!(PgEngine);
