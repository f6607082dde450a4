//! The embedded SQLite engine of alkstore.
//!
//! One file, no server. Every write goes through **one write connection**
//! with group commit: callers queue their commands, and whichever caller
//! finds the connection free leads on its own thread, running every queued
//! command in one `BEGIN IMMEDIATE` transaction, each inside its own
//! savepoint so one failing command never undoes its neighbours (see
//! `writer/`). Reads run on a small pool of read connections beside it;
//! WAL lets them proceed while the writer commits. Tables are prefixed
//! `__alkstore_` so they can share a database file with the application's
//! own tables; the schema comes from the numbered files in `migrations/`.
//!
//! Times (claims and their expiry, lock TTLs, lease expiry, schedules,
//! rate windows) come from the engine's clock: the system clock of the
//! process making the call (unless a test injects one). Every process on a
//! file reads the same clock because they share its host (WAL works only
//! between processes of one host); PostgreSQL uses
//! the database server's clock instead, since its workers run on many
//! hosts.
//!
//! The application's own transaction ([`Transaction`](alkstore_core::Transaction)
//! over [`SqliteTx`]) runs every primitive's writes with the application's
//! SQL on a connection of its own that holds the write lock until it ends;
//! [`SqliteEngine::within`] runs the same calls on a `rusqlite`
//! transaction the application opened itself.
//!
//! # Applications on sqlx
//!
//! PostgreSQL runs these calls on an application's own sqlx transaction
//! (`PgEngine::within_sqlx`, feature `sqlx`); SQLite cannot. sqlx 0.8's
//! SQLite driver needs `libsqlite3-sys` 0.30, while this crate's
//! `rusqlite` 0.37 needs 0.35, and Cargo lets only one crate that links
//! the native `sqlite3` library into a build (its `links` rule): a
//! project depending on both fails to resolve, before anything compiles.
//! (This includes depending on the `alkstore` crate with its default
//! features, which bring this engine in; sqlx with only its PostgreSQL
//! driver is fine.) What to do instead:
//!
//! - on SQLite, write the application's data that must commit with the
//!   store through `rusqlite`: in the store's own transaction
//!   ([`Transaction`](alkstore_core::Transaction) over [`SqliteTx`], whose
//!   [`SqliteTx::conn`] is the connection inside it), or in a `rusqlite`
//!   transaction of the application's with [`SqliteEngine::within`], with
//!   this crate's re-exported [`rusqlite`] (so one SQLite is linked);
//! - keep a store on PostgreSQL, with `alkstore` built with
//!   `default-features = false, features = ["postgres", "sqlx"]`, and use
//!   sqlx's PostgreSQL driver;
//! - sqlx 0.9's SQLite driver accepts `libsqlite3-sys` 0.30 up to 0.40, so
//!   it resolves together with `rusqlite` 0.37 on one `libsqlite3-sys`
//!   (0.35); a `within` for its connections would be possible there, and
//!   is not built.
//!
//! `:memory:` opens an in-memory store instead: a database of this process
//! alone that every connection of the engine shares (SQLite's `memdb`
//! VFS) and that no other `open` sees; see [`SqliteOptions::new`].
//!
//! Commits by other processes wake workers through `PRAGMA data_version`:
//! on Linux a watcher thread sleeps until inotify reports a write to the
//! `-wal` file; elsewhere it polls the pragma every millisecond while anyone
//! listens.
//!
//! ```no_run
//! # async fn demo() -> alkstore_core::Result<()> {
//! use alkstore_core::{NewJob, Writes};
//! use alkstore_sqlite::{SqliteEngine, SqliteOptions};
//! let engine = SqliteEngine::open(SqliteOptions::new("app.db"))?;
//! engine.job_enqueue(vec![NewJob::new("emails", b"hello".to_vec())]).await?;
//! # Ok(()) }
//! ```

mod connection;
mod engine;
mod groups;
mod locks;
mod notify;
mod outbox;
mod processes;
mod queues;
mod rates;
mod results;
mod schedules;
mod schema;
mod streams;
mod sweep;
mod tx;
mod watch;
mod writer;
mod writes;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use alkstore_core::{Clock, EngineState, Error, Limits, Result, SystemClock, Wake};
use connection::{is_in_memory, memory_uri, open_connection, MEMORY};
use rusqlite::Connection;

pub use outbox::Within;
/// The `rusqlite` this engine is built with: write your own transactions
/// (the outbox) against this one, so both sides use the same version.
pub use rusqlite;
pub use schema::SCHEMA_VERSION;
pub use tx::SqliteTx;

