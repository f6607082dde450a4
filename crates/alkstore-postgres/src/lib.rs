//! The PostgreSQL engine of alkstore: many worker hosts, one database.
//!
//! - tokio-postgres with a deadpool pool and cached prepared statements.
//! - Claims with `FOR UPDATE SKIP LOCKED` in claim order (priority DESC,
//!   run_at, id); batch enqueue through `unnest`; batch ack in one statement.
//! - Every claim, visibility and expiry decision uses the **database's**
//!   clock (`now()` inside the statement), so hosts whose clocks disagree can
//!   never hold the same job at once. Tests may inject a clock instead.
//! - All objects live in one schema (see [`schema`]); the schema name is
//!   quoted everywhere, never interpolated raw.
//! - TLS as libpq does it: `sslmode=disable|prefer|require|verify-ca|verify-full`
//!   and `sslrootcert=PATH` in the connection string (see
//!   [`PgOptions::conninfo`]; the default `tls` feature brings native-tls).
//!
//! ```no_run
//! # async fn demo() -> alkstore_core::Result<()> {
//! use alkstore_core::{NewJob, Writes};
//! use alkstore_postgres::{PgEngine, PgOptions};
//! let engine = PgEngine::open(PgOptions::new("postgres://postgres@127.0.0.1/app", "jobs")).await?;
//! engine.job_enqueue(vec![NewJob::new("emails", b"hello".to_vec())]).await?;
//! # Ok(()) }
//! ```

#![cfg_attr(docsrs, feature(doc_cfg))]

/// The database's clock in SQL, as unix seconds (`numeric`): when the
/// statement started. Not `now()`, which stays at its transaction's start:
/// inside an application's transaction, open as long as the application
/// likes, a claim or lock that lapsed since it began must count as lapsed.
/// One time per statement, as with `now()`.
macro_rules! db_epoch {
    () => {
        "extract(epoch FROM statement_timestamp())"
    };
}

mod announce;
mod combine;
mod conn;
mod engine;
mod groups;
mod listen;
mod locks;
mod notify;
mod pool;
mod processes;
mod queues;
mod rates;
mod results;
mod schedules;
pub mod schema;
mod streams;
mod sweep;
#[cfg(any(test, feature = "testing"))]
#[doc(hidden)]
pub mod testing;
mod tls;
mod tx;
mod unnamed;
mod within;
mod writes;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use alkstore_core::queue::RescueSchedule;
use alkstore_core::url::mask_password;
use alkstore_core::{Clock, EngineState, Error, Limits, Result, Wake};
use deadpool_postgres::Pool;

pub use alkstore_core::url::PgPooler;
/// The `sqlx` this engine is built with (feature `sqlx`): open the
/// application's pool and transactions with this one, for
/// [`PgEngine::within_sqlx`].
#[cfg(feature = "sqlx")]
pub use sqlx;
/// The `tokio_postgres` this engine is built with: write your own transactions
/// (the outbox) against this one, so both sides use the same version.
pub use tokio_postgres;
pub use tx::PgTx;
pub use within::Within;
pub use writes::PgConn;

