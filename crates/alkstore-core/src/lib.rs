//! Contract types shared by every alkstore engine: the [`Error`] type, the
//! base [`Engine`] trait and one folder per area (`queue/`: the
//! [`QueueEngine`] and [`QueueAdmin`] traits, their parameters and value
//! shapes), shared input validation, and the injectable [`Clock`].
//!
//! Engines (`alkstore-sqlite`, `alkstore-postgres`) implement the driver
//! traits here ([`Engine`], [`QueueDriver`]) and know SQL and nothing else;
//! the one wrapper in [`call`] gives every driver the traits callers use
//! ([`QueueEngine`], [`QueueAdmin`]), validating, tracing, recording metrics
//! and sending wake hints in one place. The runtime in the `alkstore` crate
//! knows time, concurrency and handlers. Nothing in this crate touches a
//! database.

pub mod call;
mod clock;
mod engine;
mod error;
pub mod group;
pub mod lock;
pub mod notify;
pub mod queue;
pub mod rate;
pub mod results;
pub mod schedule;
pub mod stream;
pub mod tx;
pub mod url;
pub mod validate;
mod wake;

pub use call::{Checked, Validate};
pub use clock::{Clock, ManualClock, SystemClock};
pub use engine::{Capabilities, Engine, SweepParams};
pub use error::{BoxError, Error, ErrorKind, Result};
pub use group::{GroupDriver, GroupEngine};
pub use lock::{LockDriver, LockEngine};
pub use notify::{NotifyDriver, NotifyEngine};
pub use queue::{
    backoff_delay_s, AttemptError, CancelOutcome, Claim, DeadListParams, DeadSelect, EnqueueOpts,
    Enqueued, EnqueuedClaimed, Job, JobClaimParams, JobEnqueueClaimedParams, JobInfo,
    JobListParams, JobRetryParams, JobState, NewJob, QueueAdmin, QueueDriver, QueueEngine,
    QueueOpts, QueueStats, QueueThroughput, QueueThroughputParams, QueueTotals, RetryOutcome,
    Settle, Settled, Settlement, SweepReport, ThroughputBucket, DEFAULT_MAX_ATTEMPTS,
    THROUGHPUT_BUCKET_S, THROUGHPUT_RETENTION,
};
pub use rate::{RateDriver, RateEngine};
pub use results::{ResultDriver, ResultEngine};
pub use schedule::{ScheduleDriver, ScheduleEngine};
pub use stream::{StreamDriver, StreamEngine};
pub use tx::{Transaction, TxDriver};
pub use validate::Limits;

/// The engine traits, for `use alkstore_core::prelude::*;` where engine
/// methods are called.
pub mod prelude {
    pub use crate::{
        Engine, GroupEngine, LockEngine, NotifyEngine, QueueAdmin, QueueEngine, RateEngine,
        ResultEngine, ScheduleEngine, StreamEngine,
    };
}
pub use wake::{Offer, Taker, Takers, Wake, WakeHub};