/// How to open a SQLite store.
#[derive(Debug, Clone)]
pub struct SqliteOptions {
    /// The database file (created if missing).
    pub path: PathBuf,
    /// `PRAGMA synchronous=FULL`: fsync every commit so it survives power
    /// loss. The default, `NORMAL` in WAL mode, survives process crashes and
    /// kill -9 but may lose the last commits on power loss.
    pub synchronous_full: bool,
    /// The clock (default: the system clock).
    pub clock: Option<Arc<dyn Clock>>,
    /// Input limits.
    pub limits: Limits,
    /// How long a write waits for a lock held by another connection or
    /// process before failing with [`Error::Busy`] (default 10 s).
    pub busy_timeout: Duration,
    /// Create the file and tables when missing (default true). With false,
    /// opening a file that is not an alkstore store fails with
    /// [`Error::NoStore`] and creates nothing (read-only tools).
    pub create: bool,
}

impl SqliteOptions {
    /// Defaults for the file at `path`.
    ///
    /// The path `:memory:` (`sqlite://:memory:` as a store URL) opens an
    /// in-memory store instead, for tests and throw-away work: nothing is
    /// written to disk, and it vanishes when the last connection to it
    /// closes, that is when the last clone of the engine (or of the
    /// `Store` over it) is dropped (its watcher thread, if a worker or
    /// subscriber started one, lets go within about 50 ms). Each `open`
    /// of `:memory:` is a database of its own, seen only through that
    /// engine and its clones, in this process only. It runs without WAL (SQLite
    /// cannot keep a WAL in memory): reads wait while a write transaction
    /// is open, so a transaction on it (a [`SqliteTx`], or one of your own
    /// opened with [`SqliteEngine::path`], which names it as a URI) holds
    /// up every reader until it ends. It holds at most 1 GiB (SQLite's `memdb`
    /// default; past it writes fail). `synchronous` does not apply. Other in-memory
    /// or URI forms (`file:…`, an empty path) are refused.
    pub fn new(path: impl AsRef<Path>) -> Self {
        SqliteOptions {
            path: path.as_ref().to_path_buf(),
            synchronous_full: false,
            clock: None,
            limits: Limits::default(),
            busy_timeout: DEFAULT_BUSY_TIMEOUT,
            create: true,
        }
    }

    /// Use this clock instead of the system's.
    #[must_use]
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }
}

/// A handle to an open SQLite store; clones share the writer and readers.
#[derive(Clone)]
pub struct SqliteEngine {
    inner: Arc<Inner>,
}

struct Inner {
    writer: Arc<writer::Writer>,
    readers: Mutex<Vec<Connection>>,
    opts: SqliteOptions,
    clock: Arc<dyn Clock>,
    /// Limits, the wake hub, and whether `Engine::close` was called.
    state: EngineState,
    watcher_started: AtomicBool,
    /// How many jobs each queue's last claim found.
    claim_sizes: queues::claim::ClaimSizes,
    /// The connection transactions of the application's run on (see
    /// `tx.rs`).
    tx_home: tx::TxHome,
}

impl std::fmt::Debug for SqliteEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteEngine")
            .field("path", &self.inner.opts.path)
            .finish()
    }
}

impl SqliteEngine {
    /// Open (and create or migrate) the store. Fails with
    /// [`Error::SchemaTooNew`] when a newer alkstore wrote the file.
    pub fn open(mut opts: SqliteOptions) -> Result<Self> {
        let shown = opts.path.display().to_string();
        let in_memory = shown == MEMORY;
        if in_memory {
            if !opts.create {
                return Err(Error::NoStore {
                    url: format!("sqlite://{MEMORY}"),
                    reason: "a new in-memory database holds no store until one is created".into(),
                });
            }
            opts.path = PathBuf::from(memory_uri());
        } else if is_in_memory(&shown) {
            // Every connection (writer, readers, watcher) would open its own
            // empty database.
            return Err(Error::invalid(
                "sqlite path",
                "in-memory databases other than \":memory:\" are not supported (each connection would see its own empty database); use \":memory:\" or a file",
            ));
        }
        if !opts.create {
            if !opts.path.exists() {
                return Err(Error::NoStore {
                    url: format!("sqlite://{shown}"),
                    reason: "the file does not exist".into(),
                });
            }
            let conn = open_connection(&opts)?;
            let version = schema::recorded_version(&conn).map_err(db("open"))?;
            if version.is_none() {
                return Err(Error::NoStore {
                    url: format!("sqlite://{shown}"),
                    reason: "the file holds no alkstore tables".into(),
                });
            }
        }
        let conn = open_connection(&opts)?;
        // Later connections (readers, the watcher) and the watcher's `-wal`
        // name must mean this file even if the working directory changes or
        // the path is a symlink.
        let canonical = match in_memory {
            true => None,
            false => std::fs::canonicalize(&opts.path).ok(),
        };
        if let Some(canonical) = canonical {
            opts.path = canonical;
        }
        schema::migrate(&conn)?;
        let clock: Arc<dyn Clock> = opts.clock.clone().unwrap_or_else(|| Arc::new(SystemClock));
        let state = EngineState::new(opts.limits.clone());
        let writer = writer::Writer::new(
            conn,
            clock.clone(),
            opts.busy_timeout,
            state.wake_handle().clone(),
        );
        Ok(SqliteEngine {
            inner: Arc::new(Inner {
                writer,
                readers: Mutex::new(Vec::new()),
                opts,
                clock,
                state,
                watcher_started: AtomicBool::new(false),
                claim_sizes: Default::default(),
                tx_home: Default::default(),
            }),
        })
    }