/// How to open a PostgreSQL store.
///
/// Through PgBouncer in transaction pooling mode, LISTENing straight to the
/// server (see `docs/pgbouncer.md`):
///
/// ```no_run
/// # async fn demo() -> alkstore_core::Result<()> {
/// use alkstore_postgres::{PgEngine, PgOptions, PgPooler};
/// let mut opts = PgOptions::new("postgres://app@bouncer:6432/app", "alkstore");
/// opts.pooler = PgPooler::Transaction;
/// opts.listen_conninfo = Some("postgres://app@db:5432/app".into());
/// let engine = PgEngine::open(opts).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct PgOptions {
    /// A libpq-style URL or key/value connection string. `sslmode`
    /// (`disable`, `prefer` (the default), `require`, `verify-ca`,
    /// `verify-full`) and `sslrootcert` (a PEM file of CA certificates to
    /// trust instead of the system's) mean what they mean to libpq; modes
    /// that need TLS need the `tls` feature (on by default).
    pub conninfo: String,
    /// The engine-owned schema (created if missing).
    pub schema: String,
    /// Replace the database clock (tests only).
    pub clock: Option<Arc<dyn Clock>>,
    /// Input limits.
    pub limits: Limits,
    /// Most pooled connections (default 32: sixteen concurrent enqueues,
    /// say from web requests, each have a connection, and commits that wait
    /// for the same WAL flush share it). Connections open as calls need
    /// them and close after 30 s unused (all but one). Besides the pool, an
    /// engine holds one connection to LISTEN (once a worker or subscriber
    /// waits); its wake-ups to other processes go through the pool. A
    /// process that only works queues needs few: `alk worker` opens at
    /// most two unless the URL says otherwise.
    pub pool_size: usize,
    /// Commit claims, acks and heartbeats with `synchronous_commit = off`
    /// (default true): they skip the WAL flush wait, which is most of a
    /// claim's latency. Only a server crash can lose such a commit, and then
    /// the job runs again (at-least-once, as when a worker dies); a worker
    /// whose claim was lost has its ack refused. Enqueues, retries, failures
    /// and dead-letter moves always wait for the flush.
    pub relaxed_commits: bool,
    /// Commit enqueues and publishes made outside a transaction with
    /// `synchronous_commit = off` too (default false: they wait for the WAL
    /// flush, so an acknowledged enqueue or publish survives a server
    /// crash). With true, a crash of the server (not of the application)
    /// can lose the last moment of acknowledged enqueues and publishes, at
    /// most `wal_writer_delay` times three; it never corrupts the store or
    /// reorders what stayed. Calls inside the application's transaction
    /// follow that transaction's own setting.
    pub relaxed_writes: bool,
    /// Create the schema and tables when missing (default true). With
    /// false, a schema alkstore never bootstrapped is [`Error::NoStore`] and
    /// nothing is created (read-only tools).
    pub create: bool,
    /// What sits between the engine and the server (default
    /// [`PgPooler::None`]). Through a transaction-mode pooler
    /// ([`PgPooler::Transaction`], PgBouncer's `pool_mode = transaction`)
    /// every statement runs unnamed in one round trip, with its parameter
    /// types learned once per engine, and claims and acks commit durably
    /// (`relaxed_commits` needs a session setting, which such a pooler
    /// would hand to other clients). LISTEN cannot work through such a
    /// pooler: give `listen_conninfo`, or workers and subscribers of other
    /// processes find new work by polling and notify/listen is refused.
    pub pooler: PgPooler,
    /// Where the LISTEN connection connects, straight to the server, when
    /// `conninfo` goes through a pooler (default: `conninfo`, unless
    /// `pooler` is [`PgPooler::Transaction`], where nothing then listens).
    pub listen_conninfo: Option<String>,
}

impl PgOptions {
    /// Defaults for `conninfo` and `schema`.
    pub fn new(conninfo: impl Into<String>, schema: impl Into<String>) -> Self {
        PgOptions {
            conninfo: conninfo.into(),
            schema: schema.into(),
            clock: None,
            limits: Limits::default(),
            pool_size: 32,
            relaxed_commits: true,
            relaxed_writes: false,
            create: true,
            pooler: PgPooler::None,
            listen_conninfo: None,
        }
    }

    /// Use this clock instead of the database's.
    #[must_use]
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }
}

/// A handle to an open PostgreSQL store; clones share the pool.
#[derive(Clone)]
pub struct PgEngine {
    inner: Arc<Inner>,
}

struct Inner {
    pool: Pool,
    /// Whether connections may be put in relaxed mode (`relaxed_commits`
    /// or `relaxed_writes`, not behind a transaction-mode pooler).
    relaxed: bool,
    /// Which pooled connections are in relaxed mode.
    modes: pool::CommitModes,
    sql: queues::sql::Sql,
    stream_sql: streams::sql::StreamSql,
    group_sql: groups::sql::GroupSql,
    lock_sql: locks::LockSql,
    process_sql: processes::ProcessSql,
    schedule_sql: schedules::ScheduleSql,
    rate_sql: String,
    result_sql: results::ResultSql,
    opts: PgOptions,
    /// When each queue's expired rows were last handed back.
    rescues: Mutex<RescueSchedule>,
    /// Set when a vacuum of the job table could not remove what it found
    /// (an old transaction holds the xmin horizon): `reclaim` waits.
    vacuum_stuck: Mutex<Option<sweep::VacuumStuck>>,
    /// Limits, the wake hub, and whether `Engine::close` was called.
    state: EngineState,
    /// Sends other processes the wake-ups of autocommit writes, after
    /// their commit.
    announce: announce::Announcer,
    /// Autocommit enqueues and publishes waiting to be written together.
    enqueues: Arc<queues::enqueue::EnqueueGroup>,
    publishes: Arc<streams::PublishGroup>,
    listener_started: AtomicBool,
    /// Whether the LISTEN connection is up (set by the listener task).
    listening: Arc<tokio::sync::watch::Sender<bool>>,
    /// How the LISTEN connection connects (`None`: nothing listens, behind
    /// a transaction-mode pooler with no direct URL).
    listen_connect: Option<(tokio_postgres::Config, tls::Connector)>,
    /// The parameter types of unnamed statements, behind a
    /// transaction-mode pooler (`None`: statements are prepared and kept).
    types: Option<Arc<unnamed::TypeCache>>,
    /// What the engine connects to, for connection errors (no password).
    target: String,
}

