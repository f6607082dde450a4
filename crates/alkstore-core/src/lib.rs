//! Contract types shared by every alkstore engine: the [`Error`] type, the
//! [`QueueEngine`] trait, the value shapes that cross it, and the injectable
//! [`Clock`].
//!
//! Engines (`alkstore-sqlite`, `alkstore-postgres`) implement the traits here
//! and know SQL; the runtime in the `alkstore` crate knows time, concurrency and
//! handlers. Nothing in this crate touches a database.

mod clock;
mod error;
pub mod queue;
pub mod url;
mod wake;

pub use clock::{Clock, ManualClock, SystemClock};
pub use error::{BoxError, Error, ErrorKind, Result};
pub use queue::{
    backoff_delay_s, AttemptError, CancelOutcome, Claim, ClaimParams, DeadListParams, DeadSelect,
    EnqueueOpts, Enqueued, Job, JobInfo, JobListParams, JobState, Limits, NewJob, QueueEngine,
    QueueOpts, QueueStats, RetryOutcome, RetryParams, SweepReport,
};
pub use wake::{Wake, WakeHub};
