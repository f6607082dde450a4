//! [`GroupRunner`]: one worker of a consumer group — a coordinator that
//! renews, claims and releases bucket leases every heartbeat, and one reader
//! task per owned bucket.
//!
//! Here: the builder and `run_until`, which check the options, set up the state
//! the parts share, start the fetcher and drive the coordinator until
//! shutdown; the parts themselves are this module's siblings.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use alkstore_core::group::{GroupEnsureParams, GroupLeaveParams, GroupRenewParams};
use alkstore_core::{BoxError, Engine, GroupEngine, Result, Validate};
use tokio::sync::{watch, Notify};

use super::coordinator::Coordinator;
use super::fetch::fetch;
use super::options::GroupOpts;
use super::shared::{group_event, lock, GroupEvent, GroupReport, Handler, Shared};
use crate::stream::ctx;
use crate::{AnyEngine, Store, Tx, TxFuture};
use serde::de::DeserializeOwned;

/// One worker of a consumer group (see the [module docs](super)).
#[derive(Debug, Clone)]
#[must_use = "a group runner does nothing until `run_until`"]
pub struct GroupRunner {
    store: Store,
    group: String,
    stream: String,
    buckets: u32,
    opts: GroupOpts,
    worker: String,
    handler: Option<Handler>,
}

impl GroupRunner {
    /// A worker of `store`'s consumer group `group` over stream `stream`,
    /// with 16 buckets, default options and no handler yet. Every worker
    /// of a group names the same stream and bucket count.
    pub fn new(store: Store, group: impl Into<String>, stream: impl Into<String>) -> GroupRunner {
        GroupRunner {
            store,
            group: group.into(),
            stream: stream.into(),
            buckets: 16,
            opts: GroupOpts::default(),
            worker: crate::worker::default_worker_id(),
            handler: None,
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
        self.worker = id.into();
        self
    }

    /// Handle this worker's share of the group's events with `handler`
    /// (replacing a handler set before); [`GroupRunner::run_until`] runs
    /// it.
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
    /// committed exactly once instead: see [`GroupRunner::handler_tx`].
    pub fn handler<T, F, Fut, E>(mut self, handler: F) -> GroupRunner
    where
        T: DeserializeOwned + Send + 'static,
        F: Fn(GroupEvent<T>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), E>> + Send + 'static,
        E: Into<BoxError> + 'static,
    {
        let make = group_event(ctx::decoded::<T>);
        self.handler = Some(Handler::Plain(ctx::plain(make, handler)));
        self
    }

    /// As [`GroupRunner::handler`], with the payload's raw bytes.
    pub fn handler_raw<F, Fut, E>(mut self, handler: F) -> GroupRunner
    where
        F: Fn(GroupEvent<Vec<u8>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), E>> + Send + 'static,
        E: Into<BoxError> + 'static,
    {
        let make = group_event(ctx::raw);
        self.handler = Some(Handler::Plain(ctx::plain(make, handler)));
        self
    }

    /// Handle this worker's share of the group's events with a
    /// **transactional** `handler` (replacing a handler set before; as
    /// [`GroupRunner::handler`] sets a plain one): each bucket's events run
    /// in transactions
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
    ///   [`GroupRunner::handler`]). If either fails (the worker was frozen or
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
    /// # async fn demo(store: alkstore::Store) -> alkstore::Result<()> {
    /// use alkstore::group::{GroupEvent, GroupRunner};
    /// GroupRunner::new(store, "projection", "orders")
    ///     .handler_tx(|tx, e: GroupEvent<serde_json::Value>| {
    ///         Box::pin(async move {
    ///             if let Some(client) = tx.postgres() {
    ///                 client
    ///                     .execute(
    ///                         "INSERT INTO order_log (key, event_offset) VALUES ($1, $2)",
    ///                         &[&e.key(), &e.offset()],
    ///                     )
    ///                     .await?;
    ///             }
    ///             Ok::<(), alkstore::postgres::tokio_postgres::Error>(())
    ///         })
    ///     })
    ///     .run_until(alkstore::shutdown_signal())
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn handler_tx<T, F, E>(mut self, handler: F) -> GroupRunner
    where
        T: DeserializeOwned + Send + 'static,
        F: for<'t> Fn(&'t mut Tx, GroupEvent<T>) -> TxFuture<'t, (), E> + Send + Sync + 'static,
        E: Into<BoxError> + 'static,
    {
        let make = group_event(ctx::decoded::<T>);
        self.handler = Some(Handler::Tx(ctx::in_tx(make, handler)));
        self
    }

