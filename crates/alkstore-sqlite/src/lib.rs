//! The embedded SQLite engine of alkstore.
//!
//! One file, no server. Every write goes through **one write connection**
//! with group commit: callers queue their commands, and whichever caller
//! finds the connection free leads on its own thread, running every queued
//! command in one `BEGIN IMMEDIATE` transaction, each inside its own
//! savepoint so one failing command never undoes its neighbours (see
//! `writer.rs`). Reads run on a small pool of read connections beside it;
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
//! use alkstore_core::{NewJob, QueueEngine};
//! use alkstore_sqlite::{SqliteEngine, SqliteOptions};
//! let engine = SqliteEngine::open(SqliteOptions::new("app.db"))?;
//! engine.job_enqueue(vec![NewJob::new("emails", b"hello".to_vec())]).await?;
//! # Ok(()) }
//! ```

mod groups;
mod locks;
mod notify;
mod outbox;
mod queues;
mod rates;
mod results;
mod schedules;
mod schema;
mod streams;
mod tx;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use alkstore_core::{Clock, Error, Limits, Result, SystemClock, Wake, WakeHub};
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
            busy_timeout: Duration::from_secs(DEFAULT_BUSY_TIMEOUT_S),
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
    wake: Arc<WakeHub>,
    watcher_started: AtomicBool,
    /// Set by `Engine::close`: every later call is `Error::Closed`.
    closed: AtomicBool,
    /// How many jobs each queue's last claim found.
    claim_sizes: queues::ClaimSizes,
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
        let wake = Arc::new(WakeHub::default());
        let writer = writer::Writer::new(conn, clock.clone(), opts.busy_timeout, wake.clone());
        Ok(SqliteEngine {
            inner: Arc::new(Inner {
                writer,
                readers: Mutex::new(Vec::new()),
                opts,
                clock,
                wake,
                watcher_started: AtomicBool::new(false),
                closed: AtomicBool::new(false),
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
        let rx = self.inner.wake.subscribe();
        if !self.inner.watcher_started.swap(true, Ordering::SeqCst) {
            let hub = Arc::downgrade(&self.inner.wake);
            let opts = self.inner.opts.clone();
            let activity = self.inner.writer.activity();
            let spawned = std::thread::Builder::new()
                .name("alkstore-sqlite-watch".into())
                .spawn(move || watch_data_version(opts, hub, activity));
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
        let out = f(&conn);
        if let Ok(mut r) = self.inner.readers.lock() {
            if r.len() < 8 {
                r.push(conn);
            }
        }
        out
    }
}

/// Watch for commits by other connections and hint every listener. Ends
/// when the engine is dropped.
///
/// `PRAGMA data_version` changes whenever another connection commits. On
/// Linux the watcher sleeps until inotify reports a write to the `-wal` file
/// (no CPU while idle); elsewhere, or if inotify is unavailable, it polls the
/// pragma every millisecond while anyone listens. It never looks while a
/// group of this engine's writer runs ([`writer::GroupActivity`]).
fn watch_data_version(
    opts: SqliteOptions,
    hub: std::sync::Weak<WakeHub>,
    activity: Arc<writer::GroupActivity>,
) {
    let conn = match open_connection(&opts) {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(error = %e, "data_version watcher cannot open the database");
            return;
        }
    };
    let mut last = data_version(&conn);
    // An in-memory store has no `-wal` file to watch: poll.
    #[cfg(target_os = "linux")]
    if !is_memory_uri(&opts.path) {
        match inotify_watch::run(&conn, &opts, &hub, &activity, &mut last) {
            Ok(()) => return,
            Err(e) => {
                tracing::info!(error = %e, "inotify unavailable; polling data_version instead")
            }
        }
    }
    loop {
        let Some(hub) = hub.upgrade() else { return };
        if !hub.has_listeners() {
            drop(hub);
            std::thread::sleep(Duration::from_millis(50));
            continue;
        }
        activity.wait_for_end(GROUP_WAIT_LIMIT);
        changed(&conn, &mut last, &hub);
        drop(hub);
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Hint everyone when `data_version` moved; true when it did.
fn changed(conn: &Connection, last: &mut Option<i64>, hub: &WakeHub) -> bool {
    let now = data_version(conn);
    if now != *last {
        *last = now;
        hub.all();
        return true;
    }
    false
}

/// Longest the watcher waits for a group of this engine's writer to end
/// before looking anyway (it wakes at the end; this bounds a lost wake-up).
const GROUP_WAIT_LIMIT: Duration = Duration::from_millis(50);

/// `PRAGMA data_version` on `conn` (`None` if it could not be read): it
/// changes whenever another connection commits.
pub(crate) fn data_version(conn: &Connection) -> Option<i64> {
    conn.prepare_cached("PRAGMA data_version")
        .and_then(|mut s| s.query_row([], |r| r.get(0)))
        .ok()
}

#[cfg(target_os = "linux")]
mod inotify_watch {
    use std::ffi::OsString;
    use std::io::ErrorKind;
    use std::num::NonZeroU64;
    use std::path::Path;
    use std::sync::Weak;
    use std::time::{Duration, Instant};

    use alkstore_core::WakeHub;
    use inotify::{Inotify, WatchMask};
    use rusqlite::Connection;
    use rustix::event::{PollFd, PollFlags, Timespec};

    use super::{changed, SqliteOptions, GROUP_WAIT_LIMIT};
    use crate::writer::GroupActivity;

    /// Longest wait without an event before looking anyway (a safety net for
    /// file systems that do not report writes).
    const SAFETY_POLL: Duration = Duration::from_millis(250);

    /// Pauses between looks after a WAL write: every 0.05 ms for the first
    /// 1.5 ms (a commit without fsync is visible well within it: a woken
    /// worker's p99 stays under 2 ms), then coarser (about 50 ms in all,
    /// for commits that fsync first). Blocking sleeps, on a timer slack of
    /// 1 µs (see `run`).
    const RECHECK_PAUSES_US: [u64; 45] = [
        50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50,
        50, 50, 50, 50, 50, 50, 50, 200, 200, 200, 200, 200, 500, 500, 1_000, 2_000, 3_000, 5_000,
        8_000, 10_000, 10_000, 10_000,
    ];

    /// The directory's inotify watch, and which events are writes to the WAL.
    struct WalEvents {
        inotify: Inotify,
        wal: OsString,
        buffer: [u8; 4096],
    }

    impl WalEvents {
        /// Wait up to `timeout` for events; then read them all. Whether one
        /// was a write to the WAL, or the queue overflowed (look then too).
        fn wait(&mut self, timeout: Duration) -> std::io::Result<bool> {
            let timeout = Timespec::try_from(timeout).unwrap_or(Timespec {
                tv_sec: 1,
                tv_nsec: 0,
            });
            let mut fds = [PollFd::new(&self.inotify, PollFlags::IN)];
            match rustix::event::poll(&mut fds, Some(&timeout)) {
                Ok(0) => return Ok(false),
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => return Ok(false),
                Err(e) => return Err(e.into()),
            }
            let mut wrote = false;
            loop {
                match self.inotify.read_events(&mut self.buffer) {
                    Ok(events) => {
                        for e in events {
                            wrote |= match e.name {
                                Some(name) => name == self.wal.as_os_str(),
                                None => true,
                            };
                        }
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(wrote),
                    Err(e) => return Err(e),
                }
            }
        }
    }

    pub(super) fn run(
        conn: &Connection,
        opts: &SqliteOptions,
        hub: &Weak<WakeHub>,
        activity: &GroupActivity,
        last: &mut Option<i64>,
    ) -> std::io::Result<()> {
        // The pauses below are tens of microseconds: without this, Linux
        // stretches each sleep by up to 50 µs (the default timer slack).
        let _ = rustix::thread::set_current_timer_slack(NonZeroU64::new(1_000));
        let inotify = Inotify::init()?;
        let dir = opts
            .path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        inotify
            .watches()
            .add(dir, WatchMask::MODIFY | WatchMask::CREATE)?;
        let mut wal = OsString::from(opts.path.file_name().unwrap_or_default());
        wal.push("-wal");
        let mut events = WalEvents {
            inotify,
            wal,
            buffer: [0u8; 4096],
        };
        let mut safety_at = Instant::now() + SAFETY_POLL;
        loop {
            let wrote = events.wait(safety_at.saturating_duration_since(Instant::now()))?;
            let now = Instant::now();
            let tick = now >= safety_at;
            if tick {
                safety_at = now + SAFETY_POLL;
            }
            let Some(h) = hub.upgrade() else {
                return Ok(());
            };
            if !h.has_listeners() || !(tick || wrote) {
                continue;
            }
            if !wrote {
                activity.wait_for_end(GROUP_WAIT_LIMIT);
                changed(conn, last, &h);
                continue;
            }
            // The WAL write comes before the commit becomes visible (the
            // shared-memory index is updated after it, and with
            // synchronous=full after an fsync): look, then again after each
            // pause, for up to ~50 ms. (Writes meanwhile wait in the queue,
            // and the next turn of the outer loop looks again.)
            let begun = activity.begun();
            for pause_us in RECHECK_PAUSES_US {
                // The write may be a group of our own writer's: no other
                // connection commits until it ends.
                activity.wait_for_end(GROUP_WAIT_LIMIT);
                // A group began since the write: it looked at its start.
                if activity.begun() != begun {
                    break;
                }
                if changed(conn, last, &h) {
                    break;
                }
                std::thread::sleep(Duration::from_micros(pause_us));
            }
        }
    }
}

/// The path that asks for an in-memory store (see [`SqliteOptions::new`]).
const MEMORY: &str = ":memory:";

/// A name for a new in-memory database, unique in this process: SQLite's
/// `memdb` VFS shares a database between every connection that opens the
/// same name starting with `/`, and frees it when the last one closes.
fn memory_uri() -> String {
    use std::sync::atomic::AtomicU64;
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!(
        "file:/alkstore-mem-{}-{}?vfs=memdb",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Whether `path` is a name [`memory_uri`] made.
fn is_memory_uri(path: &Path) -> bool {
    path.to_str()
        .is_some_and(|p| p.starts_with("file:/alkstore-mem-") && p.ends_with("?vfs=memdb"))
}

/// Whether a SQLite path names an in-memory database.
fn is_in_memory(path: &str) -> bool {
    path == ":memory:"
        || path.is_empty()
        || (path.starts_with("file:")
            && (path.contains("mode=memory") || path.contains(":memory:")))
}

/// Open a connection with alkstore's pragmas (creating the file only when
/// `opts.create`).
pub(crate) fn open_connection(opts: &SqliteOptions) -> Result<Connection> {
    use rusqlite::OpenFlags;
    let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    if opts.create {
        flags |= OpenFlags::SQLITE_OPEN_CREATE;
    }
    let target = || format!("SQLite file {}", opts.path.display());
    let conn =
        Connection::open_with_flags(&opts.path, flags).map_err(|e| Error::connect(target(), e))?;
    let sync = if opts.synchronous_full {
        "FULL"
    } else {
        "NORMAL"
    };
    let busy_ms = opts.busy_timeout.as_millis().min(u128::from(u32::MAX));
    // journal_mode=WAL: readers never block the writer nor it them, and a
    //   commit is one append to the -wal file.
    // synchronous=NORMAL (or FULL): in WAL mode NORMAL survives a process
    //   crash or kill -9 and skips the fsync per commit; FULL also survives
    //   power loss (`?synchronous=full`).
    // busy_timeout: how long to wait for another process's lock before
    //   `Error::Busy` (`SqliteOptions::busy_timeout`, 10 s).
    // temp_store=MEMORY: sorts and temporary b-trees of claims and stats
    //   never touch disk.
    // wal_autocheckpoint=10000 pages (~40 MiB): fewer, larger checkpoints
    //   under a steady write load than the default 1,000.
    // cache_size=-65536 (64 MiB per connection): the claim index and hot
    //   rows of a large backlog stay in memory.
    // In memory (no WAL there): the rollback journal in memory too, and
    // nothing to sync.
    let journal = if is_memory_uri(&opts.path) {
        "journal_mode=MEMORY; PRAGMA synchronous=OFF"
    } else {
        &format!("journal_mode=WAL; PRAGMA synchronous={sync}")
    };
    conn.execute_batch(&format!(
        "PRAGMA {journal}; PRAGMA busy_timeout={busy_ms}; PRAGMA temp_store=MEMORY; PRAGMA wal_autocheckpoint=10000; PRAGMA cache_size=-65536;"
    ))
    .map_err(|e| Error::connect(target(), e))?;
    groups::register_functions(&conn)
        .map_err(|e| Error::connect(target(), format!("registering SQL functions: {e}")))?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(conn)
}

/// Map a rusqlite error to [`Error::Database`] for operation `op`, or to
/// [`Error::Busy`] when another connection held a lock too long.
pub(crate) fn db(op: &'static str) -> impl Fn(rusqlite::Error) -> Error {
    move |e| {
        if is_busy(&e) {
            Error::Busy {
                op,
                waited_s: DEFAULT_BUSY_TIMEOUT_S,
            }
        } else {
            Error::database(op, e)
        }
    }
}

/// The default busy timeout, in seconds (see [`SqliteOptions::busy_timeout`]).
const DEFAULT_BUSY_TIMEOUT_S: u64 = 10;

/// Whether SQLite gave up waiting for another connection's lock.
pub(crate) fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}