    /// Subscribe to wake hints. Writes through this engine hint at once;
    /// commits by other processes (or the caller's own connections) are seen
    /// by a watcher thread on `PRAGMA data_version` (woken by inotify on
    /// Linux, polling every millisecond elsewhere) while anyone listens.
    pub fn wake_hints(&self) -> tokio::sync::broadcast::Receiver<Wake> {
        let rx = self.inner.state.wake_hub().subscribe();
        if !self.inner.watcher_started.swap(true, Ordering::SeqCst) {
            let hub = Arc::downgrade(self.inner.state.wake_handle());
            let opts = self.inner.opts.clone();
            let activity = self.inner.writer.activity();
            let spawned = std::thread::Builder::new()
                .name("alkstore-sqlite-watch".into())
                .spawn(move || watch::watch_data_version(opts, hub, activity));
            if let Err(e) = spawned {
                tracing::warn!(error = %e, "cannot start the data_version watcher; relying on polls");
            }
        }
        rx
    }

    /// Group commits so far: `(transactions committed, write commands run
    /// in them)`. Commands per transaction above 1 is group commit at work.
    pub fn commit_stats(&self) -> (u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        let w = &self.inner.writer;
        (w.commits.load(Relaxed), w.commands.load(Relaxed))
    }

    /// Time the writer has spent running group transactions (begin to
    /// commit) so far: beside wall time, how busy the one writer was.
    pub fn writer_busy(&self) -> std::time::Duration {
        use std::sync::atomic::Ordering::Relaxed;
        std::time::Duration::from_nanos(self.inner.writer.busy_ns.load(Relaxed))
    }

    /// The database file; for an in-memory store, the URI that names its
    /// database (`file:/alkstore-mem-…?vfs=memdb`: open it with
    /// `SQLITE_OPEN_URI`, as rusqlite's `Connection::open` does).
    pub fn path(&self) -> &Path {
        &self.inner.opts.path
    }

    /// The engine's current time (unix seconds).
    pub fn now(&self) -> i64 {
        self.inner.clock.now()
    }

    /// Run `f` on a pooled read connection. Reads are short index lookups,
    /// so they run on the caller's thread: a hand-off to a blocking pool would
    /// cost more than the read.
    async fn read<T, F>(&self, _op: &'static str, f: F) -> Result<T>
    where
        F: FnOnce(&Connection) -> Result<T>,
    {
        let pooled = self.inner.readers.lock().ok().and_then(|mut r| r.pop());
        let conn = match pooled {
            Some(c) => c,
            None => open_connection(&self.inner.opts)?,
        };
        let out = f(&conn).map_err(busy_waited(self.inner.opts.busy_timeout));
        if let Ok(mut r) = self.inner.readers.lock() {
            if r.len() < 8 {
                r.push(conn);
            }
        }
        out
    }
}

/// Map a rusqlite error to [`Error::Database`] for operation `op`, or to
/// [`Error::Busy`] when another connection held a lock too long. The
/// statements that map it do not know the store's busy timeout: the busy
/// error says the default until the call's way out (the writer, a read)
/// puts in the configured one with [`busy_waited`].
pub(crate) fn db(op: &'static str) -> impl Fn(rusqlite::Error) -> Error {
    move |e| {
        if is_busy(&e) {
            Error::Busy {
                op,
                waited: DEFAULT_BUSY_TIMEOUT,
            }
        } else if is_full(&e) {
            Error::StorageFull { op }
        } else {
            Error::database(op, e)
        }
    }
}

/// A busy error with how long the call really waited: `timeout`, the
/// store's busy timeout. Other errors pass unchanged.
pub(crate) fn busy_waited(timeout: Duration) -> impl Fn(Error) -> Error {
    move |e| match e {
        Error::Busy { op, .. } => Error::Busy {
            op,
            waited: timeout,
        },
        e => e,
    }
}

/// The default busy timeout (see [`SqliteOptions::busy_timeout`]).
const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Whether the disk (or `max_page_count`) is full.
pub(crate) fn is_full(e: &rusqlite::Error) -> bool {
    e.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull)
}

/// Whether SQLite gave up waiting for another connection's lock.
pub(crate) fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}
