use std::sync::Arc;

use alkstore_core::url::StoreUrl;
use alkstore_core::{Clock, Limits, QueueOpts, Result};

use crate::queue::Queue;
use crate::AnyEngine;

/// Options for [`Store::open_with`].
#[derive(Debug, Clone, Default)]
pub struct StoreOptions {
    /// Replace the engine's clock (tests). Without it SQLite uses the system
    /// clock and PostgreSQL the database server's clock.
    pub clock: Option<Arc<dyn Clock>>,
    /// Input limits.
    pub limits: Limits,
    /// Only open a store that exists: never create a file, schema or
    /// table; fail with [`Error::NoStore`](alkstore_core::Error::NoStore)
    /// instead (read-only tools).
    pub existing_only: bool,
    /// Most pooled connections to a server, when the URL gives no
    /// `pool_size` (PostgreSQL; `None`: the engine's default, 32). A
    /// process that runs only workers needs a few, whatever their
    /// concurrency: claims and acks go in batches.
    pub pool_size: Option<usize>,
}

/// An open store: a cheap, cloneable handle over one engine.
#[derive(Debug, Clone)]
pub struct Store {
    engine: AnyEngine,
}

impl Store {
    /// Open a store by URL: `sqlite://path/to/file.db` or
    /// `postgres://user@host/db?schema=name`. Creates the tables on first use.
    /// PostgreSQL URLs also take libpq's
    /// `sslmode=disable|prefer|require|verify-ca|verify-full` and
    /// `sslrootcert=PATH` (TLS needs the default `tls` feature).
    ///
    /// `sqlite://:memory:` opens an in-memory store (for tests): no file,
    /// a database of its own per `open`, shared by this `Store`'s clones in
    /// this process only, and gone when the last clone is dropped (when
    /// its last connection closes). It runs without WAL: see
    /// `alkstore::sqlite::SqliteOptions::new`.
    pub async fn open(url: &str) -> Result<Store> {
        Self::open_with(url, StoreOptions::default()).await
    }

    /// [`Store::open`] with options.
    pub async fn open_with(url: &str, opts: StoreOptions) -> Result<Store> {
        let engine = match StoreUrl::parse(url)? {
            #[cfg(feature = "sqlite")]
            StoreUrl::Sqlite {
                path,
                synchronous_full,
            } => {
                use alkstore_sqlite::{SqliteEngine, SqliteOptions};
                let mut sqlite = SqliteOptions::new(path);
                sqlite.synchronous_full = synchronous_full;
                sqlite.clock = opts.clock;
                sqlite.limits = opts.limits;
                sqlite.create = !opts.existing_only;
                let engine = tokio::task::spawn_blocking(move || SqliteEngine::open(sqlite))
                    .await
                    .map_err(|e| alkstore_core::Error::database("open", e.to_string()))??;
                AnyEngine::Sqlite(engine)
            }
            #[cfg(feature = "postgres")]
            StoreUrl::Postgres {
                conninfo,
                schema,
                relaxed_commits,
                relaxed_writes,
                pool_size,
                pooler,
                listen_url,
            } => {
                let mut pg = alkstore_postgres::PgOptions::new(conninfo, schema);
                pg.pooler = pooler;
                pg.listen_conninfo = listen_url;
                pg.clock = opts.clock;
                pg.limits = opts.limits;
                pg.relaxed_commits = relaxed_commits;
                pg.relaxed_writes = relaxed_writes;
                if let Some(n) = pool_size.or(opts.pool_size) {
                    pg.pool_size = n;
                }
                pg.create = !opts.existing_only;
                AnyEngine::Postgres(alkstore_postgres::PgEngine::open(pg).await?)
            }
            #[allow(unreachable_patterns)]
            other => {
                return Err(alkstore_core::Error::InvalidUrl {
                    url: alkstore_core::url::mask_password(url),
                    reason: format!(
                        "this build of alkstore has no {} engine (enable its cargo feature)",
                        match other {
                            StoreUrl::Sqlite { .. } => "sqlite",
                            StoreUrl::Postgres { .. } => "postgres",
                        }
                    ),
                })
            }
        };
        Ok(Store { engine })
    }

