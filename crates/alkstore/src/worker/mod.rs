//! The queue worker: runs async handlers with per-queue concurrency, batch
//! claims sized to free capacity, batched acks, heartbeats for long jobs,
//! timeouts, retries, snoozes, cooperative cancel, panic isolation and
//! graceful shutdown.
//!
//! # Metrics
//!
//! Through the [`metrics`] facade; every one is labelled `queue`:
//!
//! | name | kind | what |
//! |---|---|---|
//! | `alkstore_jobs_claimed_total` | counter | jobs claimed |
//! | `alkstore_jobs_completed_total` | counter | jobs acked (their handler returned `Ok`) |
//! | `alkstore_jobs_retried_total` | counter | failed attempts rescheduled |
//! | `alkstore_jobs_dead_total` | counter | jobs dead-lettered (failed, out of attempts, cancelled) |
//! | `alkstore_jobs_snoozed_total` | counter | jobs snoozed by their handler |
//! | `alkstore_jobs_cancelled_total` | counter | running jobs whose handler was told to stop |
//! | `alkstore_handler_duration_seconds` | histogram | handler run time |
//! | `alkstore_job_wait_seconds` | histogram | due → started (whole seconds, the engine's clock) |
//! | `alkstore_queue_depth` | gauge | jobs by `state` (`ready`, `scheduled`, `processing`, `expired_claims`, `dead`), every 5 s |
//!
//! # Spans and logs
//!
//! Each handler runs in an `alkstore.job` span (`queue`, `id`, `attempt`).
//! A dead-lettered job is logged at WARN with its reason; a retry at INFO
//! (only when the job really is rescheduled); a panic at ERROR.
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

mod completer;
mod handler;

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use alkstore_core::{
    Claim, ClaimParams, Engine, Job, QueueAdmin, QueueEngine, Result, RetryParams,
};
use futures_util::FutureExt;
use serde::de::DeserializeOwned;
use std::panic::AssertUnwindSafe;
use tokio::sync::{broadcast, watch, Semaphore};
use tokio::task::JoinSet;
use tracing::Instrument;

pub use handler::{JobCtx, JobError, JobResult};

use crate::{AnyEngine, Store};
use completer::{AckStats, Completer};
use handler::ErasedHandler;

/// Worker-wide options.
#[derive(Debug, Clone)]
pub struct WorkerOpts {
    /// How long graceful shutdown waits for running handlers before handing
    /// their jobs back (default 30 s).
    pub shutdown_timeout: Duration,
    /// Longest idle wait between claims when no hint arrives (default 1 s;
    /// idle polls are aligned to second boundaries, where delayed jobs and
    /// claim expiries fall due).
    pub poll_interval: Duration,
    /// Most jobs per claim (default 1,000).
    pub max_claim: u32,
    /// Most acks per statement (default 1,000).
    pub ack_batch: usize,
    /// Claim loops per queue with at least 128 handler slots (default 2): one
    /// claims while the other's claim is being written.
    pub claimers: usize,
    /// How often the worker runs the store's maintenance sweep: expiring
    /// overdue jobs and pruning dead letters past retention (default 60 s;
    /// `None` leaves it to someone else).
    pub sweep_interval: Option<Duration>,
}

impl Default for WorkerOpts {
    fn default() -> Self {
        WorkerOpts {
            shutdown_timeout: Duration::from_secs(30),
            poll_interval: Duration::from_secs(1),
            max_claim: 1_000,
            ack_batch: 1_000,
            claimers: 2,
            sweep_interval: Some(Duration::from_secs(60)),
        }
    }
}

struct QueueSpec {
    name: String,
    handler: ErasedHandler,
    concurrency: usize,
    timeout: Option<Duration>,
}

/// What a worker did, returned when it stops.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkerReport {
    /// Jobs claimed.
    pub claimed: u64,
    /// Jobs acked.
    pub completed: u64,
    /// Attempts that failed and were rescheduled.
    pub retried: u64,
    /// Jobs moved to dead (failed, or out of attempts).
    pub dead: u64,
    /// Handlers that panicked (each counted as a failed attempt).
    pub panicked: u64,
    /// Handlers stopped by their timeout.
    pub timed_out: u64,
    /// Unfinished jobs handed back at shutdown.
    pub released: u64,
    /// Acks refused because the claim had expired (the job runs again).
    pub lost_claims: u64,
    /// Jobs snoozed by their handler (run again later, no attempt used).
    pub snoozed: u64,
    /// Running jobs whose cancellation was requested (handlers told).
    pub cancelled: u64,
}

