//! [`GroupRunner`]: one worker of a consumer group — a coordinator that
//! renews, claims and releases bucket leases every heartbeat, and one reader
//! task per owned bucket.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use alkstore_core::group::MAX_LEASE_TTL;
use alkstore_core::group::{
    BucketEvent, BucketLease, GroupCheckpointParams, GroupClaimParams, GroupDead,
    GroupDeadAddParams, GroupDeadRequeueParams, GroupDeadResolveParams, GroupDeadTakeParams,
    GroupEnsureParams, GroupLeaveParams, GroupReadParams, GroupReleaseParams, GroupRenewParams,
};
use alkstore_core::stream::Event;
use alkstore_core::validate::{validate_duration, validate_ttl};
use alkstore_core::{BoxError, Engine, Error, ErrorKind, GroupEngine, Limits, Validate};
use futures_util::FutureExt;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::{mpsc, watch, Notify};
use tokio::task::JoinHandle;

use crate::stream::batch::{self, Next, Retries, Step, TxReader};
use crate::stream::{FollowUps, OnError};
use crate::{AnyEngine, Store, Tx, TxFuture};

/// One event handed to a group's handler, with the lease it is handled
/// under.
#[derive(Debug, Clone)]
pub struct GroupEvent {
    /// The event.
    pub event: Event,
    /// Its bucket.
    pub bucket: u32,
    /// The epoch of this worker's lease on the bucket.
    pub epoch: i64,
    /// This worker's id in the group.
    pub worker: Arc<str>,
}

/// How a [`GroupRunner`] leases, reads and checkpoints. `run` refuses
/// options outside the ranges below before it writes anything.
#[derive(Debug, Clone)]
pub struct GroupOpts {
    /// How long a lease lasts unless renewed (default 30 s; 1 ms..=1 day):
    /// a dead worker's buckets move after at most this plus one heartbeat.
    pub ttl: Duration,
    /// How often leases are renewed and shares rebalanced (default 10 s;
    /// must be below `ttl`).
    pub heartbeat: Duration,
    /// Events read per query (default 2,000; at most the store's
    /// [`Limits::max_page`], 10,000 by default).
    pub batch: u32,
    /// Checkpoint a bucket after this many handled events (default 1,000;
    /// at least 1) …
    pub commit_every: u32,
    /// … or this long after its last checkpoint (default 1 s), whichever
    /// comes first; and when caught up, and when the bucket is given up.
    pub commit_interval: Duration,
    /// Re-read a caught-up bucket this often without a wake hint (1 s;
    /// above zero).
    pub poll_interval: Duration,
    /// How often a failing event runs before it goes to the group's dead
    /// letters (with its error) and the bucket goes on (retry attempts: at
    /// least 1).
    pub on_error: OnError,
}

impl Default for GroupOpts {
    fn default() -> Self {
        GroupOpts {
            ttl: Duration::from_secs(30),
            heartbeat: Duration::from_secs(10),
            batch: 2000,
            commit_every: 1_000,
            commit_interval: Duration::from_secs(1),
            poll_interval: Duration::from_secs(1),
            on_error: OnError::default(),
        }
    }
}

impl GroupOpts {
    /// Refuse options a worker could not run with, against the store's
    /// `limits`: a TTL outside 1 ms..=[`MAX_LEASE_TTL`], a heartbeat not
    /// between zero and the TTL, a batch outside `1..=max_page` (every
    /// read would be refused), a `commit_every` or a retry count of 0, a
    /// poll interval of 0 (the reader would spin), a duration too far out.
    fn validate(&self, limits: &Limits) -> Result<(), Error> {
        validate_ttl("group ttl", self.ttl, MAX_LEASE_TTL)?;
        if self.heartbeat.is_zero() || self.heartbeat >= self.ttl {
            return Err(Error::invalid(
                "group heartbeat",
                format!(
                    "{:?} must be above zero and below the lease ttl ({:?})",
                    self.heartbeat, self.ttl
                ),
            ));
        }
        limits.check_page("group batch", self.batch)?;
        if self.commit_every == 0 {
            return Err(Error::invalid("commit_every", "must be at least 1"));
        }
        validate_duration("group commit_interval", Some(self.commit_interval))?;
        validate_duration("group poll_interval", Some(self.poll_interval))?;
        if self.poll_interval.is_zero() {
            return Err(Error::invalid("group poll_interval", "must be above zero"));
        }
        if let OnError::Retry { attempts, backoff } = self.on_error {
            if attempts == 0 {
                return Err(Error::invalid(
                    "group on_error",
                    "retry attempts must be at least 1 (runs in all, the first included)",
                ));
            }
            validate_duration("group retry backoff", Some(backoff))?;
        }
        Ok(())
    }
}

/// Why a group worker stopped before its shutdown signal.
#[derive(Debug, thiserror::Error)]
pub enum GroupError {
    /// The store failed, or the options or names were refused.
    #[error(transparent)]
    Store(#[from] Error),
}

/// What a group worker did before it stopped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GroupReport {
    /// Events handled successfully.
    pub handled: u64,
    /// Events given up on (written to the group's dead letters).
    pub dead_lettered: u64,
    /// Bucket leases taken.
    pub claimed: u64,
    /// Buckets lost to another worker (or to a lapsed lease).
    pub lost: u64,
    /// Buckets given back to make room for other workers.
    pub released: u64,
}

/// One worker of a consumer group (see the [module docs](super)).
#[derive(Debug, Clone)]
#[must_use = "a group runner does nothing until `run`"]
pub struct GroupRunner {
    store: Store,
    group: String,
    stream: String,
    buckets: u32,
    opts: GroupOpts,
    worker: Option<String>,
}

/// A group's handler, its types erased.
enum Handler {
    /// [`GroupRunner::run`]'s.
    Plain(Box<PlainHandler>),
    /// [`GroupRunner::run_tx`]'s.
    Tx(Box<TxHandler>),
}

/// A plain group handler, its types erased.
type PlainHandler =
    dyn Fn(GroupEvent) -> Pin<Box<dyn Future<Output = Result<(), BoxError>> + Send>> + Send + Sync;

/// What the fetcher and every bucket handler of one worker share.
struct Shared {
    engine: AnyEngine,
    group: String,
    stream: String,
    worker: Arc<str>,
    opts: GroupOpts,
    handler: Handler,
    /// The owned buckets the fetcher feeds: how far each was fetched, and
    /// its handler's queue.
    fetch: Mutex<BTreeMap<u32, FetchSlot>>,
    /// Wakes the fetcher when a bucket is added.
    added: Notify,
}

struct FetchSlot {
    /// The last offset handed to the bucket's handler (or known to have
    /// no event of the bucket up to it).
    after: i64,
    queue: mpsc::Sender<Fed>,
}

/// What the fetcher hands a bucket's handler.
enum Fed {
    Event(Event),
    /// A dead letter someone requeued: run it again, outside offset order.
    Redeliver(GroupDead),
    /// The fetcher found nothing more for now: checkpoint.
    CaughtUp,
}

/// How a bucket handler ended.
#[derive(Debug, Default)]
struct HandlerEnd {
    handled: u64,
    dead_lettered: u64,
    /// It found its lease gone (fenced).
    lost: bool,
}

/// An owned bucket's handler task.
struct Owned {
    epoch: i64,
    stop: watch::Sender<bool>,
    /// Until when this lease is surely valid, by this host's monotonic
    /// clock: the start of the claim or of the last renewal that returned
    /// it (same epoch) plus the TTL; the database computed its expiry later
    /// than that start. Its handler starts nothing past it, so a worker
    /// whose renewals fail, or that was frozen past its TTL, runs no event
    /// that the bucket's next owner may run too. Only a renewal that still
    /// returns the lease extends it: a lease lost meanwhile stays lapsed.
    valid_until: watch::Sender<Instant>,
    task: JoinHandle<HandlerEnd>,
}