    /// Wrap an engine opened by hand.
    pub fn from_engine(engine: AnyEngine) -> Store {
        Store { engine }
    }

    /// The SQLite engine, when the store is one (for its own API: the
    /// `within(conn)` on the application's own rusqlite transaction).
    #[cfg(feature = "sqlite")]
    pub fn sqlite(&self) -> Option<&alkstore_sqlite::SqliteEngine> {
        #[allow(unreachable_patterns)]
        match &self.engine {
            AnyEngine::Sqlite(e) => Some(e),
            _ => None,
        }
    }

    /// The PostgreSQL engine, when the store is one (for its own API: the
    /// `within(client)` and `within_sqlx` on the application's own transaction).
    #[cfg(feature = "postgres")]
    pub fn postgres(&self) -> Option<&alkstore_postgres::PgEngine> {
        #[allow(unreachable_patterns)]
        match &self.engine {
            AnyEngine::Postgres(e) => Some(e),
            _ => None,
        }
    }

    /// The engine behind the store: the engines' seam, **unstable**
    /// (`alkstore_core`'s traits change as the engines do). The handles
    /// (`store.queue(..)`, `store.stream(..)`, …) are the API.
    pub fn engine(&self) -> &AnyEngine {
        &self.engine
    }

    /// Wait until what the engine sends after a call returned has gone out:
    /// on PostgreSQL, the wake-ups other processes' workers get from this
    /// process's enqueues and publishes. Call it before a short-lived
    /// process (a script, a CLI command) exits; a long-running one need not.
    ///
    /// ```no_run
    /// # async fn demo(store: alkstore::Store) -> alkstore::Result<()> {
    /// store.queue("emails").enqueue(&"hello").await?;
    /// store.flush().await; // before the process exits
    /// # Ok(()) }
    /// ```
    pub async fn flush(&self) {
        alkstore_core::Engine::flush(&self.engine).await;
    }

    /// A handle to queue `name` with default [`QueueOpts`].
    pub fn queue(&self, name: impl Into<String>) -> Queue {
        Queue::new(self.clone(), name.into(), QueueOpts::default())
    }

    /// A handle to stream `name`.
    pub fn stream(&self, name: impl Into<String>) -> crate::Stream {
        crate::Stream::new(self.clone(), name.into())
    }

    /// A handle to consumer group `name`.
    pub fn group(&self, name: impl Into<String>) -> crate::group::Group {
        crate::group::Group::new(self.clone(), name.into())
    }

    /// A handle to the schedule `name` (see [`crate::schedule`]).
    pub fn schedule(&self, name: impl Into<String>) -> crate::schedule::Schedule {
        crate::schedule::Schedule::new(self.clone(), name.into())
    }

    /// Every schedule, by name.
    pub async fn schedules(&self) -> Result<Vec<crate::schedule::ScheduleInfo>> {
        use alkstore_core::ScheduleEngine;
        self.engine().schedule_list().await
    }

    /// Every queue's name: those holding jobs (live, dead or kept), those
    /// that finished one (the throughput totals), and the paused ones.
    pub async fn queues(&self) -> Result<Vec<String>> {
        use alkstore_core::QueueAdmin;
        self.engine().queue_list().await
    }

    /// Every stream, by name, with its head and size.
    pub async fn streams(&self) -> Result<Vec<crate::stream::StreamInfo>> {
        use alkstore_core::StreamEngine;
        self.engine().stream_list().await
    }

    /// Every consumer group, by name, with its stream and bucket count.
    pub async fn groups(&self) -> Result<Vec<crate::group::GroupInfo>> {
        use alkstore_core::GroupEngine;
        self.engine().group_list().await
    }

