//! Job queues: the value shapes, the call parameters and the traits every
//! engine implements.
//!
//! A queue is rows in one job table. Live rows are `pending` or `processing`;
//! finished rows are deleted on ack (or kept as `completed` when the queue
//! asks), and rows that ran out of attempts, failed, expired or were
//! cancelled move to a separate dead table that the claim path never reads.

mod driver;
mod engine;
mod params;
mod rescue;
mod types;

pub use driver::QueueDriver;
pub use engine::{QueueAdmin, QueueEngine};
pub use params::*;
pub use rescue::RescueSchedule;
pub use types::*;

// The sweep's report is store-wide (`crate::sweep`); this path is kept for
// callers.
pub use crate::sweep::SweepReport;

// Validation lives beside every area; these paths are kept for callers.
pub use crate::validate::{
    secs, validate_duration, validate_queue_name, validate_text, validate_time, validate_worker,
};