impl GroupRunner {
    pub(crate) fn new(store: Store, group: String, stream: String) -> GroupRunner {
        GroupRunner {
            store,
            group,
            stream,
            buckets: 16,
            opts: GroupOpts::default(),
            worker: None,
        }
    }

    /// The group's bucket count N (default 16); every worker of the group
    /// must use the same one (another N is refused before anything is
    /// written).
    pub fn buckets(mut self, n: u32) -> GroupRunner {
        self.buckets = n;
        self
    }

    /// With these options.
    pub fn opts(mut self, opts: GroupOpts) -> GroupRunner {
        self.opts = opts;
        self
    }

    /// Name this worker (default: unique per process run). Two live workers
    /// must never share a name.
    pub fn worker_id(mut self, id: impl Into<String>) -> GroupRunner {
        self.worker = Some(id.into());
        self
    }

    /// Run `handler` over this worker's share of the group's buckets until
    /// `shutdown` resolves; then checkpoint and release every bucket at
    /// once, so the others take them over without waiting for the TTL.
    ///
    /// # What a handler is promised
    ///
    /// - Every event of the stream reaches the handler at least once, with
    ///   the bucket and the lease epoch it runs under. After a crash or a
    ///   lost lease, a bucket's events since its last checkpoint run again
    ///   under the next lease (maybe on another worker).
    /// - No handler call *starts* once its lease may have lapsed: right
    ///   before every call (first run, retry, requeued dead letter) the
    ///   bucket's task checks that the lease is still surely valid by this
    ///   host's monotonic clock (the start of the claim or renewal plus the
    ///   TTL, which comes before the database's expiry as long as the two
    ///   clocks run at the same rate), and stops instead, dropping what the
    ///   reader had queued for it. So a worker that was frozen (SIGSTOP, a
    ///   frozen cgroup or container) or cut off from the database past its
    ///   TTL starts nothing more on that bucket once it runs again; within
    ///   one lease, calls run one at a time in offset order. Not covered: a
    ///   host that suspends (the monotonic clock stands still while the
    ///   database's runs on), and on SQLite a wall clock stepped by more
    ///   than the TTL margin (leases there are stamped by each process's
    ///   clock).
    /// - A call already *running* when the lease lapses is not interrupted:
    ///   a slow handler, or a pause that lands inside it, can still be
    ///   running (and writing) after the bucket's next holder started, and
    ///   that holder may run the same event again. The checkpoint and the
    ///   dead letters are fenced by the epoch; the handler's own writes are
    ///   not. Keep handler calls well below the TTL, and make their effects
    ///   idempotent (keyed by the event's offset) or ordered by the epoch.
    ///
    /// Handlers that write to the same database can have those writes
    /// committed exactly once instead: see [`GroupRunner::run_tx`].
    pub async fn run<F, Fut, E>(
        self,
        handler: F,
        shutdown: impl Future<Output = ()>,
    ) -> Result<GroupReport, GroupError>
    where
        F: Fn(GroupEvent) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), E>> + Send + 'static,
        E: Into<BoxError> + Send + 'static,
    {
        let handler = Handler::Plain(Box::new(move |e: GroupEvent| {
            let called = handler(e);
            Box::pin(async move { called.await.map_err(Into::into) })
        }));
        self.run_with(handler, shutdown).await
    }

    /// Run a **transactional** `handler` over this worker's share of the
    /// group's buckets until `shutdown` resolves (as [`GroupRunner::run`]
    /// does a plain one): each bucket's events run in transactions
    /// ([`Store::begin`](crate::Store::begin)) of up to
    /// [`GroupOpts::commit_every`] events, and each transaction commits
    /// the bucket's checkpoint, under the lease's epoch, together with the
    /// handler's writes.
    ///
    /// # What a transactional handler is promised
    ///
    /// - **Exactly-once effects for the writes made in the transaction**
    ///   (every call on the [`Tx`], and the application's own SQL on
    ///   [`Tx::sqlite`] or [`Tx::postgres`]), on both engines, however
    ///   many workers run and whatever happens to them: an event's writes
    ///   commit with the checkpoint that moves past it, and the checkpoint
    ///   is fenced. Before each commit the transaction writes the
    ///   checkpoint under the epoch of the lease it ran under (refused if
    ///   the bucket has a new holder, and from then on the lease cannot be
    ///   taken over until the transaction ends), and the worker checks that
    ///   the lease is still surely valid by this host's clock (see
    ///   [`GroupRunner::run`]). If either fails (the worker was frozen or
    ///   cut off past its TTL, its lease lapsed and was claimed, a
    ///   rebalance took the bucket), the transaction rolls back: the
    ///   handler's writes vanish, and the bucket's next holder runs those
    ///   events from the committed checkpoint. So a call still running when
    ///   its lease lapses can write nothing that lasts.
    /// - Per key, the committed writes follow the stream's order: a bucket
    ///   is handled by one lease at a time, in offset order, from the
    ///   checkpoint the last committed transaction left.
    /// - A batch is per-event handler calls inside one transaction: it
    ///   takes the bucket's events that are already waiting, up to
    ///   `commit_every`, and commits early once it has been open for
    ///   [`GroupOpts::commit_interval`]; so a backlog (a projection being
    ///   rebuilt) makes few commits and a quiet stream adds no delay.
    /// - When a call fails, the whole transaction rolls back; the events
    ///   before the failing one run again and commit, then the failing one
    ///   runs alone per [`GroupOpts::on_error`]; when its runs are used up
    ///   it goes to the group's dead letters (outside the transaction, fenced
    ///   by the epoch) and the bucket goes on.
    /// - **Not covered**: effects outside the database (messages sent,
    ///   HTTP calls) and writes made outside the transaction are at least
    ///   once: a rolled-back transaction's events run again. So is a
    ///   requeued dead letter's run: its writes commit under a fenced
    ///   checkpoint, but marking it resolved is a write of its own after
    ///   that commit.
    ///
    /// On SQLite a transaction holds the store's write lock while its
    /// events run, so the buckets' transactions take turns and the
    /// worker's lease renewals wait for them: keep handler calls short
    /// (well below the TTL, which also bounds how long one batch may
    /// take), and write only through the transaction.
    ///
    /// ```no_run
    /// # async fn demo(store: alkstore::Store) -> Result<(), alkstore::group::GroupError> {
    /// use alkstore::group::GroupEvent;
    /// store
    ///     .group("projection")
    ///     .stream("orders")
    ///     .run_tx(
    ///         |tx, e: GroupEvent| {
    ///             Box::pin(async move {
    ///                 if let Some(client) = tx.postgres() {
    ///                     client
    ///                         .execute(
    ///                             "INSERT INTO order_log (key, event_offset) VALUES ($1, $2)",
    ///                             &[&e.event.key, &e.event.offset],
    ///                         )
    ///                         .await?;
    ///                 }
    ///                 Ok::<(), alkstore::postgres::tokio_postgres::Error>(())
    ///             })
    ///         },
    ///         alkstore::shutdown_signal(),
    ///     )
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub async fn run_tx<F, E>(
        self,
        handler: F,
        shutdown: impl Future<Output = ()>,
    ) -> Result<GroupReport, GroupError>
    where
        F: for<'t> Fn(&'t mut Tx, GroupEvent) -> TxFuture<'t, (), E> + Send + Sync + 'static,
        E: Into<BoxError> + 'static,
    {
        let handler = Handler::Tx(Box::new(move |tx: &mut Tx, e: GroupEvent| {
            let called = handler(tx, e);
            Box::pin(async move { called.await.map_err(Into::into) })
        }));
        self.run_with(handler, shutdown).await
    }

    async fn run_with(
        self,
        handler: Handler,
        shutdown: impl Future<Output = ()>,
    ) -> Result<GroupReport, GroupError> {
        let engine = self.store.engine().clone();
        let worker: Arc<str> = self.worker.unwrap_or_else(unique_worker_id).into();
        // Everything checked before anything is written: the options, and
        // the names and worker id every call of the run will carry.
        let limits = engine.limits();
        self.opts.validate(limits)?;
        let ensure = GroupEnsureParams::new(self.group.clone(), self.stream.clone(), self.buckets);
        ensure.validate_params(limits)?;
        GroupRenewParams::new(self.group.clone(), &*worker, self.opts.ttl)
            .validate_params(limits)?;
        engine.group_ensure(ensure).await?;
        let shared = Arc::new(Shared {
            engine: engine.clone(),
            group: self.group.clone(),
            stream: self.stream.clone(),
            worker: worker.clone(),
            opts: self.opts.clone(),
            handler,
            fetch: Mutex::new(BTreeMap::new()),
            added: Notify::new(),
        });
        let (fetch_stop, fetch_stop_rx) = watch::channel(false);
        let fetcher = tokio::spawn(fetch(shared.clone(), fetch_stop_rx));
        let mut coordinator = Coordinator {
            shared,
            buckets: BTreeMap::new(),
            report: GroupReport::default(),
            valid_until: Instant::now(),
            last_live: 0,
            settle_until: Instant::now() + self.opts.heartbeat,
        };
        let out = coordinator.run(shutdown).await;
        // Whatever stopped the run: stop fetching, stop the bucket handlers
        // (they checkpoint), then give every bucket back at once.
        fetch_stop.send_replace(true);
        let _ = fetcher.await;
        coordinator.stop_all().await;
        let left = engine
            .group_leave(GroupLeaveParams::new(self.group.clone(), &*worker))
            .await;
        out?;
        left?;
        Ok(coordinator.report)
    }
}