    /// Jobs by id, in any queue: look up, list, cancel, run now, delete,
    /// dead letters across queues, and claims settled by id (see
    /// [`crate::jobs`]).
    pub fn jobs(&self) -> crate::jobs::Jobs {
        crate::jobs::Jobs::new(self.clone())
    }

    /// Every queue's counts by state, in one call.
    pub async fn queue_stats(&self) -> Result<Vec<crate::queue::QueueStats>> {
        use alkstore_core::QueueAdmin;
        self.engine().queue_stats_all().await
    }

    /// The paused queues' names.
    pub async fn paused_queues(&self) -> Result<Vec<String>> {
        use alkstore_core::QueueAdmin;
        self.engine().queue_paused().await
    }

    /// Jobs finished per queue in 10-second buckets over a window, and
    /// each queue's totals, for one queue or every one (see [`QueueThroughputParams`](crate::queue::QueueThroughputParams)).
    pub async fn throughput(
        &self,
        window: crate::queue::QueueThroughputParams,
    ) -> Result<crate::queue::QueueThroughput> {
        use alkstore_core::QueueAdmin;
        self.engine().queue_throughput(window).await
    }

    /// The depth samples the workers record, over a window, for one queue
    /// or every one.
    pub async fn depth_history(
        &self,
        window: crate::queue::QueueDepthParams,
    ) -> Result<Vec<crate::queue::QueueDepthSample>> {
        use alkstore_core::QueueAdmin;
        self.engine().queue_depth_history(window).await
    }

    /// Every lock ever acquired in the store, held or not, by name.
    pub async fn locks(&self) -> Result<Vec<crate::lock::LockInfo>> {
        use alkstore_core::LockEngine;
        self.engine().lock_list().await
    }

    /// Run the store's maintenance sweep now (a worker runs it every
    /// minute by default): lapsed claims back to their queues, expired
    /// rows pruned.
    pub async fn sweep(&self) -> Result<crate::SweepReport> {
        alkstore_core::Engine::sweep(&self.engine).await
    }

    /// The store's limits (payload size, page sizes, batch sizes).
    pub fn limits(&self) -> &crate::Limits {
        alkstore_core::Engine::limits(&self.engine)
    }

    /// A long poll: call `attempt` until it returns something or `wait`
    /// has passed, calling it again on each wake-up for which `concerns`
    /// holds (see [`Store::wakes`]) and at least every second (delayed
    /// jobs and lapsed leases come due without one). What
    /// [`Jobs::claim_waiting`](crate::jobs::Jobs::claim_waiting) and
    /// [`Stream::read_waiting`](crate::Stream::read_waiting) are made of.
    pub async fn long_poll<T, F, Fut>(
        &self,
        wait: std::time::Duration,
        concerns: impl Fn(&crate::Wake) -> bool,
        attempt: F,
    ) -> Result<Vec<T>>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<Vec<T>>>,
    {
        crate::wait::poll(self, wait, concerns, attempt).await
    }

    /// This process's wake-ups: one per enqueue, publish, notification or
    /// commit that concerns a queue, stream or channel, from this process
    /// and (through the engine's watcher or LISTEN) others. Hints only: a
    /// lagging receiver skips some, so re-read after one rather than
    /// counting them.
    pub fn wakes(&self) -> tokio::sync::broadcast::Receiver<crate::Wake> {
        alkstore_core::Engine::wake_subscribe(&self.engine)
    }

    /// A handle to the rate limit `name`: `limit` admissions per window of
    /// `per` (see [`crate::rate`]).
    pub fn rate(
        &self,
        name: impl Into<String>,
        limit: u32,
        per: std::time::Duration,
    ) -> crate::rate::RateLimit {
        crate::rate::RateLimit::new(self.engine().clone(), name.into(), limit, per)
    }

    /// A handle to the store's job results (see [`crate::results`]).
    pub fn results(&self) -> crate::results::Results {
        crate::results::Results::new(self.clone())
    }

