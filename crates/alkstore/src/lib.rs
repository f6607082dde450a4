//! Durable background work in the database you already have.
//!
//! `alkstore` keeps job queues in SQLite (embedded, one file, the default) or
//! PostgreSQL (many worker hosts, one database) behind one contract. Open a
//! [`Store`] by URL, take a [`Queue`] handle, enqueue serde payloads:
//!
//! ```no_run
//! # async fn demo() -> alkstore::Result<()> {
//! use alkstore::{EnqueueOpts, JobExt, Store};
//! use std::time::Duration;
//!
//! #[derive(serde::Serialize, serde::Deserialize)]
//! struct Email { to: String }
//!
//! let store = Store::open("sqlite://app.db").await?;
//! let emails = store.queue("emails");
//! emails.enqueue(&Email { to: "a@example.com".into() }).await?;
//! emails
//!     .enqueue_with(&Email { to: "b@example.com".into() }, EnqueueOpts::default().priority(5).delay(Duration::from_secs(60)))
//!     .await?;
//! let jobs = emails.claim("worker-1", 10).await?;
//! for job in &jobs {
//!     let email: Email = job.decode()?;
//!     # let _ = email;
//! }
//! emails.ack(jobs.iter().map(|j| j.claim()).collect()).await?;
//! # Ok(()) }
//! ```
//!
//! # Names
//!
//! Every name (queue, stream, consumer, group, schedule, lock, channel,
//! rate limit) and every unique key, event key and worker id is non-empty,
//! at most 200 **bytes** of UTF-8 (`"é"` counts 2), and holds no NUL byte;
//! anything else fails with [`ErrorKind::InvalidInput`] before anything is
//! written. No other character is refused (spaces, `/`, `%` and control
//! characters are stored as given), so a client that puts a name in an
//! HTTP path (`alk serve`'s API) must percent-encode it. See
//! [`validate_text`](alkstore_core::validate::validate_text).

mod any;
pub mod group;
pub mod lock;
pub mod notify;
mod queue;
pub mod results;
pub mod schedule;
mod store;
pub mod stream;
pub mod tx;
pub mod worker;

pub use alkstore_core::prelude;
pub use alkstore_core::rate;
pub use alkstore_core::url;
pub use alkstore_core::{
    url::StoreUrl, AttemptError, BoxError, CancelOutcome, Capabilities, Claim, Clock,
    DeadListParams, DeadSelect, Engine, EnqueueOpts, Enqueued, EnqueuedClaimed, Error, ErrorKind,
    Job, JobClaimParams, JobEnqueueClaimedParams, JobInfo, JobListParams, JobRetryParams, JobState,
    Limits, ManualClock, NewJob, QueueAdmin, QueueEngine, QueueOpts, QueueStats, QueueThroughput,
    QueueThroughputParams, QueueTotals, Result, RetryOutcome, SweepReport, SystemClock,
    ThroughputBucket, Wake, DEFAULT_MAX_ATTEMPTS, THROUGHPUT_BUCKET_S, THROUGHPUT_RETENTION,
};
pub use alkstore_core::{
    GroupEngine, LockEngine, NotifyEngine, RateEngine, ResultEngine, ScheduleEngine, StreamEngine,
};
pub use any::AnyEngine;
pub use queue::{JobExt, Queue};
pub use store::{Store, StoreOptions};
pub use stream::{Stream, Subscriber};
pub use tx::{AnyTx, Tx, TxFuture};
pub use worker::{JobCtx, JobError, JobResult, Worker, WorkerOpts, WorkerReport};

/// Resolves on SIGTERM (what Docker, Kubernetes and systemd send) or Ctrl-C:
/// pass it to [`Worker::run_until`] for a graceful shutdown.
///
/// It takes over both signals for the whole process, from its first poll
/// on: once it listens, SIGTERM and Ctrl-C no longer end the process, and
/// the first of them is consumed here (it resolves this future, and every
/// other `shutdown_signal()` future listening at that moment). A second
/// signal is not turned back into the default "exit now". If the
/// application handles signals itself, do not use this: pass your own
/// future instead, for example one that waits on a
/// [`tokio::sync::watch`] or `CancellationToken` your handler fires, so
/// one handler decides and every worker, subscriber and group runner stops
/// on it.
///
/// ```no_run
/// # async fn demo(worker: alkstore::Worker) -> alkstore::Result<()> {
/// worker.run_until(alkstore::shutdown_signal()).await?;
/// # Ok(()) }
/// ```
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot watch SIGTERM; only Ctrl-C stops the worker");
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// The SQLite engine, for callers that need its own API (the outbox), and
/// the `rusqlite` it is built with: use `alkstore::sqlite::rusqlite` for
/// your own transactions, since two `rusqlite` versions cannot link into
/// one binary.
#[cfg(feature = "sqlite")]
#[doc(inline)]
pub use alkstore_sqlite as sqlite;

/// The PostgreSQL engine, for callers that need its own API (the outbox),
/// and the `tokio_postgres` it is built with (`alkstore::postgres::tokio_postgres`).
#[cfg(feature = "postgres")]
#[doc(inline)]
pub use alkstore_postgres as postgres;
