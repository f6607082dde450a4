//! Contract types shared by every alkstore engine: the [`Error`] type, the
//! base [`Engine`] trait and one folder per area (`queue/`: the
//! [`QueueEngine`] and [`QueueAdmin`] traits, their parameters and value
//! shapes), shared input validation, and the injectable [`Clock`].
//!
//! Engines (`alkstore-sqlite`, `alkstore-postgres`) implement the traits here
//! and know SQL; the runtime in the `alkstore` crate knows time, concurrency and
//! handlers. Nothing in this crate touches a database.

mod clock;
mod engine;
mod error;
pub mod queue;
pub mod url;
pub mod validate;
mod wake;

pub use clock::{Clock, ManualClock, SystemClock};
pub use engine::{Capabilities, Engine};
pub use error::{BoxError, Error, ErrorKind, Result};
pub use queue::{
    backoff_delay_s, AttemptError, CancelOutcome, Claim, DeadListParams, DeadSelect, EnqueueOpts,
    Enqueued, Job, JobClaimParams, JobInfo, JobListParams, JobRetryParams, JobState, NewJob,
    QueueAdmin, QueueEngine, QueueOpts, QueueStats, RetryOutcome, Settle, Settled, SweepReport,
};
pub use validate::Limits;

/// The engine traits, for `use alkstore_core::prelude::*;` where engine
/// methods are called.
pub mod prelude {
    pub use crate::{Engine, QueueAdmin, QueueEngine};
}
pub use wake::{Wake, WakeHub};
