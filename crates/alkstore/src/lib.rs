//! Durable background work in the database you already have.
//!
//! `alkstore` keeps job queues, event streams, consumer groups, schedules,
//! locks, rate limits, job results and notifications in SQLite (embedded,
//! one file, the default) or PostgreSQL (many worker hosts, one database)
//! behind one contract. Open a [`Store`] by URL, enqueue serde payloads,
//! and run a [`Worker`]:
//!
//! ```no_run
//! use alkstore::{JobCtx, JobError, Store, Worker};
//!
//! #[derive(serde::Serialize, serde::Deserialize)]
//! struct Email { to: String }
//!
//! # async fn demo() -> alkstore::Result<()> {
//! let store = Store::open("sqlite://app.db").await?;
//! store.queue("emails").enqueue(&Email { to: "a@example.com".into() }).await?;
//!
//! // Until SIGTERM or Ctrl-C; then finish running jobs, hand the rest back.
//! Worker::new(store)
//!     .queue("emails", |job: JobCtx<Email>| async move {
//!         if job.payload().to.is_empty() {
//!             return Err(JobError::fail("no recipient")); // dead letter, no retry
//!         }
//!         Ok(()) // Err(JobError::retry(e)) retries with backoff
//!     })
//!     .run_until(alkstore::shutdown_signal())
//!     .await?;
//! # Ok(()) }
//! ```
//!
//! # One handle per primitive
//!
//! [`Store`] hands out a handle for each primitive; each lives in the
//! module of the same name, with its types and its runtime:
//!
//! | primitive | handle | runtime |
//! |---|---|---|
//! | [`queue`] | [`store.queue(name)`](Store::queue): enqueue, claim, ack, admin; [`store.jobs()`](Store::jobs): jobs by id in any queue | [`Worker`] |
//! | [`stream`] | [`store.stream(name)`](Store::stream): publish, read, offsets | [`Subscriber`] |
//! | [`group`] | [`store.group(name)`](Store::group): status, dead letters, checkpoints | [`GroupRunner`] |
//! | [`schedule`] | [`store.schedule(name)`](Store::schedule): cron and `@every` | [`Scheduler`] |
//! | [`lock`] | [`store.lock(name)`](Store::lock): fenced, leased locks | |
//! | [`rate`] | [`store.rate(name, limit, per)`](Store::rate): shared rate limits | |
//! | [`results`] | [`store.results()`](Store::results): job results, awaited | |
//! | [`channel`] | [`store.channel(name)`](Store::channel): notify and listen | |
//! | [`process`] | [`store.process(id)`](Store::process), [`store.processes()`](Store::processes): the live runtimes, quiet and stop orders | every runtime registers itself |
//!
//! Every write of every primitive can also join the application's own
//! transaction ([`Store::begin`], [`tx`]), so a job, an event or an offset
//! commits with the application's rows or not at all; the runtimes'
//! transactional handlers (`Worker::queue_tx`, `Subscriber::handler_tx`,
//! `GroupRunner::handler_tx`) build on it for effectively-once handlers.
//!
//! # Runtimes
//!
//! The four runtimes are made and run the same way: `new(store, names…)`,
//! then settings (`opts`, `worker_id`, …) and handlers, then
//! `run_until(shutdown)`, which returns [`Result`] with the runtime's
//! report (what it did) once `shutdown` resolves.
//!
//! | runtime | made with | handlers get | report |
//! |---|---|---|---|
//! | [`Worker`] | `Worker::new(store)`, then one `queue(name, …)` per queue | [`JobCtx<T>`](JobCtx) | [`WorkerReport`] |
//! | [`Subscriber`] | `Subscriber::new(store, stream, consumer)` | [`EventCtx<T>`](stream::EventCtx) | [`SubscriberReport`](stream::SubscriberReport) |
//! | [`GroupRunner`] | `GroupRunner::new(store, group, stream)` | [`GroupEvent<T>`](group::GroupEvent) | [`GroupReport`](group::GroupReport) |
//! | [`Scheduler`] | `Scheduler::new(store)` | (fires schedules' jobs) | [`SchedulerReport`](schedule::SchedulerReport) |
//!
//! A handler is an async function of what it gets, its payload decoded
//! from JSON to `T`; each runtime takes it four ways: plain (at least
//! once), `_tx` (inside a transaction that commits with the ack, offset
//! or checkpoint: effectively once), and `_raw` for both with the
//! payload's bytes (`Worker::queue`, `queue_tx`, `queue_raw`,
//! `queue_tx_raw`; `Subscriber::handler`, `handler_tx`, `handler_raw`,
//! `handler_tx_raw`; the same on `GroupRunner`).
//!
//! How each part works, and why, is in [`design`].
//!
//! # Cargo features
//!
//! - `sqlite` (default): the embedded engine, `sqlite://` URLs.
//! - `postgres` (default): the PostgreSQL engine, `postgres://` URLs.
//! - `tls` (default): TLS to PostgreSQL (`sslmode=require|verify-ca|verify-full`).
//! - `sqlx`: every transactional call on an application's own sqlx (0.8)
//!   PostgreSQL transaction (`store.postgres()` then `within_sqlx`).
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

#![cfg_attr(docsrs, feature(doc_cfg))]

mod any;
pub mod channel;
pub mod design;
pub mod group;
pub mod jobs;
pub mod lock;
pub mod process;
pub mod queue;
pub mod rate;
pub mod results;
pub mod runs;
pub mod schedule;
mod store;
pub mod stream;
pub mod tx;
mod wait;
pub mod worker;

pub use alkstore_core::url;
pub use alkstore_core::{
    url::StoreUrl, BoxError, Capabilities, Clock, Error, ErrorKind, Limits, ManualClock, Result,
    SweepReport, SystemClock, Wake,
};
pub use alkstore_core::{AllOps, Op, Place, Writes};
pub use any::{AnyConn, AnyEngine};
pub use group::GroupRunner;
pub use schedule::Scheduler;
pub use store::{Store, StoreOptions};
pub use stream::{Stream, Subscriber};
pub use tx::{AnyTx, Tx, TxFuture};
pub use worker::{JobCtx, JobError, JobResult, Worker, WorkerOpts, WorkerReport};

/// Decoding helpers ([`JobExt`](crate::queue::JobExt) for a claimed
/// job's payload, [`EventExt`](crate::stream::EventExt) for a read event's),
/// and the traits engine-level calls on [`Store::engine`] need (each
/// primitive's engine trait, `QueueEngine`, `StreamEngine`, …, and
/// `QueueAdmin`): those are the engines' seam and **unstable**; the
/// handles are the API.
pub mod prelude {
    pub use crate::queue::JobExt;
    pub use crate::stream::EventExt;
    pub use alkstore_core::prelude::*;
}

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