#[derive(Default)]
struct Counters {
    claimed: AtomicU64,
    retried: AtomicU64,
    dead: AtomicU64,
    panicked: AtomicU64,
    timed_out: AtomicU64,
    released: AtomicU64,
    snoozed: AtomicU64,
    cancelled: AtomicU64,
}

/// Builds and runs a worker over one store.
pub struct Worker {
    store: Store,
    id: String,
    queues: Vec<QueueSpec>,
    opts: WorkerOpts,
    /// The first builder mistake (a setting for an unregistered queue),
    /// reported by [`Worker::run_until`] before anything runs.
    build_error: Option<String>,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("id", &self.id)
            .field(
                "queues",
                &self.queues.iter().map(|q| &q.name).collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// This machine's host name: the kernel's, else `$HOSTNAME`, else `host`.
fn host_name() -> String {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .map(|s| s.trim().to_string())
        .find(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "host".into())
}

fn default_worker_id() -> String {
    let host = host_name();
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{host}-{}-{nanos:08x}", std::process::id())
}

impl Worker {
    /// A worker over `store` with no queues yet.
    pub fn new(store: Store) -> Worker {
        Worker {
            store,
            id: default_worker_id(),
            queues: Vec::new(),
            opts: WorkerOpts::default(),
            build_error: None,
        }
    }

    /// Handle queue `name` with a handler of JSON-decoded payloads. A payload
    /// that does not decode is dead-lettered at once.
    pub fn queue<T, F, Fut>(mut self, name: impl Into<String>, f: F) -> Worker
    where
        T: DeserializeOwned + Send + 'static,
        F: Fn(JobCtx<T>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = JobResult> + Send + 'static,
    {
        self.add(name.into(), handler::typed(f));
        self
    }

    /// Handle queue `name` with a handler of raw payload bytes.
    pub fn queue_raw<F, Fut>(mut self, name: impl Into<String>, f: F) -> Worker
    where
        F: Fn(JobCtx<Vec<u8>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = JobResult> + Send + 'static,
    {
        self.add(name.into(), handler::raw(f));
        self
    }

    fn add(&mut self, name: String, handler: ErasedHandler) {
        self.queues.retain(|q| q.name != name);
        self.queues.push(QueueSpec {
            name,
            handler,
            concurrency: 10,
            timeout: None,
        });
    }

    /// The spec of a registered queue; a setting for any other queue is a
    /// mistake (a typo, or a setting before `.queue(…)`), kept for
    /// [`Worker::run_until`] to report.
    fn spec(&mut self, queue: &str, setting: &str) -> Option<&mut QueueSpec> {
        let found = self.queues.iter().position(|q| q.name == queue);
        if found.is_none() && self.build_error.is_none() {
            self.build_error = Some(format!(
                "{setting} for queue {queue:?}, which has no handler: register it with .queue(…) first"
            ));
        }
        found.map(|i| &mut self.queues[i])
    }

    /// Run at most `n` handlers of `queue` at once (default 10). `queue` must
    /// already have a handler, or [`Worker::run_until`] fails.
    pub fn concurrency(mut self, queue: &str, n: usize) -> Worker {
        if let Some(q) = self.spec(queue, "concurrency") {
            q.concurrency = n.max(1);
        }
        self
    }

    /// Stop a handler of `queue` after `limit`; the attempt counts as failed.
    /// `queue` must already have a handler, or [`Worker::run_until`] fails.
    pub fn timeout(mut self, queue: &str, limit: Duration) -> Worker {
        if let Some(q) = self.spec(queue, "timeout") {
            q.timeout = Some(limit);
        }
        self
    }

    /// Name this worker in claims (default: host, pid and a random suffix).
    pub fn worker_id(mut self, id: impl Into<String>) -> Worker {
        self.id = id.into();
        self
    }

    /// Replace the worker-wide options.
    pub fn opts(mut self, opts: WorkerOpts) -> Worker {
        self.opts = opts;
        self
    }

    fn validate(&self) -> Result<()> {
        if let Some(reason) = &self.build_error {
            return Err(alkstore_core::Error::invalid("worker options", reason));
        }
        let bad = |reason: &str| Err(alkstore_core::Error::invalid("worker options", reason));
        let o = &self.opts;
        if o.max_claim == 0 || o.max_claim > alkstore_core::Limits::default().max_claim {
            return bad("max_claim must be 1..=10000");
        }
        if o.ack_batch == 0 {
            return bad("ack_batch must be at least 1");
        }
        if o.poll_interval < Duration::from_millis(10) {
            return bad("poll_interval must be at least 10 ms");
        }
        if o.sweep_interval
            .is_some_and(|d| d < Duration::from_millis(10))
        {
            return bad("sweep_interval must be at least 10 ms");
        }
        if self.queues.iter().any(|q| q.concurrency > MAX_CONCURRENCY) {
            return bad("concurrency must be at most 1,000,000 per queue");
        }
        Ok(())
    }

    /// Run until `shutdown` resolves, then stop claiming, let running handlers
    /// finish for up to `shutdown_timeout`, hand unfinished jobs back, flush
    /// acks, and report.
    pub async fn run_until(
        self,
        shutdown: impl Future<Output = ()> + Send,
    ) -> Result<WorkerReport> {
        if self.queues.is_empty() {
            return Err(alkstore_core::Error::invalid(
                "worker",
                "no queues registered",
            ));
        }
        self.validate()?;
        for q in &self.queues {
            alkstore_core::queue::validate_queue_name(&q.name)?;
        }
        let engine = self.store.engine().clone();
        let ack_stats = Arc::new(AckStats::default());
        let completer = Completer::spawn(engine.clone(), self.opts.ack_batch, ack_stats.clone());
        let counters = Arc::new(Counters::default());
        let (stop_tx, stop_rx) = watch::channel(false);
        let mut loops = JoinSet::new();
        for spec in self.queues {
            let ctx = LoopCtx {
                engine: engine.clone(),
                worker: self.id.clone(),
                opts: self.opts.clone(),
                acks: completer.sender(),
                counters: counters.clone(),
                stop: stop_rx.clone(),
            };
            loops.spawn(queue_loop(ctx, spec));
        }
        let sweeper = self
            .opts
            .sweep_interval
            .map(|every| tokio::spawn(sweep_loop(engine.clone(), every)));
        let _sweeper_guard = sweeper.as_ref().map(|t| AbortOnDrop(t.abort_handle()));
        shutdown.await;
        let _ = stop_tx.send(true);
        while loops.join_next().await.is_some() {}
        // A handler that ignores cancellation still holds an ack sender;
        // do not wait for it forever.
        if tokio::time::timeout(
            self.opts.shutdown_timeout + Duration::from_secs(5),
            completer.close(),
        )
        .await
        .is_err()
        {
            tracing::warn!(
                "acks still pending at shutdown; those jobs return when their claims expire"
            );
        }
        Ok(WorkerReport {
            claimed: counters.claimed.load(Ordering::Relaxed),
            completed: ack_stats.acked.load(Ordering::Relaxed),
            retried: counters.retried.load(Ordering::Relaxed),
            dead: counters.dead.load(Ordering::Relaxed),
            panicked: counters.panicked.load(Ordering::Relaxed),
            timed_out: counters.timed_out.load(Ordering::Relaxed),
            released: counters.released.load(Ordering::Relaxed),
            lost_claims: ack_stats.lost.load(Ordering::Relaxed),
            snoozed: counters.snoozed.load(Ordering::Relaxed),
            cancelled: counters.cancelled.load(Ordering::Relaxed),
        })
    }
}

#[derive(Clone)]
struct LoopCtx {
    engine: AnyEngine,
    worker: String,
    opts: WorkerOpts,
    acks: tokio::sync::mpsc::Sender<completer::Finished>,
    counters: Arc<Counters>,
    stop: watch::Receiver<bool>,
}

/// Time until just after the next whole second (where due times fall), capped.
fn until_next_second(cap: Duration) -> Duration {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let to_boundary = Duration::from_nanos(1_000_000_000 - u64::from(now.subsec_nanos()))
        + Duration::from_millis(2);
    to_boundary.min(cap)
}

/// A job in flight: its claim and when to renew it next (unix seconds).
struct InFlight {
    claim: Claim,
    /// When to renew the claim, on this host's monotonic clock.
    next_beat: Instant,
    /// The claim's length (the job's visibility timeout).
    length: Duration,
    /// Aborts the job's task at the shutdown deadline.
    abort: Option<tokio::task::AbortHandle>,
    /// The handler finished and its outcome is being recorded: never hand
    /// such a job back (it would run again).
    settled: bool,
    /// Tells the handler its job was cancelled (see [`JobCtx::is_cancelled`]).
    cancel: Arc<watch::Sender<bool>>,
}

/// Aborts every job task of a queue when the queue loop goes away, including
/// when the caller drops the `run_until` future: no handler outlives its
/// worker without heartbeats.
struct AbortJobsOnDrop(Running);

impl Drop for AbortJobsOnDrop {
    fn drop(&mut self) {
        if let Ok(r) = self.0.lock() {
            for f in r.values() {
                if let Some(a) = &f.abort {
                    a.abort();
                }
            }
        }
    }
}

/// Jobs in flight by (id, attempt): a job re-claimed by this same worker
/// after its claim lapsed is a different entry from the stale run.
type Running = Arc<Mutex<HashMap<(i64, i64), InFlight>>>;

/// Per-queue metric handles, created once instead of per job.
#[derive(Clone)]
struct QueueMetrics {
    duration: metrics::Histogram,
    wait: metrics::Histogram,
    retried: metrics::Counter,
    dead: metrics::Counter,
    snoozed: metrics::Counter,
    cancelled: metrics::Counter,
    completed: metrics::Counter,
}

/// What the claim loops of one queue share.
struct QueueShared {
    spec: QueueSpec,
    slots: Arc<Semaphore>,
    running: Running,
    qm: QueueMetrics,
    claimed_total: metrics::Counter,
}

async fn queue_loop(ctx: LoopCtx, spec: QueueSpec) {
    let name = spec.name.clone();
    let shared = Arc::new(QueueShared {
        slots: Arc::new(Semaphore::new(spec.concurrency)),
        running: Arc::default(),
        qm: QueueMetrics {
            duration: metrics::histogram!("alkstore_handler_duration_seconds", "queue" => name.clone()),
            wait: metrics::histogram!("alkstore_job_wait_seconds", "queue" => name.clone()),
            retried: metrics::counter!("alkstore_jobs_retried_total", "queue" => name.clone()),
            dead: metrics::counter!("alkstore_jobs_dead_total", "queue" => name.clone()),
            snoozed: metrics::counter!("alkstore_jobs_snoozed_total", "queue" => name.clone()),
            cancelled: metrics::counter!("alkstore_jobs_cancelled_total", "queue" => name.clone()),
            completed: metrics::counter!("alkstore_jobs_completed_total", "queue" => name.clone()),
        },
        claimed_total: metrics::counter!("alkstore_jobs_claimed_total", "queue" => name.clone()),
        spec,
    });
    let heartbeats = tokio::spawn(heartbeat_sweeper(
        ctx.engine.clone(),
        shared.running.clone(),
        ctx.counters.clone(),
        shared.qm.cancelled.clone(),
    ));
    let _heartbeats_guard = AbortOnDrop(heartbeats.abort_handle());
    let depth = tokio::spawn(depth_reporter(ctx.engine.clone(), name.clone()));
    let _depth_guard = AbortOnDrop(depth.abort_handle());
    // Several claim loops per queue keep a claim in flight while another's
    // rows are being written; each reserves its handler slots before it
    // claims, so together they never claim more than the queue can run.
    let claimers = if shared.spec.concurrency >= 2 * CLAIMERS_MIN_SLOTS {
        ctx.opts.claimers.max(1)
    } else {
        1
    };
    let mut loops = JoinSet::new();
    for _ in 0..claimers {
        loops.spawn(claim_loop(ctx.clone(), shared.clone()));
    }
    let _abort_jobs = AbortJobsOnDrop(shared.running.clone());
    while loops.join_next().await.is_some() {}
    // Graceful shutdown: no more claims; let running handlers finish (every
    // slot returned), up to the deadline; then stop the rest and hand back.
    let all = shared.spec.concurrency as u32;
    let finished =
        tokio::time::timeout(ctx.opts.shutdown_timeout, shared.slots.acquire_many(all)).await;
    if finished.is_err() {
        let aborts: Vec<tokio::task::AbortHandle> = shared
            .running
            .lock()
            .map(|r| r.values().filter_map(|f| f.abort.clone()).collect())
            .unwrap_or_default();
        for a in &aborts {
            a.abort();
        }
        // Aborted tasks return their slots as they unwind.
        let _ = tokio::time::timeout(Duration::from_secs(5), shared.slots.acquire_many(all)).await;
    }
    // Hand back only jobs whose task is gone: a handler that ignores
    // cancellation (blocking code) still runs, and handing its job back would
    // let another worker run it at the same time. Settled jobs are being
    // acked or retried; handing them back would run them again.
    let unfinished: Vec<Claim> = shared
        .running
        .lock()
        .map(|mut r| {
            let gone: Vec<(i64, i64)> = r
                .iter()
                .filter(|(_, f)| !f.settled && f.abort.as_ref().is_none_or(|a| a.is_finished()))
                .map(|(k, _)| *k)
                .collect();
            gone.iter()
                .filter_map(|k| r.remove(k))
                .map(|f| f.claim)
                .collect()
        })
        .unwrap_or_default();
    for claim in unfinished {
        match ctx.engine.job_release(claim).await {
            Ok(true) => {
                ctx.counters.released.fetch_add(1, Ordering::Relaxed);
            }
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(error = %e, "could not hand a job back; it returns when its claim expires")
            }
        }
    }
}

/// Most handler slots per queue (far below the semaphore's limit, and what
/// shutdown can count in one `u32`).
const MAX_CONCURRENCY: usize = 1_000_000;

/// Below this many handler slots per claimer, extra claimers only split
/// small claims.
const CLAIMERS_MIN_SLOTS: usize = 64;

async fn claim_loop(mut ctx: LoopCtx, shared: Arc<QueueShared>) {
    let spec = &shared.spec;
    let mut hints = ctx.engine.wake_subscribe();
    let mut error_backoff = Duration::from_millis(50);
    let name: Arc<str> = Arc::from(spec.name.as_str());
    loop {
        if *ctx.stop.borrow() {
            break;
        }
        let free = shared
            .slots
            .available_permits()
            .min(ctx.opts.max_claim as usize);
        let reserved = if free == 0 {
            None
        } else {
            shared
                .slots
                .clone()
                .try_acquire_many_owned(free as u32)
                .ok()
        };
        let Some(mut reserved) = reserved else {
            tokio::select! {
                permit = shared.slots.acquire() => drop(permit),
                _ = ctx.stop.changed() => {}
            }
            continue;
        };
        // Hints sent before this claim are answered by it; only later ones
        // should wake the loop after an empty claim.
        while hints.try_recv().is_ok() {}
        let claimed = ctx
            .engine
            .job_claim(ClaimParams::new(
                spec.name.clone(),
                ctx.worker.clone(),
                reserved.num_permits() as u32,
            ))
            .await;
        let jobs = match claimed {
            Ok(jobs) => {
                error_backoff = Duration::from_millis(50);
                jobs
            }
            Err(e) => {
                drop(reserved);
                tracing::warn!(queue = %spec.name, error = %e, "claim failed; backing off");
                tokio::select! {
                    _ = tokio::time::sleep(error_backoff) => {}
                    _ = ctx.stop.changed() => {}
                }
                error_backoff = (error_backoff * 2).min(Duration::from_secs(5));
                continue;
            }
        };
        if jobs.is_empty() {
            drop(reserved);
            wait_for_work(&mut ctx, &mut hints, &name).await;
            continue;
        }
        ctx.counters
            .claimed
            .fetch_add(jobs.len() as u64, Ordering::Relaxed);
        shared.claimed_total.increment(jobs.len() as u64);
        for job in jobs {
            let Some(permit) = reserved.split(1) else {
                // Cannot happen (we claimed at most what we reserved).
                let _ = ctx.engine.job_release(job.claim()).await;
                continue;
            };
            let key = (job.id, job.claim_token);
            let length = Duration::from_secs((job.claim_expires_at - job.claimed_at).max(1) as u64);
            let next_beat = next_heartbeat(length);
            let claim = job.claim();
            let (cancel, cancelled) = watch::channel(false);
            // Boxed: the job's future is large, and moving it by value into
            // the task cell costs more than the no-op handlers it runs.
            let run = Box::pin(run_job(
                ctx.clone(),
                spec.handler.clone(),
                spec.timeout,
                job,
                cancelled,
                shared.running.clone(),
                shared.qm.clone(),
            ));
            // Registered before the task starts, so the task's own removal
            // always comes after this insert.
            let mut guard = shared.running.lock().ok();
            let task = tokio::spawn(async move {
                run.await;
                drop(permit);
            });
            if let Some(r) = guard.as_mut() {
                r.insert(
                    key,
                    InFlight {
                        claim,
                        next_beat,
                        length,
                        abort: Some(task.abort_handle()),
                        settled: false,
                        cancel: Arc::new(cancel),
                    },
                );
            }
            drop(guard);
        }
        // Unused reservations go back to the queue here.
        drop(reserved);
    }
}

/// Sleep until a hint for this queue, the next second boundary (delayed
/// jobs and expired claims come due on whole seconds), or shutdown.
async fn wait_for_work(
    ctx: &mut LoopCtx,
    hints: &mut broadcast::Receiver<alkstore_core::Wake>,
    queue: &str,
) {
    let poll = tokio::time::sleep(until_next_second(ctx.opts.poll_interval));
    tokio::pin!(poll);
    loop {
        tokio::select! {
            hint = hints.recv() => match hint {
                Ok(w) if w.concerns(queue) => return,
                Ok(_) => continue,
                Err(broadcast::error::RecvError::Lagged(_)) => return,
                Err(broadcast::error::RecvError::Closed) => {
                    (&mut poll).await;
                    return;
                }
            },
            _ = &mut poll => return,
            _ = ctx.stop.changed() => return,
        }
    }
}

/// Aborts the handler task when the job's runner is dropped (shutdown).
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn run_job(
    ctx: LoopCtx,
    handler: ErasedHandler,
    timeout: Option<Duration>,
    job: Job,
    cancelled: watch::Receiver<bool>,
    running: Running,
    qm: QueueMetrics,
) {
    let claim = job.claim();
    let span =
        tracing::info_span!("alkstore.job", queue = %job.queue, id = job.id, attempt = job.attempt);
    let queue = job.queue.clone();
    let last_attempt = job.attempt >= job.max_attempts;
    qm.wait.record((job.claimed_at - job.run_at).max(0) as f64);
    let started = Instant::now();
    // The handler is called inside the future, so a panic while it builds
    // its future is caught like one while it runs. A timeout drops the
    // future; aborting this task (shutdown) cancels it.
    let engine = ctx.engine.clone();
    let work = AssertUnwindSafe(
        async move { handler(job, engine, cancelled).await }.instrument(span.clone()),
    )
    .catch_unwind();
    let outcome = match timeout {
        Some(limit) => match tokio::time::timeout(limit, work).await {
            Ok(caught) => Outcome::from_caught(caught),
            Err(_) => Outcome::TimedOut(limit),
        },
        None => Outcome::from_caught(work.await),
    };
    qm.duration.record(started.elapsed().as_secs_f64());
    let retry = |error: String, after: Option<Duration>| RetryParams {
        claim: claim.clone(),
        error,
        delay: after,
    };
    let settled = match outcome {
        Outcome::Done => {
            mark_settled(&running, &claim);
            // Back-pressure: waits when the completer is behind.
            let _ = ctx
                .acks
                .send(completer::Finished {
                    claim: claim.clone(),
                    completed: qm.completed.clone(),
                })
                .await;
            Ok(())
        }
        Outcome::Error(JobError::Retry { error, after }) => {
            settle_retry(&ctx, retry(error, after), &qm, &span).await
        }
        Outcome::Error(JobError::Fail(error)) => ctx
            .engine
            .job_fail(claim.clone(), error.clone())
            .await
            .map(|moved| {
                if moved {
                    ctx.counters.dead.fetch_add(1, Ordering::Relaxed);
                    qm.dead.increment(1);
                    span.in_scope(
                        || tracing::warn!(%error, "job failed permanently; dead-lettered"),
                    );
                }
            }),
        Outcome::Error(JobError::Snooze(after)) => ctx
            .engine
            .job_snooze(claim.clone(), after)
            .await
            .map(|due| {
                if due.is_some() {
                    ctx.counters.snoozed.fetch_add(1, Ordering::Relaxed);
                    qm.snoozed.increment(1);
                    span.in_scope(|| tracing::debug!(?after, "job snoozed"));
                }
            }),
        Outcome::Panicked(msg) => {
            ctx.counters.panicked.fetch_add(1, Ordering::Relaxed);
            span.in_scope(|| tracing::error!(panic = %msg, last_attempt, "handler panicked"));
            settle_retry(
                &ctx,
                retry(format!("handler panicked: {msg}"), None),
                &qm,
                &span,
            )
            .await
        }
        Outcome::TimedOut(limit) => {
            ctx.counters.timed_out.fetch_add(1, Ordering::Relaxed);
            span.in_scope(|| tracing::warn!(?limit, last_attempt, "handler timed out"));
            settle_retry(
                &ctx,
                retry(format!("handler timed out after {limit:?}"), None),
                &qm,
                &span,
            )
            .await
        }
    };
    if let Err(e) = settled {
        tracing::warn!(queue = %queue, error = %e, "could not record the job's outcome; it returns when its claim expires");
    }
    if let Ok(mut r) = running.lock() {
        r.remove(&(claim.id, claim.token));
    }
}

fn mark_settled(running: &Running, claim: &Claim) {
    if let Ok(mut r) = running.lock() {
        if let Some(f) = r.get_mut(&(claim.id, claim.token)) {
            f.settled = true;
        }
    }
}

/// Record a failed attempt and log what became of the job: rescheduled
/// (INFO), dead-lettered (WARN, with the error), or cancelled.
async fn settle_retry(
    ctx: &LoopCtx,
    params: RetryParams,
    qm: &QueueMetrics,
    span: &tracing::Span,
) -> Result<()> {
    let error = params.error.clone();
    match ctx.engine.job_retry(params).await? {
        alkstore_core::RetryOutcome::Scheduled(run_at) => {
            ctx.counters.retried.fetch_add(1, Ordering::Relaxed);
            qm.retried.increment(1);
            span.in_scope(|| tracing::info!(%error, run_at, "job failed; retrying"));
        }
        alkstore_core::RetryOutcome::Dead => {
            ctx.counters.dead.fetch_add(1, Ordering::Relaxed);
            qm.dead.increment(1);
            span.in_scope(
                || tracing::warn!(%error, "job failed on its last attempt; dead-lettered"),
            );
        }
        alkstore_core::RetryOutcome::Cancelled => {
            ctx.counters.dead.fetch_add(1, Ordering::Relaxed);
            qm.dead.increment(1);
            span.in_scope(
                || tracing::warn!(%error, "cancelled job stopped; dead-lettered as cancelled"),
            );
        }
        alkstore_core::RetryOutcome::NotHeld => {
            span.in_scope(
                || tracing::warn!(%error, "job failed but its claim had lapsed; it runs again"),
            );
        }
    }
    Ok(())
}

enum Outcome {
    Done,
    Error(JobError),
    Panicked(String),
    TimedOut(Duration),
}

impl Outcome {
    fn from_caught(caught: std::thread::Result<JobResult>) -> Outcome {
        match caught {
            Ok(Ok(())) => Outcome::Done,
            Ok(Err(e)) => Outcome::Error(e),
            Err(payload) => {
                let msg = payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "non-string panic".into());
                Outcome::Panicked(msg)
            }
        }
    }
}

/// Run the maintenance sweep every `every`, starting after one interval.
async fn sweep_loop(engine: AnyEngine, every: Duration) {
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        match engine.sweep().await {
            Ok(r) if r.expired + r.exhausted > 0 => {
                tracing::warn!(
                    expired = r.expired,
                    rescued = r.rescued,
                    exhausted_or_cancelled = r.exhausted,
                    dead_pruned = r.dead_pruned,
                    completed_pruned = r.completed_pruned,
                    "maintenance sweep dead-lettered jobs"
                );
            }
            Ok(r) if r != alkstore_core::SweepReport::default() => {
                tracing::info!(
                    expired = r.expired,
                    rescued = r.rescued,
                    exhausted = r.exhausted,
                    dead_pruned = r.dead_pruned,
                    completed_pruned = r.completed_pruned,
                    "maintenance sweep"
                );
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "maintenance sweep failed"),
        }
    }
}

/// Publish the queue's depth by state as gauges every few seconds.
async fn depth_reporter(engine: AnyEngine, queue: String) {
    let gauge = |state: &'static str| metrics::gauge!("alkstore_queue_depth", "queue" => queue.clone(), "state" => state);
    let (ready, scheduled, processing, expired_claims, dead) = (
        gauge("ready"),
        gauge("scheduled"),
        gauge("processing"),
        gauge("expired_claims"),
        gauge("dead"),
    );
    let mut tick = tokio::time::interval(Duration::from_secs(5));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if let Ok(s) = engine.queue_stats(queue.clone()).await {
            ready.set(s.ready as f64);
            scheduled.set(s.scheduled as f64);
            processing.set(s.processing as f64);
            expired_claims.set(s.expired_claims as f64);
            dead.set(s.dead as f64);
        }
    }
}