    /// As [`GroupRunner::handler_tx`], with the payload's raw bytes.
    pub fn handler_tx_raw<F, E>(mut self, handler: F) -> GroupRunner
    where
        F: for<'t> Fn(&'t mut Tx, GroupEvent<Vec<u8>>) -> TxFuture<'t, (), E>
            + Send
            + Sync
            + 'static,
        E: Into<BoxError> + 'static,
    {
        let make = group_event(ctx::raw);
        self.handler = Some(Handler::Tx(ctx::in_tx(make, handler)));
        self
    }

    /// Run the handler over this worker's share of the group's buckets
    /// until `shutdown` resolves; then checkpoint and release every bucket
    /// at once, so the others take them over without waiting for the TTL.
    /// A runner without a handler, or with options out of range, is
    /// refused with [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput)
    /// before anything is written.
    pub async fn run_until(self, shutdown: impl Future<Output = ()>) -> Result<GroupReport> {
        let Some(handler) = self.handler.clone() else {
            return Err(alkstore_core::Error::invalid(
                "group runner",
                "no handler: give one with handler or handler_tx before run_until",
            ));
        };
        let engine = self.store.engine().clone();
        let worker: Arc<str> = self.worker.into();
        // Everything checked before anything is written: the options, and
        // the names and worker id every call of the run will carry.
        let limits = engine.limits();
        self.opts.validate(limits)?;
        let ensure = GroupEnsureParams::new(self.group.clone(), self.stream.clone(), self.buckets);
        ensure.validate_params(limits)?;
        GroupRenewParams::new(self.group.clone(), &*worker, self.opts.ttl)
            .validate_params(limits)?;
        let mut shutdown = std::pin::pin!(shutdown);
        if !join(&engine, ensure, shutdown.as_mut()).await? {
            return Ok(GroupReport::default());
        }
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
        let registration = {
            use crate::process::{Registration, Role, PROCESS_HEARTBEAT};
            // As often as the member's own heartbeat (10 ms..=5 s).
            let every = self
                .opts
                .heartbeat
                .clamp(std::time::Duration::from_millis(10), PROCESS_HEARTBEAT);
            let role = Role {
                kind: "group",
                id: worker.to_string(),
                roles: vec![format!("{}/{}", self.group, self.stream)],
                concurrency: self.buckets,
            };
            let holding = coordinator.shared.clone();
            let held = move || u32::try_from(lock(&holding.fetch).len()).unwrap_or(u32::MAX);
            Registration::start(engine.clone(), role, every, Arc::new(held))
        };
        // An operator's quiet or stop order ends the member's run as its
        // shutdown does: its buckets go to the others.
        let out = coordinator.run(registration.or_ordered(shutdown)).await;
        // Whatever stopped the run: stop fetching, stop the bucket handlers
        // (they checkpoint), then give every bucket back at once.
        fetch_stop.send_replace(true);
        let _ = fetcher.await;
        coordinator.stop_all().await;
        let left = engine
            .group_leave(GroupLeaveParams::new(self.group.clone(), &*worker))
            .await;
        registration.end().await;
        out?;
        left?;
        Ok(coordinator.report)
    }
}

/// Make sure the group exists, riding out a store that cannot be reached
/// yet (a database restarting or failing over as the worker starts), as
/// the running worker rides out its heartbeats' errors. False when
/// `shutdown` came first.
async fn join(
    engine: &AnyEngine,
    ensure: GroupEnsureParams,
    mut shutdown: std::pin::Pin<&mut impl Future<Output = ()>>,
) -> Result<bool> {
    // Joining a group that cannot be reached: 100 ms, doubling to 2 s.
    let mut backoff =
        alkstore_core::Backoff::new(Duration::from_millis(100), Duration::from_secs(2));
    loop {
        match engine.group_ensure(ensure.clone()).await {
            Ok(()) => return Ok(true),
            Err(e) if e.kind() == crate::ErrorKind::Connect => {
                tracing::warn!(error = %e, "cannot reach the store to join the group; trying again");
                tokio::select! {
                    () = shutdown.as_mut() => return Ok(false),
                    () = tokio::time::sleep(backoff.next()) => {}
                }
            }
            Err(e) => return Err(e),
        }
    }
}
