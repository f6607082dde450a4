//! Configuring and running a worker: [`Worker`] and its builder methods,
//! validation, [`Worker::run_until`] (start the queue loops,
//! the completer and the sweeper; shut them down in order) and the
//! [`WorkerReport`] it returns.

use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use alkstore_core::Result;
use serde::de::DeserializeOwned;
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::completer::Completer;
use super::handler::{self, Handler, JobCtx, JobError, JobResult};
use super::maintenance::{sweep_loop, AbortOnDrop};
use super::opts::{QueueSpec, WorkerOpts};
use super::producer::queue_loop;
use super::shared::{AckStats, Counters, LoopCtx};
use crate::Store;

/// What a worker did, returned when it stops.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkerReport {
    /// Jobs claimed.
    pub claimed: u64,
    /// Claims that found jobs (store round trips): `claimed / claims` is
    /// the mean claim size.
    pub claims: u64,
    /// Claims that found nothing (after a wake hint, a poll, or a rival
    /// worker taking the jobs first).
    pub empty_claims: u64,
    /// Jobs an enqueue call of this process gave straight to an idle claim
    /// loop, inserted already claimed (counted in `claimed` too, not in
    /// `claims`).
    pub handed_off: u64,
    /// Jobs acked.
    pub completed: u64,
    /// Attempts that failed and were rescheduled.
    pub retried: u64,
    /// Jobs moved to dead (failed, out of attempts, or cancelled).
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

/// A worker id in the one format (see
/// [`new_worker_id`](alkstore_core::process::new_worker_id)).
pub(crate) fn default_worker_id() -> String {
    alkstore_core::process::new_worker_id()
}

/// Say once, at INFO, which of the worker's queues are paused: it claims
/// nothing from them until they are resumed (a worker that sits idle for
/// that reason would otherwise look stuck). A failed look-up only skips the
/// note.
async fn log_paused(engine: &crate::AnyEngine, queues: &[QueueSpec]) {
    use alkstore_core::QueueAdmin;
    match engine.queue_paused().await {
        Ok(paused) => {
            for q in queues.iter().filter(|q| paused.contains(&q.name)) {
                tracing::info!(
                    queue = %q.name,
                    "queue is paused: this worker claims nothing from it until it is resumed"
                );
            }
        }
        Err(e) => tracing::debug!(error = %e, "could not read the paused queues"),
    }
}

/// Most jobs per transaction of a transactional queue ([`Worker::tx_batch`]).
const MAX_TX_BATCH: usize = 1_000;