/// A worker id unique per process run: a restarted process never inherits
/// the dead one's leases.
fn unique_worker_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("w{}-{:x}", std::process::id(), nanos)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

struct Coordinator {
    shared: Arc<Shared>,
    buckets: BTreeMap<u32, Owned>,
    report: GroupReport,
    /// Until when every lease of the last renewal is surely valid (see
    /// [`Owned::valid_until`]).
    valid_until: Instant,
    /// Live workers at the last pass.
    last_live: u32,
    /// Until when passes come quickly: for a heartbeat after this worker
    /// starts (peers often start together) and after the number of live
    /// workers changes, so shares settle in milliseconds, not heartbeats.
    settle_until: Instant,
}

impl Coordinator {
    async fn run(&mut self, shutdown: impl Future<Output = ()>) -> Result<(), GroupError> {
        let mut shutdown = std::pin::pin!(shutdown.fuse());
        let opts = self.shared.opts.clone();
        loop {
            let (ramping, next_lapse) = self.pass().await?;
            // While below its share and buckets are free, claim the next one
            // soon (one per pass, re-counting live workers in between, so a
            // worker starting alone does not grab everything first).
            let wait = if ramping {
                (opts.heartbeat / 20).min(Duration::from_millis(2))
            } else if Instant::now() < self.settle_until {
                (opts.heartbeat / 10).min(Duration::from_millis(50))
            } else {
                opts.heartbeat
            };
            // Look again as soon as a peer's lease lapses (a dead peer's
            // buckets are then claimable), if that comes first.
            let wait = next_lapse.map_or(wait, |lapse| wait.min(lapse));
            tokio::select! {
                biased;
                () = &mut shutdown => return Ok(()),
                () = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// One heartbeat pass: whether it claimed a bucket and is still below
    /// its fair share, and how long until a peer's lease lapses.
    async fn pass(&mut self) -> Result<(bool, Option<Duration>), GroupError> {
        let s = self.shared.clone();
        self.reap().await;
        let started = Instant::now();
        let renewal = match s
            .engine
            .group_renew(GroupRenewParams::new(
                s.group.clone(),
                &*s.worker,
                s.opts.ttl,
            ))
            .await
        {
            Ok(r) => r,
            Err(e) if is_transient(&e) => {
                tracing::warn!(group = %s.group, error = %e, "group renewal failed; retrying next heartbeat");
                if self.valid_until <= Instant::now() {
                    // The leases may have lapsed: stop handling at once.
                    self.stop_all().await;
                }
                return Ok((false, None));
            }
            Err(e) => return Err(e.into()),
        };
        self.valid_until = started + s.opts.ttl;
        // A millisecond past the lapse, so the claim finds it lapsed.
        let next_lapse = renewal
            .next_lapse_in_ms
            .and_then(|ms| u64::try_from(ms).ok())
            .map(|ms| Duration::from_millis(ms + 1));
        let held: BTreeMap<u32, BucketLease> =
            renewal.held.into_iter().map(|l| (l.bucket, l)).collect();
        // Lost buckets first: stop their handlers before anything else.
        let lost: Vec<u32> = self
            .buckets
            .iter()
            .filter(|(b, o)| held.get(b).is_none_or(|l| l.epoch != o.epoch))
            .map(|(b, _)| *b)
            .collect();
        for bucket in lost {
            tracing::info!(group = %s.group, bucket, "bucket lost to another worker");
            self.report.lost += 1;
            self.stop(bucket).await;
        }
        // A handler that stopped at its lease's lapse while the renewal ran
        // is restarted now, not a heartbeat later.
        self.reap().await;
        for lease in held.values() {
            match self.buckets.get(&lease.bucket) {
                // Still held under the epoch its handler runs: extended.
                Some(owned) => {
                    owned.valid_until.send_replace(self.valid_until);
                }
                // Held without a handler (its handler ended on a store
                // error, or stopped at its lease's lapse): start one.
                None => self.start(lease.clone(), self.valid_until),
            }
        }
        let live = renewal.live_workers.max(1);
        if live != self.last_live {
            self.last_live = live;
            self.settle_until = Instant::now() + s.opts.heartbeat;
        }
        let fair = renewal.buckets.div_ceil(live) as usize;
        let mine = held.len();
        if mine < fair {
            let claimed = Instant::now();
            let taken = s
                .engine
                .group_claim(GroupClaimParams::new(
                    s.group.clone(),
                    &*s.worker,
                    s.opts.ttl,
                    1,
                ))
                .await;
            match taken {
                Ok(leases) => {
                    let got = !leases.is_empty();
                    for lease in leases {
                        tracing::info!(group = %s.group, bucket = lease.bucket, epoch = lease.epoch, "bucket claimed");
                        self.report.claimed += 1;
                        self.start(lease, claimed + s.opts.ttl);
                    }
                    return Ok((got && mine + 1 < fair, next_lapse));
                }
                Err(e) if is_transient(&e) => {
                    tracing::warn!(group = %s.group, error = %e, "group claim failed");
                }
                Err(e) => return Err(e.into()),
            }
        } else if mine > fair {
            // Make room for workers that joined: give back the highest
            // buckets beyond the share, each checkpointed first.
            let surplus: Vec<u32> = held.keys().rev().take(mine - fair).copied().collect();
            for bucket in surplus {
                self.stop(bucket).await;
                s.engine
                    .group_release(GroupReleaseParams::new(
                        s.group.clone(),
                        &*s.worker,
                        vec![bucket],
                    ))
                    .await?;
                tracing::info!(group = %s.group, bucket, "bucket released to make room");
                self.report.released += 1;
            }
        }
        Ok((false, next_lapse))
    }

    /// Start handling a newly held bucket, surely valid until
    /// `valid_until`: its handler task, and a slot the fetcher feeds from
    /// the bucket's checkpoint on.
    fn start(&mut self, lease: BucketLease, valid_until: Instant) {
        let (stop_tx, stop_rx) = watch::channel(false);
        let (valid_tx, valid_rx) = watch::channel(valid_until);
        let (queue, fed) = mpsc::channel(self.shared.opts.batch.max(1) as usize);
        lock(&self.shared.fetch).insert(
            lease.bucket,
            FetchSlot {
                after: lease.checkpoint,
                queue,
            },
        );
        let bucket = lease.bucket;
        let epoch = lease.epoch;
        let task = tokio::spawn(handle_bucket(
            self.shared.clone(),
            lease,
            fed,
            stop_rx,
            valid_rx,
        ));
        self.buckets.insert(
            bucket,
            Owned {
                epoch,
                stop: stop_tx,
                valid_until: valid_tx,
                task,
            },
        );
        self.shared.added.notify_one();
    }

    /// Stop handling one bucket and wait for its handler (it checkpoints).
    async fn stop(&mut self, bucket: u32) {
        lock(&self.shared.fetch).remove(&bucket);
        if let Some(owned) = self.buckets.remove(&bucket) {
            owned.stop.send_replace(true);
            self.finish(owned.task.await);
        }
    }

    async fn stop_all(&mut self) {
        lock(&self.shared.fetch).clear();
        for owned in self.buckets.values() {
            owned.stop.send_replace(true);
        }
        let buckets = std::mem::take(&mut self.buckets);
        for (_, owned) in buckets {
            self.finish(owned.task.await);
        }
    }

    /// Collect handlers that ended by themselves (fenced, or a store error).
    async fn reap(&mut self) {
        let done: Vec<u32> = self
            .buckets
            .iter()
            .filter(|(_, o)| o.task.is_finished())
            .map(|(b, _)| *b)
            .collect();
        for bucket in done {
            lock(&self.shared.fetch).remove(&bucket);
            if let Some(owned) = self.buckets.remove(&bucket) {
                self.finish(owned.task.await);
            }
        }
    }

    fn finish(&mut self, end: Result<HandlerEnd, tokio::task::JoinError>) {
        match end {
            Ok(end) => {
                self.report.handled += end.handled;
                self.report.dead_lettered += end.dead_lettered;
                if end.lost {
                    self.report.lost += 1;
                }
            }
            Err(e) => tracing::error!(error = %e, "a group bucket handler panicked"),
        }
    }
}

/// Errors a worker rides out (the next heartbeat tries again) rather than
/// stopping on.
fn is_transient(e: &Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::Connect | ErrorKind::Database | ErrorKind::Busy | ErrorKind::Conflict
    )
}

/// One page of `buckets` after `from`.
async fn read_page(
    engine: AnyEngine,
    group: String,
    buckets: Vec<u32>,
    from: i64,
    limit: u32,
) -> Result<Vec<BucketEvent>, Error> {
    engine
        .group_read(GroupReadParams::buckets(group, buckets, from, limit))
        .await
}

/// The worker's one reader: every owned bucket in one scan of the stream,
/// in offset order, each event handed to its bucket's handler; woken by
/// commits (the same hints as subscribers), with a safety poll.
async fn fetch(s: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let mut hints = s.engine.wake_subscribe();
    let mut failures = 0u32;
    // Follow-up reads after the first read, any full page, a hint and a new
    // bucket.
    let mut follow_ups = FollowUps::started();
    // A page read ahead: its buckets, its start, the read.
    type Ahead = (Vec<u32>, i64, JoinHandle<Result<Vec<BucketEvent>, Error>>);
    let mut ahead: Option<Ahead> = None;
    loop {
        if *stop.borrow() {
            return;
        }
        let wanted: Vec<(u32, i64)> = lock(&s.fetch)
            .iter()
            .map(|(b, slot)| (*b, slot.after))
            .collect();
        if let Some(from) = wanted.iter().map(|(_, after)| *after).min() {
            let buckets: Vec<u32> = wanted.iter().map(|(b, _)| *b).collect();
            // The page read ahead while the last one was handed out, if it
            // is the one wanted now (same buckets, same start).
            let read = match ahead.take() {
                Some((b, f, task)) if b == buckets && f == from => match task.await {
                    Ok(read) => read,
                    Err(e) => Err(Error::database("group_read", e.to_string())),
                },
                other => {
                    if let Some((_, _, task)) = other {
                        task.abort();
                    }
                    read_page(
                        s.engine.clone(),
                        s.group.clone(),
                        buckets.clone(),
                        from,
                        s.opts.batch,
                    )
                    .await
                }
            };
            let page = match read {
                Ok(page) => {
                    failures = 0;
                    page
                }
                Err(e) => {
                    failures += 1;
                    tracing::warn!(group = %s.group, error = %e, "group read failed");
                    let backoff = Duration::from_millis(100) * failures.min(50);
                    tokio::select! {
                        _ = stop.changed() => {}
                        () = tokio::time::sleep(backoff) => {}
                    }
                    continue;
                }
            };
            let caught_up = page.len() < s.opts.batch as usize;
            let last = page.last().map(|e| e.event.offset);
            // A full page: start reading the next one while this one is
            // handed out (the database works while the handlers do).
            if let (false, Some(last)) = (caught_up, last) {
                let task = tokio::spawn(read_page(
                    s.engine.clone(),
                    s.group.clone(),
                    buckets.clone(),
                    last,
                    s.opts.batch,
                ));
                ahead = Some((buckets.clone(), last, task));
            }
            for BucketEvent { bucket, event } in page {
                let queue = {
                    let mut slots = lock(&s.fetch);
                    match slots.get_mut(&bucket) {
                        Some(slot) if event.offset > slot.after => {
                            slot.after = event.offset;
                            Some(slot.queue.clone())
                        }
                        _ => None,
                    }
                };
                if let Some(queue) = queue {
                    // A full queue waits for its handler; a dropped one was
                    // a bucket given up meanwhile.
                    tokio::select! {
                        _ = queue.send(Fed::Event(event)) => {}
                        _ = stop.changed() => return,
                    }
                }
            }
            // The scan covered every wanted bucket up to the page's last
            // event: none has another event before it.
            if let Some(last) = last {
                let mut slots = lock(&s.fetch);
                for (b, _) in &wanted {
                    if let Some(slot) = slots.get_mut(b) {
                        slot.after = slot.after.max(last);
                    }
                }
            }
            if !caught_up {
                follow_ups.start();
                continue;
            }
            let queues: Vec<mpsc::Sender<Fed>> = lock(&s.fetch)
                .values()
                .map(|slot| slot.queue.clone())
                .collect();
            for q in queues {
                let _ = q.try_send(Fed::CaughtUp);
            }
            redeliver(&s).await;
        }
        // Caught up (or nothing owned): wait for a commit to the stream, a
        // new bucket, the safety poll or the stop; sooner while follow-ups
        // run (see `FollowUps`).
        let wait = follow_ups.next_wait(s.opts.poll_interval);
        let poll = tokio::time::sleep(wait);
        tokio::pin!(poll);
        loop {
            tokio::select! {
                biased;
                _ = stop.changed() => return,
                () = s.added.notified() => {
                    follow_ups.start();
                    break;
                }
                hint = hints.recv() => match hint {
                    Ok(w) if w.concerns_stream(&s.stream) => {
                        follow_ups.start();
                        break;
                    }
                    Ok(_) => {}
                    Err(RecvError::Lagged(_)) => break,
                    Err(RecvError::Closed) => {
                        hints = s.engine.wake_subscribe();
                        break;
                    }
                },
                () = &mut poll => break,
            }
        }
    }
}

/// Hand requeued dead letters of the owned buckets to their handlers
/// (taking them clears their mark, so no other worker runs them too).
async fn redeliver(s: &Shared) {
    let taken = s
        .engine
        .group_dead_take(GroupDeadTakeParams::new(
            s.group.clone(),
            &*s.worker,
            s.opts.batch,
        ))
        .await;
    let dead = match taken {
        Ok(dead) => dead,
        Err(e) => {
            tracing::warn!(group = %s.group, error = %e, "taking requeued dead letters failed");
            return;
        }
    };
    for d in dead {
        let queue = lock(&s.fetch).get(&d.bucket).map(|slot| slot.queue.clone());
        match queue {
            Some(q) => {
                let _ = q.send(Fed::Redeliver(d)).await;
            }
            // Taken just as its bucket went: marked again for its next holder.
            None => give_back(s, vec![d.offset]).await,
        }
    }
}

/// Mark requeued dead letters that were taken but not run as requeued
/// again (taking cleared the mark), so the bucket's next holder runs them
/// and an operator's requeue is not silently undone.
async fn give_back(s: &Shared, offsets: Vec<i64>) {
    if offsets.is_empty() {
        // An empty list would mean every dead letter of the group.
        return;
    }
    let n = offsets.len();
    let back = s
        .engine
        .group_dead_requeue(GroupDeadRequeueParams::new(
            s.group.clone(),
            offsets.clone(),
        ))
        .await;
    if let Err(e) = back {
        tracing::warn!(group = %s.group, ?offsets, error = %e, "requeued dead letters taken but not run could not be marked again; requeue them again");
    } else {
        tracing::debug!(group = %s.group, n, "requeued dead letters not run here marked again");
    }
}

/// One owned bucket's handler: runs the handler on the bucket's events in
/// offset order and checkpoints under the lease's epoch; until told to
/// stop, the lease is found gone, or the lease may have lapsed (its
/// `valid_until` passed).
async fn handle_bucket(
    s: Arc<Shared>,
    lease: BucketLease,
    mut fed: mpsc::Receiver<Fed>,
    mut stop: watch::Receiver<bool>,
    valid_until: watch::Receiver<Instant>,
) -> HandlerEnd {
    let mut h = BucketHandler {
        s: &s,
        bucket: lease.bucket,
        epoch: lease.epoch,
        offset: lease.checkpoint,
        saved: lease.checkpoint,
        unsaved: 0,
        last_save: Instant::now(),
        valid_until,
        untaken: Vec::new(),
        deferred: None,
        end: HandlerEnd::default(),
    };
    h.follow(&mut fed, &mut stop).await;
    // Whatever the fetcher queued is not run here: the bucket's next
    // holder (maybe this worker again) reads its events from the
    // checkpoint, and takes its requeued dead letters once marked again.
    fed.close();
    let mut untaken = std::mem::take(&mut h.untaken);
    while let Ok(item) = fed.try_recv() {
        if let Fed::Redeliver(dead) = item {
            untaken.push(dead.offset);
        }
    }
    give_back(&s, untaken).await;
    if !h.end.lost {
        // Hand the bucket over where it stands (a fenced save changes
        // nothing, and is only logged).
        let _ = h.save().await;
    }
    h.end
}

/// How one handler run (with its retries) ended.
enum Ran {
    Ok,
    /// The last error and how many runs.
    Failed(String, u32),
    Stopped,
    /// A transactional run whose transaction did not commit: the lease was
    /// lost (`NotHeld`) or the store failed.
    Refused(Error),
}

/// A transactional group handler, its types erased.
type TxHandler = dyn for<'t> Fn(&'t mut Tx, GroupEvent) -> TxFuture<'t, (), BoxError> + Send + Sync;

/// A bucket's transactions: the handler, then the checkpoint under the
/// lease's epoch, then a last look at the lease's `valid_until`.
struct BucketTx<'a> {
    s: &'a Shared,
    handler: &'a TxHandler,
    bucket: u32,
    epoch: i64,
    valid_until: watch::Receiver<Instant>,
    /// Checkpoint here rather than at the transaction's last event (a
    /// requeued dead letter's run: the checkpoint stays, fenced).
    at: Option<i64>,
}