/// When to renew a claim of `length` taken (or renewed) now: a third of its
/// length before it lapses, less a second, because claims are stamped in
/// whole seconds and may have started late in one. Measured on this host's
/// monotonic clock, so a host whose wall clock is off never misses a renewal.
fn next_heartbeat(length: Duration) -> Instant {
    let lead = (length / 3).max(Duration::from_secs(1)) + Duration::from_secs(1);
    Instant::now() + length.saturating_sub(lead)
}

/// How often a worker asks which of its running jobs were cancelled.
const CANCEL_POLL: Duration = Duration::from_secs(1);

/// Renew the claims of jobs due for a heartbeat (see [`next_heartbeat`]),
/// checking four times a second, for every job in flight on this queue; and
/// once a second tell handlers whose job was cancelled. One task per queue
/// rather than one per job keeps short jobs cheap.
async fn heartbeat_sweeper(
    engine: AnyEngine,
    running: Running,
    counters: Arc<Counters>,
    cancelled_total: metrics::Counter,
) {
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_cancel_poll = Instant::now();
    loop {
        tick.tick().await;
        let now = Instant::now();
        if now.duration_since(last_cancel_poll) >= CANCEL_POLL {
            last_cancel_poll = now;
            poll_cancellations(&engine, &running, &counters, &cancelled_total).await;
        }
        let due: Vec<Claim> = running
            .lock()
            .map(|r| {
                r.values()
                    .filter(|f| f.next_beat <= now)
                    .map(|f| f.claim.clone())
                    .collect()
            })
            .unwrap_or_default();
        for claim in due {
            let id = claim.id;
            let key = (claim.id, claim.token);
            match engine.job_heartbeat(claim).await {
                Ok(Some(_)) => {
                    if let Ok(mut r) = running.lock() {
                        if let Some(f) = r.get_mut(&key) {
                            f.next_beat = next_heartbeat(f.length);
                        }
                    }
                }
                Ok(None) => {
                    tracing::warn!(
                        id,
                        "claim lost while the handler runs; its ack will be refused"
                    );
                    if let Ok(mut r) = running.lock() {
                        if let Some(f) = r.get_mut(&key) {
                            // Lost for good: stop renewing it.
                            f.next_beat = now + Duration::from_secs(365 * 24 * 3600);
                        }
                    }
                }
                Err(e) => tracing::warn!(id, error = %e, "heartbeat failed; retrying next second"),
            }
        }
    }
}

/// Ask the store which running jobs were cancelled and tell their handlers.
async fn poll_cancellations(
    engine: &AnyEngine,
    running: &Running,
    counters: &Counters,
    cancelled_total: &metrics::Counter,
) {
    let ids: Vec<i64> = running
        .lock()
        .map(|r| {
            r.values()
                .filter(|f| !f.settled && !*f.cancel.borrow())
                .map(|f| f.claim.id)
                .collect()
        })
        .unwrap_or_default();
    for chunk in ids.chunks(1_000) {
        let cancelled = match engine.job_cancel_requests(chunk.to_vec()).await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(error = %e, "could not check for cancelled jobs");
                return;
            }
        };
        if cancelled.is_empty() {
            continue;
        }
        if let Ok(r) = running.lock() {
            for f in r.values().filter(|f| cancelled.contains(&f.claim.id)) {
                if !f.cancel.send_replace(true) {
                    counters.cancelled.fetch_add(1, Ordering::Relaxed);
                    cancelled_total.increment(1);
                    tracing::info!(id = f.claim.id, "job cancelled; telling its handler");
                }
            }
        }
    }
}