/// Most handler slots per queue (far below the semaphore's limit, and what
/// shutdown can count in one `u32`).
const MAX_CONCURRENCY: usize = 1_000_000;

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
    #[must_use]
    pub fn queue<T, F, Fut>(mut self, name: impl Into<String>, f: F) -> Worker
    where
        T: DeserializeOwned + Send + 'static,
        F: Fn(JobCtx<T>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = JobResult> + Send + 'static,
    {
        self.add(name.into(), Handler::Plain(handler::typed(f)));
        self
    }

    /// Handle queue `name` with a handler that returns a value: it is saved
    /// (as JSON, kept a day) as the job's result before the job is acked,
    /// for [`Results::wait`](crate::results::Results::wait) and
    /// [`Results::get`](crate::results::Results::get).
    ///
    /// ```no_run
    /// # async fn demo(store: alkstore::Store) -> alkstore::Result<()> {
    /// use alkstore::{JobCtx, JobError, Worker};
    /// let worker = Worker::new(store).queue_returning("resize", |job: JobCtx<String>| async move {
    ///     Ok::<_, JobError>(format!("resized {}", job.payload()))
    /// });
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn queue_returning<T, R, F, Fut>(mut self, name: impl Into<String>, f: F) -> Worker
    where
        T: DeserializeOwned + Send + 'static,
        R: serde::Serialize + Send + 'static,
        F: Fn(JobCtx<T>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<R, JobError>> + Send + 'static,
    {
        self.add(name.into(), Handler::Plain(handler::returning(f)));
        self
    }

    /// Handle queue `name` with a handler of raw payload bytes.
    #[must_use]
    pub fn queue_raw<F, Fut>(mut self, name: impl Into<String>, f: F) -> Worker
    where
        F: Fn(JobCtx<Vec<u8>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = JobResult> + Send + 'static,
    {
        self.add(name.into(), Handler::Plain(handler::raw(f)));
        self
    }

    /// Handle queue `name` with a **transactional** handler of JSON-decoded
    /// payloads: for each job the worker opens a transaction
    /// ([`Store::begin`]), runs the handler with it, and commits the
    /// handler's writes together with the job's ack.
    ///
    /// # What a transactional handler is promised
    ///
    /// - **Exactly-once effects for the writes made in the transaction**
    ///   (every call on the [`Tx`](crate::Tx), and the application's own
    ///   SQL on [`Tx::sqlite`](crate::Tx::sqlite) or
    ///   [`Tx::postgres`](crate::Tx::postgres)), on both engines: they
    ///   commit in the same transaction as the job's ack, so they are
    ///   committed once, by the run that completed the job, or not at all.
    /// - The ack is token-checked inside the transaction. If the claim was
    ///   lost before the commit (it lapsed and another worker claimed the
    ///   job, an operator released it, the process was frozen past its
    ///   visibility timeout), the commit is refused and rolled back: the
    ///   handler's writes vanish, and the job is left to whoever holds it
    ///   now (counted in [`WorkerReport::lost_claims`]).
    /// - A handler that returns an error (or panics, or times out) has its
    ///   writes rolled back; then the job is retried, snoozed or
    ///   dead-lettered as a plain handler's would be.
    /// - **Not covered**: effects outside the database (an email sent, an
    ///   HTTP call made) are at least once, as with a plain handler: a run
    ///   whose commit is refused, fails or never comes (a crash) runs again
    ///   and repeats them. So are writes made outside the transaction
    ///   (through the [`Store`] rather than the `Tx`, or on another
    ///   connection).
    ///
    /// Plain handlers ([`Worker::queue`]) are at least once: a crash or a
    /// lost claim between the handler's writes and the ack runs it again.
    ///
    /// Each job holds a transaction, and so a connection, while its handler
    /// runs: keep transactional handlers short. On SQLite a transaction
    /// holds the store's write lock from the start, so transactional
    /// handlers run one at a time and every other write (the worker's own
    /// claims and heartbeats, other processes) waits for them: a handler
    /// must finish within its queue's visibility timeout there (its claim
    /// cannot be renewed meanwhile, and a lapsed claim refuses the commit).
    /// Inside one, write only through the transaction: a write through the
    /// store (including [`JobCtx::heartbeat`], [`JobCtx::save_result`],
    /// [`JobCtx::throttle`]) waits for the lock the handler itself holds.
    ///
    /// One job per transaction costs a commit per job, more than a plain
    /// handler's acks, which the worker batches: for throughput, let a
    /// backlog's jobs share transactions with [`Worker::tx_batch`].
    ///
    /// The handler returns a boxed future borrowing the transaction
    /// ([`TxFuture`](crate::TxFuture)); `?` works on every alkstore call
    /// (a failure there is a retry):
    ///
    /// ```no_run
    /// # async fn demo(store: alkstore::Store) -> alkstore::Result<()> {
    /// use alkstore::{JobCtx, JobError, Worker};
    ///
    /// #[derive(serde::Deserialize)]
    /// struct Order { id: i64 }
    ///
    /// let worker = Worker::new(store).queue_tx("orders", |tx, job: JobCtx<Order>| {
    ///     Box::pin(async move {
    ///         if let Some(conn) = tx.sqlite() {
    ///             conn.execute("UPDATE orders SET paid = 1 WHERE id = ?1", [job.payload().id])
    ///                 .map_err(JobError::retry)?;
    ///         }
    ///         tx.queue("receipts").enqueue(&job.payload().id).await?;
    ///         Ok(())
    ///     })
    /// });
    /// # let _ = worker; Ok(()) }
    /// ```
    #[must_use]
    pub fn queue_tx<T, F>(mut self, name: impl Into<String>, f: F) -> Worker
    where
        T: DeserializeOwned + Send + 'static,
        F: for<'t> Fn(&'t mut crate::Tx, JobCtx<T>) -> crate::TxFuture<'t, (), JobError>
            + Send
            + Sync
            + 'static,
    {
        self.add(name.into(), Handler::Tx(handler::tx_typed(f)));
        self
    }

    /// As [`Worker::queue_tx`], with the raw payload bytes.
    #[must_use]
    pub fn queue_tx_raw<F>(mut self, name: impl Into<String>, f: F) -> Worker
    where
        F: for<'t> Fn(&'t mut crate::Tx, JobCtx<Vec<u8>>) -> crate::TxFuture<'t, (), JobError>
            + Send
            + Sync
            + 'static,
    {
        self.add(name.into(), Handler::Tx(handler::tx_raw(f)));
        self
    }

    /// Register `name` with default settings, replacing any earlier handler
    /// (and settings) of that queue.
    fn add(&mut self, name: String, handler: Handler) {
        self.queues.retain(|q| q.name != name);
        self.queues.push(QueueSpec {
            name,
            handler,
            concurrency: 10,
            timeout: None,
            tx_batch: 1,
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
    #[must_use]
    pub fn concurrency(mut self, queue: &str, n: usize) -> Worker {
        if let Some(q) = self.spec(queue, "concurrency") {
            q.concurrency = n.max(1);
        }
        self
    }

    /// Stop a handler of `queue` after `limit`; the attempt counts as failed.
    /// `queue` must already have a handler, or [`Worker::run_until`] fails.
    #[must_use]
    pub fn timeout(mut self, queue: &str, limit: Duration) -> Worker {
        if let Some(q) = self.spec(queue, "timeout") {
            q.timeout = Some(limit);
        }
        self
    }

    /// Run up to `n` jobs of the transactional queue `queue` (see
    /// [`Worker::queue_tx`]) in one transaction, one after another: one
    /// commit acks them all with their writes (default 1: a transaction
    /// per job). Batches form from what one claim returns, so they are full
    /// only when there is a backlog, and an idle queue's job still starts
    /// at once; each batch takes `n` of the queue's
    /// [`concurrency`](Worker::concurrency) slots' worth of jobs, and the
    /// batches run side by side.
    ///
    /// The promise is the same as one job per transaction: the writes of a
    /// job commit once, with its ack, or not at all. The price: when a
    /// job's handler fails, or its claim is found lost at the ack, the
    /// whole transaction rolls back; that job goes the normal way (retry,
    /// fail, snooze; dropped when lost) and the batch's other jobs run
    /// again in a new transaction. So a handler may run more than once in
    /// one attempt (effects outside the database repeat, as they may
    /// anyway), and one slow handler delays its batch's commit. Use it for
    /// short handlers that rarely fail, where the commit is the cost (a
    /// backlog on PostgreSQL, where each commit waits for the disk).
    ///
    /// `queue` must already have a transactional handler, and `n` be
    /// 1..=1,000, or [`Worker::run_until`] fails.
    #[must_use]
    pub fn tx_batch(mut self, queue: &str, n: usize) -> Worker {
        if let Some(q) = self.spec(queue, "tx_batch") {
            let transactional = matches!(q.handler, Handler::Tx(_));
            q.tx_batch = n;
            if !transactional && self.build_error.is_none() {
                self.build_error = Some(format!(
                    "tx_batch for queue {queue:?}, whose handler is not transactional: register it with .queue_tx(…)"
                ));
            }
        }
        self
    }

    /// Name this worker in claims (default: host, pid and a suffix from the
    /// clock).
    #[must_use]
    pub fn worker_id(mut self, id: impl Into<String>) -> Worker {
        self.id = id.into();
        self
    }

    /// Replace the worker-wide options.
    #[must_use]
    pub fn opts(mut self, opts: WorkerOpts) -> Worker {
        self.opts = opts;
        self
    }

    /// Reject a builder mistake or options out of range.
    fn validate(&self) -> Result<()> {
        if let Some(reason) = &self.build_error {
            return Err(alkstore_core::Error::invalid("worker options", reason));
        }
        let bad = |reason: &str| Err(alkstore_core::Error::invalid("worker options", reason));
        let o = &self.opts;
        let most = alkstore_core::Limits::default().max_claim;
        if o.max_claim == 0 || o.max_claim > most {
            return bad(&format!("max_claim must be 1..={most}"));
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
        if o.process_heartbeat < Duration::from_millis(10)
            || o.process_heartbeat > Duration::from_secs(1_200)
        {
            return bad("process_heartbeat must be 10 ms..=20 min");
        }
        if self.queues.iter().any(|q| q.concurrency > MAX_CONCURRENCY) {
            return bad("concurrency must be at most 1,000,000 per queue");
        }
        if self
            .queues
            .iter()
            .any(|q| q.tx_batch == 0 || q.tx_batch > MAX_TX_BATCH)
        {
            return bad("tx_batch must be 1..=1,000");
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
        log_paused(&engine, &self.queues).await;
        let ack_stats = Arc::new(AckStats::default());
        let counters = Arc::new(Counters::default());
        let completer = Completer::spawn(
            engine.clone(),
            &self.id,
            self.opts.ack_batch,
            ack_stats.clone(),
            counters.clone(),
        );
        let (stop_tx, stop_rx) = watch::channel(false);
        let registration = {
            use crate::process::{Registration, Role};
            let every = self.opts.process_heartbeat;
            let slots: usize = self.queues.iter().map(|q| q.concurrency).sum();
            let p = Role {
                kind: "worker",
                id: self.id.clone(),
                roles: self.queues.iter().map(|q| q.name.clone()).collect(),
                concurrency: u32::try_from(slots).unwrap_or(u32::MAX),
            };
            let counting = counters.clone();
            Registration::start(
                engine.clone(),
                p,
                every,
                Arc::new(move || counting.running_now()),
            )
        };
        let orders = registration.orders();
        let mut loops = JoinSet::new();
        for spec in self.queues {
            let ctx = LoopCtx {
                engine: engine.clone(),
                worker: self.id.clone(),
                opts: self.opts.clone(),
                acks: completer.sender(),
                ack_stats: ack_stats.clone(),
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
        // An operator's quiet order drains the worker (nothing new is
        // claimed, running jobs finish) and it idles, registered, until
        // shut down; a stop order shuts it down.
        let mut shutdown = std::pin::pin!(shutdown);
        tokio::select! {
            () = &mut shutdown => {}
            () = crate::process::quiet_ordered(orders.clone()) => {
                tracing::info!(worker = %self.id, "told to go quiet: claiming nothing new");
                let _ = stop_tx.send(true);
                tokio::select! {
                    () = &mut shutdown => {}
                    () = crate::process::stop_ordered(orders) => {
                        tracing::info!(worker = %self.id, "told to stop");
                    }
                }
            }
        }
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
        registration.end().await;
        Ok(WorkerReport {
            claimed: counters.claimed.load(Ordering::Relaxed),
            claims: counters.claims.load(Ordering::Relaxed),
            empty_claims: counters.empty_claims.load(Ordering::Relaxed),
            handed_off: counters.handed_off.load(Ordering::Relaxed),
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