impl BucketTx<'_> {
    fn valid(&self) -> bool {
        *self.valid_until.borrow() > Instant::now()
    }
}

impl TxReader for BucketTx<'_> {
    fn call<'t>(&'t self, tx: &'t mut Tx, event: &Event) -> TxFuture<'t, (), BoxError> {
        (self.handler)(
            tx,
            GroupEvent {
                event: event.clone(),
                bucket: self.bucket,
                epoch: self.epoch,
                worker: self.s.worker.clone(),
            },
        )
    }

    fn position<'t>(
        &'t self,
        tx: &'t mut Tx,
        offset: i64,
    ) -> Pin<Box<dyn Future<Output = Result<(), Error>> + Send + 't>> {
        let s = self.s;
        let params = GroupCheckpointParams::new(
            s.group.clone(),
            self.bucket,
            &*s.worker,
            self.epoch,
            self.at.unwrap_or(offset),
        );
        Box::pin(async move {
            // Fenced by the epoch, and from here on the lease cannot be
            // taken over until the transaction ends; then the lease must
            // still be surely valid by this host's clock (a worker frozen
            // past its TTL commits nothing).
            tx.group_checkpoint(params).await?;
            if self.valid() {
                Ok(())
            } else {
                Err(Error::NotHeld {
                    what: format!(
                        "lease on bucket {} of group {} (past its TTL by this host's clock)",
                        self.bucket, s.group
                    ),
                })
            }
        })
    }

    fn may_start(&self) -> bool {
        self.valid()
    }
}