impl std::fmt::Debug for PgEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgEngine")
            .field("conninfo", &mask_password(&self.inner.opts.conninfo))
            .field("schema", &self.inner.opts.schema)
            .finish()
    }
}

impl PgEngine {
    /// Connect, bootstrap the schema, and return the engine. Unreachable
    /// servers, refused logins and failed TLS handshakes (including a
    /// certificate that `sslmode=verify-ca|verify-full` rejects) are
    /// [`Error::Connect`]; a bad connection string, `sslmode` or `sslrootcert`
    /// is [`Error::InvalidUrl`]; a schema written by a newer alkstore is
    /// [`Error::SchemaTooNew`].
    // Without the `tls` feature the connector is `NoTls`, which is `Copy`.
    #[cfg_attr(not(feature = "tls"), allow(clippy::clone_on_copy))]
    pub async fn open(opts: PgOptions) -> Result<Self> {
        schema::validate_schema_name(&opts.schema)?;
        let (mut config, connector) = tls::prepare(&opts.conninfo)?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(10));
        }
        if config.get_application_name().is_none() {
            config.application_name("alkstore");
        }
        let pooled = opts.pooler == PgPooler::Transaction;
        // Claims, acks and heartbeats commit on connections whose session
        // has `synchronous_commit = off` (see `PgOptions::relaxed_commits`),
        // so they stay single statements; not behind a transaction-mode
        // pooler, which would hand the setting to other clients.
        let relaxed = (opts.relaxed_commits || opts.relaxed_writes) && !pooled;
        let target = tls::target(&config);
        let listen_connect = match &opts.listen_conninfo {
            Some(direct) => {
                let (mut config, connector) = tls::prepare(direct)?;
                if config.get_application_name().is_none() {
                    config.application_name("alkstore");
                }
                Some((config, connector))
            }
            None if pooled => None,
            None => Some((config.clone(), connector.clone())),
        };
        let types = pooled.then(|| Arc::new(unnamed::TypeCache::default()));
        let pool = pool::build(config.clone(), connector.clone(), opts.pool_size, &target)?;
        pool::close_idle_connections(&pool);
        {
            let mut client = pool::checkout(&pool, &target).await?;
            if !opts.create && !schema::exists(&client, &opts.schema).await? {
                return Err(Error::NoStore {
                    url: mask_password(&opts.conninfo),
                    reason: format!("schema {:?} holds no alkstore tables", opts.schema),
                });
            }
            schema::bootstrap(&mut client, &opts.schema).await?;
        }
        // Wake-ups go through the pool: a NOTIFY is transactional, so a
        // pooler passes it on at its commit.
        let announce = announce::Announcer::new(
            pool.clone(),
            target.clone(),
            schema::notify_channel(&opts.schema),
            schema::stream_channel(&opts.schema),
            pooled,
        );
        let state = EngineState::new(opts.limits.clone());
        let engine = PgEngine {
            inner: Arc::new(Inner {
                sql: queues::sql::Sql::new(&opts.schema),
                stream_sql: streams::sql::StreamSql::new(&opts.schema),
                group_sql: groups::sql::GroupSql::new(&opts.schema),
                lock_sql: locks::LockSql::new(&opts.schema),
                process_sql: processes::ProcessSql::new(&opts.schema),
                schedule_sql: schedules::ScheduleSql::new(&opts.schema),
                rate_sql: rates::acquire_sql(&opts.schema),
                result_sql: results::ResultSql::new(&opts.schema),
                pool,
                relaxed,
                modes: pool::CommitModes::default(),
                opts,
                rescues: Mutex::new(RescueSchedule::default()),
                vacuum_stuck: Mutex::new(None),
                state,
                announce,
                enqueues: Arc::new(combine::Combiner::new(
                    combine::GROUP_RUNNERS,
                    combine::GROUP_ROWS,
                )),
                publishes: Arc::new(combine::Combiner::new(
                    combine::GROUP_RUNNERS,
                    combine::GROUP_ROWS,
                )),
                listener_started: AtomicBool::new(false),
                listening: Arc::new(tokio::sync::watch::channel(false).0),
                listen_connect,
                types,
                target,
            }),
        };
        Ok(engine)
    }

    /// Subscribe to wake hints: this engine's own writes hint at once, and a
    /// dedicated LISTEN connection (started on first use, reconnecting after
    /// failures) relays every other process's enqueues at their commit
    /// (none behind a transaction-mode pooler without `listen_conninfo`:
    /// see [`PgEngine::can_listen`]).
    pub fn wake_hints(&self) -> tokio::sync::broadcast::Receiver<Wake> {
        let rx = self.inner.state.wake_hub().subscribe();
        let listen = self.inner.listen_connect.as_ref();
        if let Some((config, connector)) =
            listen.filter(|_| !self.inner.listener_started.swap(true, Ordering::SeqCst))
        {
            let (config, connector) = (config.clone(), connector.clone());
            listen::spawn(
                config,
                connector,
                self.inner.opts.schema.clone(),
                Arc::downgrade(self.inner.state.wake_handle()),
                self.inner.listening.clone(),
            );
        }
        rx
    }

    /// Whether this engine has a LISTEN connection to start: not behind a
    /// transaction-mode pooler without a direct `listen_conninfo`, where
    /// other processes' writes are found by polling.
    pub fn can_listen(&self) -> bool {
        self.inner.listen_connect.is_some()
    }

    /// The engine-owned schema.
    pub fn schema(&self) -> &str {
        &self.inner.opts.schema
    }

    /// Delete this store: drop its schema and everything in it (jobs, dead
    /// letters, kept completions). For throw-away stores (benchmarks,
    /// tests); the handle must not be used afterwards.
    pub async fn drop_store(&self) -> Result<()> {
        let client = self.client().await?;
        client
            .batch_execute(&format!(
                "DROP SCHEMA IF EXISTS {} CASCADE",
                schema::quote_identifier(self.schema())
            ))
            .await
            .map_err(db("drop store"))
    }

    /// A pooled connection, for tests and tools that need raw SQL.
    pub async fn client(&self) -> Result<deadpool_postgres::Object> {
        self.client_relaxed_if(false).await
    }

    /// A connection whose commits skip the WAL-flush wait, when
    /// `relaxed_commits` is on (otherwise an ordinary one): for claims,
    /// acks and heartbeats.
    pub(crate) async fn relaxed_client(&self) -> Result<deadpool_postgres::Object> {
        self.client_relaxed_if(self.inner.opts.relaxed_commits)
            .await
    }

    /// The connection an enqueue or publish outside a transaction commits
    /// on: one that skips the WAL-flush wait when `relaxed_writes` is on,
    /// otherwise an ordinary one.
    pub async fn write_client(&self) -> Result<deadpool_postgres::Object> {
        self.client_relaxed_if(self.inner.opts.relaxed_writes).await
    }

    async fn client_relaxed_if(&self, relaxed: bool) -> Result<deadpool_postgres::Object> {
        let client = pool::checkout(&self.inner.pool, &self.inner.target).await?;
        if self.inner.relaxed {
            self.inner
                .modes
                .set(&client, relaxed, &self.inner.target)
                .await?;
        }
        Ok(client)
    }

    /// The injected clock's time, or `None` to use the database's.
    fn now_override(&self) -> Option<i64> {
        self.inner.opts.clock.as_ref().map(|c| c.now())
    }

    /// The injected clock in unix ms, or `None` for the database's.
    fn now_ms_override(&self) -> Option<i64> {
        self.inner.opts.clock.as_ref().map(|c| c.now_ms())
    }
}