    /// A handle to the notification channel `name` (see [`crate::channel`]).
    pub fn channel(&self, name: impl Into<String>) -> crate::channel::Channel {
        crate::channel::Channel::new(self.clone(), name.into())
    }

    /// Every registered process (workers, subscribers, group members,
    /// schedulers), alive or recently dead (see [`crate::process`]).
    pub async fn processes(&self) -> Result<Vec<crate::process::ProcessInfo>> {
        use alkstore_core::ProcessEngine;
        self.engine().process_list().await
    }

    /// A handle to the registered process `id`, to send it an order (see
    /// [`crate::process`]).
    pub fn process(&self, id: impl Into<String>) -> crate::process::Process {
        crate::process::Process::new(self.engine().clone(), id.into())
    }

    /// A handle to the named lock (see [`crate::lock`]).
    pub fn lock(&self, name: impl Into<String>) -> crate::lock::Lock {
        crate::lock::Lock::new(self.clone(), name.into())
    }

    /// Open a transaction of the application's own: the writes of every
    /// handle it gives (`tx.queue(..)`, `tx.stream(..)`, `tx.channel(..)`,
    /// `tx.schedule(..)`, `tx.group(..)`, `tx.lock(..)`, the same methods
    /// as the store's) and the application's own SQL on [`Tx::sqlite`](crate::Tx::sqlite)
    /// or [`Tx::postgres`](crate::Tx::postgres) commit together, or not at
    /// all. Dropped without `commit`, it rolls back. On SQLite it holds the
    /// store's write lock until it ends: keep it short.
    ///
    /// ```no_run
    /// # async fn demo(store: &alkstore::Store) -> alkstore::Result<()> {
    /// let mut tx = store.begin().await?;
    /// tx.queue("emails").enqueue(&serde_json::json!({"order": 1})).await?;
    /// tx.stream("orders").publish_raw(Some("customer-7"), b"1 placed".to_vec()).await?;
    /// tx.commit().await?;
    /// # Ok(()) }
    /// ```
    pub async fn begin(&self) -> Result<crate::Tx> {
        crate::Tx::begin(&self.engine).await
    }

    /// Run `f` in a transaction ([`Store::begin`]): committed when it
    /// returns `Ok`, rolled back when it returns `Err` (or panics). A
    /// commit refused because a call inside failed (a lost claim, lease or
    /// lock) returns [`Error::RolledBack`](crate::Error::RolledBack)
    /// naming that failure.
    ///
    /// ```no_run
    /// # async fn demo(store: &alkstore::Store) -> alkstore::Result<()> {
    /// let id = store
    ///     .transaction(|tx| {
    ///         Box::pin(async move {
    ///             let job = tx.queue("emails").enqueue(&"hi").await?;
    ///             Ok::<_, alkstore::Error>(job.id())
    ///         })
    ///     })
    ///     .await?;
    /// # let _ = id; Ok(()) }
    /// ```
    pub async fn transaction<T, E, F>(&self, f: F) -> std::result::Result<T, E>
    where
        F: for<'t> FnOnce(&'t mut crate::Tx) -> crate::TxFuture<'t, T, E>,
        E: From<alkstore_core::Error>,
    {
        let mut tx = self.begin().await?;
        match f(&mut tx).await {
            Ok(out) => {
                tx.commit().await?;
                Ok(out)
            }
            Err(e) => {
                // The closure's error is the one to report; a failed
                // rollback still ends the transaction (the connection
                // is discarded).
                if let Err(rb) = tx.rollback().await {
                    tracing::warn!(error = %rb, "rolling back a failed transaction failed");
                }
                Err(e)
            }
        }
    }

    /// A handle to queue `name` whose enqueues stamp `opts` on each row.
    pub fn queue_with(&self, name: impl Into<String>, opts: QueueOpts) -> Queue {
        Queue::new(self.clone(), name.into(), opts)
    }
}
