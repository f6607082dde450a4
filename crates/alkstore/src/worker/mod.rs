//! The queue worker: runs async handlers with per-queue concurrency, batch
//! claims sized to free capacity, batched acks, heartbeats for long jobs,
//! timeouts, retries, snoozes, cooperative cancel, panic isolation and
//! graceful shutdown.
//!
//! A handler is plain ([`Worker::queue`]: at-least-once effects, the job
//! acked after it returns) or transactional ([`Worker::queue_tx`]: it gets
//! the job's [`Tx`](crate::Tx), and its writes commit together with the
//! ack, exactly once, or not at all; see there for the precise promise,
//! and [`Worker::tx_batch`] for several jobs per transaction).
//!
//! A job that this process enqueues (one at a time, due now) while a queue's
//! worker idles goes straight to that worker, inserted already claimed for
//! it (see [`Queue::enqueue_bytes`](crate::queue::Queue::enqueue_bytes) and
//! [`WorkerReport::handed_off`]).
//!
//! # Metrics
//!
//! Through the [`metrics`] facade; every one is labelled `queue`:
//!
//! | name | kind | what |
//! |---|---|---|
//! | `alkstore_jobs_claimed_total` | counter | jobs claimed (handed-off jobs included) |
//! | `alkstore_jobs_completed_total` | counter | jobs acked (their handler returned `Ok`) |
//! | `alkstore_jobs_retried_total` | counter | failed attempts rescheduled |
//! | `alkstore_jobs_dead_total` | counter | jobs dead-lettered (failed, out of attempts, cancelled) |
//! | `alkstore_jobs_snoozed_total` | counter | jobs snoozed by their handler |
//! | `alkstore_jobs_cancelled_total` | counter | running jobs whose handler was told to stop |
//! | `alkstore_handler_duration_seconds` | histogram | handler run time |
//! | `alkstore_job_wait_seconds` | histogram | due → claimed (whole seconds, the engine's clock) |
//! | `alkstore_queue_depth` | gauge | jobs by `state` (`ready`, `scheduled`, `processing`, `expired_claims`, `dead`), every 5 s, or 50 times as long as the count took when that is longer |
//!
//! # Spans and logs
//!
//! Each handler runs in an `alkstore.job` span (`queue`, `id`, `attempt`).
//! A dead-lettered job is logged at WARN with its reason; a retry at INFO
//! (only when the job really is rescheduled); a panic at ERROR. A queue
//! that is paused when the worker starts is named once at INFO (the worker
//! claims nothing from it until it is resumed).
//!
//! ```no_run
//! # async fn demo() -> alkstore::Result<()> {
//! use alkstore::worker::{JobCtx, Worker};
//! use alkstore::Store;
//!
//! #[derive(serde::Deserialize)]
//! struct Email { to: String }
//!
//! let store = Store::open("sqlite://app.db").await?;
//! let report = Worker::new(store)
//!     .queue("emails", |job: JobCtx<Email>| async move {
//!         println!("sending to {}", job.payload().to);
//!         Ok(())
//!     })
//!     .concurrency("emails", 32)
//!     .run_until(alkstore::shutdown_signal())
//!     .await?;
//! println!("{report:?}");
//! # Ok(()) }
//! ```

// Layout: `builder` configures, validates and runs a worker; per queue,
// `producer` claims jobs into free handler slots and hands unfinished ones
// back at shutdown; `executor` runs one job's handler and settles its
// outcome; `completer` batches acks; `heartbeat` renews claims and relays
// cancellations; `inflight` is the map of running jobs those share;
// `maintenance` runs the store's sweep and the depth gauges; `handler` is
// what a handler sees and returns; `tx_batch` runs a transactional queue's
// jobs several to a transaction. `opts` (the worker's and each queue's
// settings) and `shared` (the tallies, the completer's messages and the
// state every loop and job shares) are leaves the others import, so none
// of them imports another's types.

mod builder;
mod completer;
mod executor;
mod handler;
mod heartbeat;
mod inflight;
mod maintenance;
mod opts;
mod producer;
mod shared;
mod tx_batch;

pub(crate) use builder::default_worker_id;
pub use builder::{Worker, WorkerReport};
pub use handler::{JobCtx, JobError, JobResult};
pub use opts::WorkerOpts;