struct BucketHandler<'a> {
    s: &'a Shared,
    bucket: u32,
    epoch: i64,
    /// The last event handled (or dead-lettered).
    offset: i64,
    saved: i64,
    unsaved: u32,
    last_save: Instant,
    /// The lease's [`Owned::valid_until`].
    valid_until: watch::Receiver<Instant>,
    /// Requeued dead letters taken but not run (stopped first).
    untaken: Vec<i64>,
    /// An item taken off the queue while gathering a transaction's batch,
    /// to handle next.
    deferred: Option<Fed>,
    end: HandlerEnd,
}

impl BucketHandler<'_> {
    /// Told to stop, or the lease may have lapsed: start nothing more.
    fn stopping(&self, stop: &watch::Receiver<bool>) -> bool {
        *stop.borrow() || *self.valid_until.borrow() <= Instant::now()
    }

    async fn follow(&mut self, fed: &mut mpsc::Receiver<Fed>, stop: &mut watch::Receiver<bool>) {
        let s = self.s;
        loop {
            if self.stopping(stop) {
                return;
            }
            // Checkpoint at least every commit_interval while busy.
            let due = s
                .opts
                .commit_interval
                .saturating_sub(self.last_save.elapsed());
            let next = if let Some(item) = self.deferred.take() {
                Some(item)
            } else {
                tokio::select! {
                biased;
                changed = stop.changed() => {
                    if changed.is_err() || *stop.borrow() {
                        return;
                    }
                    continue;
                }
                next = fed.recv() => next,
                () = tokio::time::sleep(due), if self.offset > self.saved => {
                    if !self.save().await {
                        return;
                    }
                    continue;
                }
                }
            };
            match next {
                None => return,
                Some(Fed::Redeliver(dead)) => {
                    if !self.redeliver(dead, stop).await {
                        return;
                    }
                }
                Some(Fed::CaughtUp) => {
                    if !self.save().await {
                        return;
                    }
                }
                Some(Fed::Event(event)) => {
                    if event.offset <= self.offset {
                        continue;
                    }
                    if let Handler::Tx(handler) = &s.handler {
                        let events = self.gather(event, fed);
                        if !self.handle_tx(handler.as_ref(), events, stop).await {
                            return;
                        }
                        continue;
                    }
                    if !self.handle(event, stop).await {
                        return;
                    }
                    if (self.unsaved >= s.opts.commit_every
                        || self.last_save.elapsed() >= s.opts.commit_interval)
                        && !self.save().await
                    {
                        return;
                    }
                }
            }
        }
    }

    /// A transaction's events: `first`, and the bucket's events already
    /// queued after it, up to `commit_every`; anything else taken off the
    /// queue is handled next.
    fn gather(&mut self, first: Event, fed: &mut mpsc::Receiver<Fed>) -> Vec<Event> {
        let most = self.s.opts.commit_every as usize;
        let mut events = vec![first];
        while events.len() < most {
            match fed.try_recv() {
                Ok(Fed::Event(e)) => {
                    if events.last().is_some_and(|last| e.offset > last.offset) {
                        events.push(e);
                    }
                }
                Ok(other) => {
                    self.deferred = Some(other);
                    break;
                }
                Err(_) => break,
            }
        }
        events
    }

    /// The bucket's transactions for `handler`, checkpointing at their
    /// last event (`at`: there instead).
    fn bucket_tx<'a>(&self, handler: &'a TxHandler, at: Option<i64>) -> BucketTx<'a>
    where
        Self: 'a,
    {
        BucketTx {
            s: self.s,
            handler,
            bucket: self.bucket,
            epoch: self.epoch,
            valid_until: self.valid_until.clone(),
            at,
        }
    }

    /// Run `events` in transactions that commit the checkpoint with the
    /// handler's writes (see [`GroupRunner::run_tx`]); an event whose runs
    /// are used up is dead-lettered. False when stopping, or when a
    /// transaction was refused (the lease is gone) or failed.
    async fn handle_tx(
        &mut self,
        handler: &TxHandler,
        events: Vec<Event>,
        stop: &mut watch::Receiver<bool>,
    ) -> bool {
        let s = self.s;
        let reader = self.bucket_tx(handler, None);
        let mut retries = Retries::new(s.opts.on_error);
        let mut rest = &events[..];
        while let Some(head) = rest.first() {
            if self.stopping(stop) {
                return false;
            }
            let (n, wait) = match retries.next(rest, s.opts.commit_every as usize) {
                Next::Run(n, wait) => (n, wait),
                Next::GiveUp(error, runs) => {
                    if !self
                        .dead_letter(head.clone(), error.to_string(), runs)
                        .await
                    {
                        return false;
                    }
                    rest = &rest[1..];
                    continue;
                }
            };
            if !wait.is_zero() && !self.pause(wait, stop).await {
                return false;
            }
            match batch::one_tx(&reader, &s.engine, &rest[..n], s.opts.commit_interval).await {
                Step::Committed(done @ 1..) => {
                    let offset = rest[done - 1].offset;
                    self.offset = offset;
                    self.saved = offset;
                    self.unsaved = 0;
                    self.last_save = Instant::now();
                    self.end.handled += done as u64;
                    retries.committed(offset);
                    rest = &rest[done..];
                }
                Step::Committed(0) | Step::Stopped => return false,
                Step::Failed { index, error } => {
                    let offset = rest[index].offset;
                    tracing::warn!(group = %s.group, bucket = self.bucket, offset, run = retries.runs(offset) + 1, error = %error, "group handler failed; its transaction was rolled back");
                    retries.failed(offset, error);
                }
                Step::Refused(e) => {
                    self.end.lost = e.kind() == ErrorKind::NotHeld;
                    tracing::warn!(group = %s.group, bucket = self.bucket, error = %e, "the bucket's transaction did not commit: its writes were rolled back");
                    return false;
                }
            }
        }
        true
    }

    /// Wait `wait` before running a failing event again; false when told
    /// to stop meanwhile.
    async fn pause(&self, wait: Duration, stop: &mut watch::Receiver<bool>) -> bool {
        tokio::select! {
            biased;
            changed = stop.changed() => !(changed.is_err() || *stop.borrow()),
            () = tokio::time::sleep(wait) => true,
        }
    }

    /// Run a requeued dead letter's `event` in a transaction of its own,
    /// per the error policy, its checkpoint kept where it is (fenced).
    async fn redeliver_in_tx(
        &self,
        handler: &TxHandler,
        event: &Event,
        stop: &mut watch::Receiver<bool>,
    ) -> Ran {
        let s = self.s;
        let reader = self.bucket_tx(handler, Some(self.saved));
        let mut retries = Retries::new(s.opts.on_error);
        let events = std::slice::from_ref(event);
        loop {
            if self.stopping(stop) {
                return Ran::Stopped;
            }
            let wait = match retries.next(events, 1) {
                Next::Run(_, wait) => wait,
                Next::GiveUp(error, runs) => return Ran::Failed(error.to_string(), runs),
            };
            if !wait.is_zero() && !self.pause(wait, stop).await {
                return Ran::Stopped;
            }
            match batch::one_tx(&reader, &s.engine, events, s.opts.commit_interval).await {
                Step::Committed(_) => return Ran::Ok,
                Step::Stopped => return Ran::Stopped,
                Step::Failed { error, .. } => {
                    tracing::warn!(group = %s.group, bucket = self.bucket, offset = event.offset, run = retries.runs(event.offset) + 1, error = %error, "group handler failed on a requeued dead letter");
                    retries.failed(event.offset, error);
                }
                Step::Refused(e) => return Ran::Refused(e),
            }
        }
    }

    /// Run a requeued dead letter again: deleted when it succeeds, dead
    /// again (with the new error) when it fails. The bucket's offset does
    /// not move. False when stopping or the lease is gone.
    async fn redeliver(&mut self, dead: GroupDead, stop: &mut watch::Receiver<bool>) -> bool {
        let s = self.s;
        let event = dead.event();
        let offset = event.offset;
        let outcome = match self.run_handler(&event, stop).await {
            Ran::Stopped => {
                // Taken (its mark cleared) but not run: marked again when
                // the bucket's task ends.
                self.untaken.push(offset);
                return false;
            }
            Ran::Refused(e) => {
                // Run, but its transaction rolled back: as not run.
                tracing::warn!(group = %s.group, bucket = self.bucket, offset, error = %e, "a requeued dead letter's transaction did not commit");
                self.untaken.push(offset);
                self.end.lost = e.kind() == ErrorKind::NotHeld;
                return false;
            }
            Ran::Ok => {
                s.engine
                    .group_dead_resolve(GroupDeadResolveParams {
                        group: s.group.clone(),
                        bucket: self.bucket,
                        worker: s.worker.to_string(),
                        epoch: self.epoch,
                        offset,
                    })
                    .await
            }
            Ran::Failed(error, attempts) => {
                s.engine
                    .group_dead_add(GroupDeadAddParams {
                        group: s.group.clone(),
                        bucket: self.bucket,
                        worker: s.worker.to_string(),
                        epoch: self.epoch,
                        event,
                        error,
                        attempts,
                    })
                    .await
            }
        };
        match outcome {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(group = %s.group, bucket = self.bucket, offset, error = %e, "requeued dead letter not settled");
                self.end.lost = e.kind() == ErrorKind::NotHeld;
                !self.end.lost
            }
        }
    }

    /// Run the handler on `event` per the error policy.
    async fn run_handler(&self, event: &Event, stop: &mut watch::Receiver<bool>) -> Ran {
        let s = self.s;
        let plain = match &s.handler {
            Handler::Plain(plain) => plain,
            Handler::Tx(handler) => {
                return self.redeliver_in_tx(handler.as_ref(), event, stop).await
            }
        };
        let (attempts, mut backoff) = match s.opts.on_error {
            OnError::Stop => (1, Duration::ZERO),
            OnError::Retry { attempts, backoff } => (attempts.max(1), backoff),
        };
        let mut run = 0;
        loop {
            // Checked right before every run (a first run, a retry or a
            // requeued dead letter): the task may have waited, or its
            // process been frozen, past the lease's lapse since it last
            // looked, and the bucket's next holder may run this event now.
            if self.stopping(stop) {
                return Ran::Stopped;
            }
            run += 1;
            let delivery = GroupEvent {
                event: event.clone(),
                bucket: self.bucket,
                epoch: self.epoch,
                worker: s.worker.clone(),
            };
            let error: BoxError = match plain(delivery).await {
                Ok(()) => return Ran::Ok,
                Err(e) => e,
            };
            tracing::warn!(group = %s.group, bucket = self.bucket, offset = event.offset, run, error = %error, "group handler failed");
            if run >= attempts {
                return Ran::Failed(error.to_string(), run);
            }
            tokio::select! {
                biased;
                changed = stop.changed() => {
                    if changed.is_err() || *stop.borrow() {
                        return Ran::Stopped;
                    }
                }
                () = tokio::time::sleep(backoff) => {}
            }
            backoff = backoff.saturating_mul(2).min(Duration::from_secs(60));
        }
    }

    /// Run the handler on `event` per the error policy; when the retries
    /// run out, record a dead letter and go on. False when stopping.
    async fn handle(&mut self, event: Event, stop: &mut watch::Receiver<bool>) -> bool {
        let offset = event.offset;
        match self.run_handler(&event, stop).await {
            Ran::Stopped | Ran::Refused(_) => false,
            Ran::Ok => {
                self.offset = offset;
                self.unsaved += 1;
                self.end.handled += 1;
                true
            }
            Ran::Failed(error, attempts) => self.dead_letter(event, error, attempts).await,
        }
    }

    async fn dead_letter(&mut self, event: Event, error: String, attempts: u32) -> bool {
        let s = self.s;
        let offset = event.offset;
        let added = s
            .engine
            .group_dead_add(GroupDeadAddParams {
                group: s.group.clone(),
                bucket: self.bucket,
                worker: s.worker.to_string(),
                epoch: self.epoch,
                event,
                error,
                attempts,
            })
            .await;
        match added {
            Ok(()) => {
                tracing::error!(group = %s.group, bucket = self.bucket, offset, attempts, "event dead-lettered; the bucket goes on");
                self.offset = offset;
                self.unsaved += 1;
                self.end.dead_lettered += 1;
                true
            }
            Err(e) => {
                // Fenced (the bucket moved on) or the store failed: stop
                // here, unsaved, so this event runs again under the next
                // lease rather than being skipped.
                tracing::warn!(group = %s.group, bucket = self.bucket, error = %e, "dead letter not recorded");
                self.end.lost = e.kind() == ErrorKind::NotHeld;
                false
            }
        }
    }

    /// Checkpoint the last handled offset; false when the lease is gone
    /// (or the store failed, so the handler ends and the coordinator starts
    /// another while the lease is held).
    async fn save(&mut self) -> bool {
        self.last_save = Instant::now();
        if self.offset <= self.saved {
            self.unsaved = 0;
            return true;
        }
        let s = self.s;
        let saved = s
            .engine
            .group_checkpoint(GroupCheckpointParams::new(
                s.group.clone(),
                self.bucket,
                &*s.worker,
                self.epoch,
                self.offset,
            ))
            .await;
        match saved {
            Ok(at) => {
                self.saved = at;
                self.unsaved = 0;
                true
            }
            Err(e) => {
                self.end.lost = e.kind() == ErrorKind::NotHeld;
                tracing::warn!(group = %s.group, bucket = self.bucket, error = %e, "checkpoint refused");
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alkstore_core::group::GroupDeadListParams;

    /// What the test handler ran: offsets, in order.
    type Ran = Arc<Mutex<Vec<i64>>>;

    fn event(offset: i64) -> Event {
        Event {
            offset,
            stream: "s".into(),
            key: Some("k".into()),
            payload: b"x".to_vec(),
            created_at: 0,
        }
    }

    /// The task of worker "w" handling bucket 0 (epoch 1, checkpoint 0) of
    /// group "g" on stream "s" with `handler`; checkpoints only when told
    /// to (caught up, stopping), not on a timer.
    fn spawn_bucket(
        engine: &crate::AnyEngine,
        handler: Handler,
        fed: mpsc::Receiver<Fed>,
        stop: watch::Receiver<bool>,
        valid_until: watch::Receiver<Instant>,
    ) -> JoinHandle<HandlerEnd> {
        let shared = Arc::new(Shared {
            engine: engine.clone(),
            group: "g".into(),
            stream: "s".into(),
            worker: "w".into(),
            opts: GroupOpts {
                commit_interval: Duration::from_secs(3600),
                ..GroupOpts::default()
            },
            handler,
            fetch: Mutex::new(BTreeMap::new()),
            added: Notify::new(),
        });
        let lease = BucketLease {
            bucket: 0,
            epoch: 1,
            checkpoint: 0,
            expires_at_ms: 0,
        };
        tokio::spawn(handle_bucket(shared, lease, fed, stop, valid_until))
    }

    /// A bucket handler task of worker "w" on bucket 0 (epoch 1) over a
    /// fresh SQLite store, its handler recording what it ran; the test
    /// controls its queue, its stop and its lease's `valid_until`.
    struct Rig {
        _dir: tempfile::TempDir,
        ran: Ran,
        handled: Arc<Notify>,
        queue: mpsc::Sender<Fed>,
        _stop: watch::Sender<bool>,
        valid: watch::Sender<Instant>,
        task: JoinHandle<HandlerEnd>,
        engine: crate::AnyEngine,
    }

    async fn rig() -> Rig {
        let dir = tempfile::tempdir().expect("tmp");
        let url = format!("sqlite://{}", dir.path().join("t.db").display());
        let store = Store::open(&url).await.expect("open");
        let ran: Ran = Arc::default();
        let handled = Arc::new(Notify::new());
        let handler = {
            let (ran, handled) = (ran.clone(), handled.clone());
            Handler::Plain(Box::new(move |e: GroupEvent| {
                lock(&ran).push(e.event.offset);
                handled.notify_one();
                Box::pin(std::future::ready(Ok(())))
            }))
        };
        let (valid, valid_rx) = watch::channel(Instant::now() + Duration::from_secs(3600));
        let engine = store.engine().clone();
        let (queue, fed) = mpsc::channel(8);
        let (stop, stop_rx) = watch::channel(false);
        let task = spawn_bucket(&engine, handler, fed, stop_rx, valid_rx);
        Rig {
            _dir: dir,
            ran,
            handled,
            queue,
            _stop: stop,
            valid,
            task,
            engine,
        }
    }

    impl Rig {
        /// Hand the task event 1 and wait until it ran: the task is then
        /// parked on its queue again (one thread: it ran on until it
        /// waited), its lease valid.
        async fn parked_after_one(&self) {
            self.queue.send(Fed::Event(event(1))).await.expect("send");
            self.handled.notified().await;
            assert_eq!(*lock(&self.ran), [1]);
        }

        /// The lease lapses while the task waits (the process was frozen
        /// past its TTL, or its renewals failed).
        fn lapse(&self) {
            self.valid.send_replace(Instant::now());
        }

        /// Wait for the task to end; what its handler ran.
        async fn end(self) -> Vec<i64> {
            let end = self.task.await.expect("task");
            assert_eq!(end.handled, 1, "{end:?}");
            let ran = lock(&self.ran).clone();
            ran
        }
    }

    /// An event queued after the lease's `valid_until` passed is not
    /// handled: the task stops, dropping it (the next owner handles it).
    #[tokio::test]
    async fn a_lapsed_lease_handles_no_queued_event() {
        let rig = rig().await;
        rig.parked_after_one().await;
        rig.lapse();
        rig.queue.send(Fed::Event(event(2))).await.expect("send");
        assert_eq!(rig.end().await, [1]);
    }

    /// Nor does it run a requeued dead letter handed to it after that; it
    /// marks it requeued again (taking it cleared the mark), so the
    /// bucket's next holder runs it and the operator's requeue holds.
    #[tokio::test]
    async fn a_lapsed_lease_runs_no_requeued_dead_letter_and_gives_it_back() {
        let rig = rig().await;
        let e = rig.engine.clone();
        // A real dead letter of bucket 0 under worker "w"'s epoch 1 (the
        // rig's lease), requeued by an operator and taken by the fetcher.
        e.group_ensure(GroupEnsureParams::new("g", "s", 1))
            .await
            .expect("ensure");
        let leases = e
            .group_claim(GroupClaimParams::new("g", "w", Duration::from_secs(60), 1))
            .await
            .expect("claim");
        assert_eq!(leases.len(), 1);
        e.group_dead_add(GroupDeadAddParams {
            group: "g".into(),
            bucket: 0,
            worker: "w".into(),
            epoch: leases[0].epoch,
            event: event(2),
            error: "e".into(),
            attempts: 1,
        })
        .await
        .expect("dead");
        assert_eq!(
            e.group_dead_requeue(GroupDeadRequeueParams::new("g", vec![2]))
                .await
                .expect("requeue"),
            1
        );
        let mut taken = e
            .group_dead_take(GroupDeadTakeParams::new("g", "w", 10))
            .await
            .expect("take");
        assert_eq!(taken.len(), 1);
        rig.parked_after_one().await;
        rig.lapse();
        rig.queue
            .send(Fed::Redeliver(taken.remove(0)))
            .await
            .expect("send");
        assert_eq!(rig.end().await, [1]);
        let dead = e
            .group_dead_list(GroupDeadListParams::new("g", 0, 10))
            .await
            .expect("list");
        assert_eq!(dead.len(), 1);
        assert!(
            dead[0].requeued,
            "marked again for the next holder: {dead:?}"
        );
    }

    /// A transactional bucket task of worker "w" on bucket 0 of group "g"
    /// over stream "s", holding a real lease (epoch 1), with `n` events of
    /// the stream already queued for it when it starts. Its handler
    /// publishes each event's offset to stream "out" in the transaction,
    /// and notes the bucket's committed checkpoint at each call; on the
    /// last event it first runs `at_last`.
    struct TxRig {
        _dir: tempfile::TempDir,
        engine: crate::AnyEngine,
        seen: Arc<Mutex<Vec<i64>>>,
        stop: watch::Sender<bool>,
        task: JoinHandle<HandlerEnd>,
        _queue: mpsc::Sender<Fed>,
    }

    async fn tx_rig(
        n: usize,
        at_last: impl Fn() + Send + Sync + 'static,
        valid_rx: watch::Receiver<Instant>,
    ) -> (TxRig, Vec<i64>) {
        let dir = tempfile::tempdir().expect("tmp");
        let url = format!("sqlite://{}", dir.path().join("t.db").display());
        let store = Store::open(&url).await.expect("open");
        let engine = store.engine().clone();
        let offsets = store
            .stream("s")
            .publish_batch((0..n).map(|i| (Some("k".to_string()), i.to_string().into_bytes())))
            .await
            .expect("publish");
        engine
            .group_ensure(GroupEnsureParams::new("g", "s", 1))
            .await
            .expect("ensure");
        let leases = engine
            .group_claim(GroupClaimParams::new(
                "g",
                "w",
                Duration::from_secs(3600),
                1,
            ))
            .await
            .expect("claim");
        assert_eq!(leases.iter().map(|l| l.epoch).collect::<Vec<_>>(), [1]);
        let seen: Arc<Mutex<Vec<i64>>> = Arc::default();
        let last = *offsets.last().expect("published");
        let handler = {
            let (engine, seen, at_last) = (engine.clone(), seen.clone(), Arc::new(at_last));
            Handler::Tx(Box::new(move |tx: &mut Tx, e: GroupEvent| {
                let (engine, seen, at_last) = (engine.clone(), seen.clone(), at_last.clone());
                Box::pin(async move {
                    let status = engine.group_status("g").await?;
                    lock(&seen).push(status.buckets[0].checkpoint);
                    let out = alkstore_core::stream::NewEvent::new(
                        "out",
                        e.event.offset.to_string().into_bytes(),
                    );
                    tx.stream_publish(vec![out]).await?;
                    if e.event.offset == last {
                        at_last();
                    }
                    Ok(())
                })
            }))
        };
        let (queue, fed) = mpsc::channel(n.max(1));
        let stream = store.stream("s");
        for e in stream.read(0, 1_000).await.expect("read") {
            queue.send(Fed::Event(e)).await.expect("queue");
        }
        let (stop, stop_rx) = watch::channel(false);
        let task = spawn_bucket(&engine, handler, fed, stop_rx, valid_rx);
        (
            TxRig {
                _dir: dir,
                engine,
                seen,
                stop,
                task,
                _queue: queue,
            },
            offsets,
        )
    }

    impl TxRig {
        /// Wait for the task to end; its end, the committed checkpoint,
        /// and the offsets on "out".
        async fn finish(self) -> (HandlerEnd, i64, Vec<i64>) {
            use alkstore_core::StreamEngine;
            let end = self.task.await.expect("task");
            drop(self.stop);
            let checkpoint =
                self.engine.group_status("g").await.expect("status").buckets[0].checkpoint;
            let out = self
                .engine
                .stream_read(alkstore_core::stream::StreamReadParams::new("out", 0, 100))
                .await
                .expect("read out")
                .iter()
                .map(|e| String::from_utf8_lossy(&e.payload).parse().expect("offset"))
                .collect();
            (end, checkpoint, out)
        }
    }

    /// Events already queued when the bucket's task starts run in one
    /// transaction: every call sees the checkpoint as it was before the
    /// batch, and one commit moves it to the last event with every write.
    #[tokio::test]
    async fn queued_events_run_in_one_transaction_that_commits_the_checkpoint() {
        let (_valid, valid_rx) = watch::channel(Instant::now() + Duration::from_secs(3600));
        let (rig, offsets) = tx_rig(5, || {}, valid_rx).await;
        // Stop once the batch committed: the task then checkpoints (a
        // no-op) and ends.
        let deadline = Instant::now() + Duration::from_secs(30);
        while lock(&rig.seen).len() < 5 {
            assert!(Instant::now() < deadline, "the batch never ran");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        loop {
            let status = rig.engine.group_status("g").await.expect("status");
            if status.buckets[0].checkpoint == offsets[4] {
                break;
            }
            assert!(Instant::now() < deadline, "the batch never committed");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        rig.stop.send_replace(true);
        let seen = lock(&rig.seen).clone();
        let (end, checkpoint, out) = rig.finish().await;
        assert_eq!(seen, [0; 5], "every call inside the one transaction");
        assert_eq!((end.handled, end.lost), (5, false));
        assert_eq!(checkpoint, offsets[4]);
        assert_eq!(out, offsets, "every write committed with it");
    }

    /// A lease that lapses (by this host's clock) while the batch runs,
    /// found at the commit: the transaction rolls back, the checkpoint and
    /// the handler's writes with it, and the task ends as fenced.
    #[tokio::test]
    async fn a_lease_that_lapses_before_the_commit_commits_nothing() {
        let (valid, valid_rx) = watch::channel(Instant::now() + Duration::from_secs(3600));
        let valid = Arc::new(valid);
        let lapse = {
            let valid = valid.clone();
            move || {
                valid.send_replace(Instant::now());
            }
        };
        let (rig, _) = tx_rig(5, lapse, valid_rx).await;
        let (end, checkpoint, out) = rig.finish().await;
        assert_eq!((end.handled, end.lost), (0, true), "{end:?}");
        assert_eq!(checkpoint, 0, "the checkpoint rolled back");
        assert!(out.is_empty(), "the handler's writes rolled back: {out:?}");
    }
}
