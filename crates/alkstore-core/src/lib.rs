//! Contract types shared by every alkstore engine: the [`Error`] type, the
//! base [`Engine`] trait with the store-wide sweep, one folder per
//! primitive, shared input validation, and the injectable [`Clock`].
//!
//! The primitives, each a folder with its value shapes, call parameters,
//! driver trait and caller trait:
//!
//! - [`queue`]: job queues: enqueue, claim, ack, retry, fail, snooze,
//!   cancel, dead letters, pause and resume, throughput.
//! - [`stream`]: event streams: append-only logs read in offset order,
//!   with consumer offsets and retention.
//! - [`group`]: consumer groups: a stream split into buckets, each leased
//!   to one worker at a time, with checkpoints fenced by the lease epoch.
//! - [`schedule`]: schedules (`@every`, cron) that enqueue a job at each
//!   boundary, exactly once however many schedulers run.
//! - [`lock`]: named, TTL-bounded locks with fencing tokens.
//! - [`process`]: the registry of running workers, subscribers, group
//!   members and schedulers, kept by their heartbeats.
//! - [`rate`]: rate limits: fixed windows counted in the store, shared by
//!   every process.
//! - [`results`]: job results, kept for a TTL, that others read or wait
//!   for.
//! - [`notify`]: notify/listen: ephemeral messages on named channels,
//!   delivered at commit.
//! - [`tx`]: the application's own transaction, in which every
//!   primitive's writes commit with the application's SQL, or not at all.
//!
//! Engines (`alkstore-sqlite`, `alkstore-postgres`) implement the driver
//! traits here ([`Engine`], [`QueueDriver`], [`StreamDriver`], …) and know
//! SQL and nothing else; the one wrapper in [`call`] gives every driver the
//! traits callers use ([`QueueEngine`], [`QueueAdmin`], [`StreamEngine`],
//! …), validating, tracing, recording metrics and sending wake hints in one
//! place. [`url`] parses store URLs and [`validate`] holds the checks and
//! [`Limits`] every area shares. The runtime in the `alkstore` crate knows
//! time, concurrency and handlers. Nothing in this crate touches a
//! database.
//!
//! **This crate is the engines' seam, and it is unstable**: the driver and
//! engine traits, [`op`], [`tx`] and [`call`] change as the engines do.
//! Applications use the `alkstore` crate's `Store` and its handles
//! (`store.queue(..)`, `tx.queue(..)`, …).

mod backoff;
pub mod call;
mod clock;
mod engine;
mod error;
pub mod group;
pub mod lock;
pub mod notify;
pub mod op;
mod pause;
pub mod process;
pub mod queue;
pub mod rate;
pub mod results;
pub mod schedule;
pub mod stream;
mod sweep;
pub mod tx;
pub mod url;
pub mod validate;
mod wake;

pub use backoff::Backoff;
pub use call::{Checked, Validate};
pub use clock::{Clock, ManualClock, SystemClock};
pub use engine::{Capabilities, Engine, EngineState};
pub use error::{BoxError, Error, ErrorKind, Result};
pub use group::{GroupDriver, GroupEngine};
pub use lock::{LockDriver, LockEngine};
pub use notify::{NotifyDriver, NotifyEngine};
pub use op::{AllOps, At, Drive, Op, Place, TxConn, Writes};
pub use pause::PauseState;
pub use process::{ProcessDriver, ProcessEngine};
pub use queue::{
    backoff_delay_s, AttemptError, CancelOutcome, Claim, DeadListParams, DeadSelect, EnqueueOpts,
    Enqueued, EnqueuedClaimed, Job, JobClaimParams, JobEnqueueClaimedParams, JobInfo,
    JobListParams, JobRetryParams, JobState, NewJob, QueueAdmin, QueueDriver, QueueEngine,
    QueueOpts, QueueStats, QueueThroughput, QueueThroughputParams, QueueTotals, RetryOutcome,
    Settle, Settled, Settlement, ThroughputBucket, DEFAULT_MAX_ATTEMPTS, THROUGHPUT_BUCKET_S,
    THROUGHPUT_RETENTION,
};
pub use rate::{RateDriver, RateEngine};
pub use results::{ResultDriver, ResultEngine};
pub use schedule::{ScheduleDriver, ScheduleEngine};
pub use stream::{StreamDriver, StreamEngine};
pub use sweep::{SweepParams, SweepReport};
pub use tx::{Transaction, TxDriver};
pub use validate::Limits;

/// The engine traits, for `use alkstore_core::prelude::*;` where engine
/// methods are called.
pub mod prelude {
    pub use crate::{
        Engine, GroupEngine, LockEngine, NotifyEngine, Place, ProcessEngine, QueueAdmin,
        QueueEngine, RateEngine, ResultEngine, ScheduleEngine, StreamEngine, Writes,
    };
}
pub use wake::{Offer, Taker, Takers, Wake, WakeHub};