/// Map a tokio-postgres error to [`Error::Database`] for operation `op`.
/// Whether a server error means the session is gone (see [`db`]).
fn is_gone(code: &tokio_postgres::error::SqlState) -> bool {
    use tokio_postgres::error::SqlState;
    code.code().starts_with("08")
        || [
            SqlState::ADMIN_SHUTDOWN,
            SqlState::CRASH_SHUTDOWN,
            SqlState::CANNOT_CONNECT_NOW,
        ]
        .contains(code)
}

pub(crate) fn db(op: &'static str) -> impl Fn(tokio_postgres::Error) -> Error {
    move |e| {
        if e.is_closed() {
            return Error::connect("the database", e);
        }
        // The driver's own text for a server error is just "db error": say
        // what the server said, and its SQLSTATE.
        match e.as_db_error() {
            // The server ending the session (shutdown, restart, a
            // terminated backend, a failover) or refusing it for now: the
            // connection is gone, as when it is closed, and a new one may
            // work (class 08, and admin_shutdown, crash_shutdown,
            // cannot_connect_now).
            Some(d) if is_gone(d.code()) => Error::connect(
                "the database",
                format!("{} (SQLSTATE {})", d.message(), d.code().code()),
            ),
            // disk_full: the server could not extend a file.
            Some(d) if d.code() == &tokio_postgres::error::SqlState::DISK_FULL => {
                Error::StorageFull { op }
            }
            Some(d) => Error::database(
                op,
                format!("{} (SQLSTATE {})", d.message(), d.code().code()),
            ),
            None => Error::database(op, e),
        }
    }
}
