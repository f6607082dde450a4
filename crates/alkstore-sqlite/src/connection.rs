//! Connections to the store's file: opening one with alkstore's PRAGMAs,
//! the names of in-memory stores, and small statements every connection
//! runs (`PRAGMA data_version`, parameterless cached statements). Shared
//! by the writer, the readers, the watcher and transactions.

use std::path::Path;
use std::sync::atomic::Ordering;

use alkstore_core::{Error, Result};
use rusqlite::Connection;

use crate::{groups, SqliteOptions};

/// The path that asks for an in-memory store (see [`SqliteOptions::new`]).
pub(crate) const MEMORY: &str = ":memory:";

/// A name for a new in-memory database, unique in this process: SQLite's
/// `memdb` VFS shares a database between every connection that opens the
/// same name starting with `/`, and frees it when the last one closes.
pub(crate) fn memory_uri() -> String {
    use std::sync::atomic::AtomicU64;
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!(
        "file:/alkstore-mem-{}-{}?vfs=memdb",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Whether `path` is a name [`memory_uri`] made.
pub(crate) fn is_memory_uri(path: &Path) -> bool {
    path.to_str()
        .is_some_and(|p| p.starts_with("file:/alkstore-mem-") && p.ends_with("?vfs=memdb"))
}

/// Whether a SQLite path names an in-memory database.
pub(crate) fn is_in_memory(path: &str) -> bool {
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
    groups::hash::register_functions(&conn)
        .map_err(|e| Error::connect(target(), format!("registering SQL functions: {e}")))?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(conn)
}

/// `PRAGMA data_version` on `conn` (`None` if it could not be read): it
/// changes whenever another connection commits.
pub(crate) fn data_version(conn: &Connection) -> Option<i64> {
    conn.prepare_cached("PRAGMA data_version")
        .and_then(|mut s| s.query_row([], |r| r.get(0)))
        .ok()
}

/// Run `sql` (a statement without parameters) on `conn`.
pub(crate) fn run_cached(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)
        .and_then(|mut s| s.execute([]))
        .map(drop)
}

/// Run `sql` on `conn` without waiting for another connection's lock
/// (`SQLITE_BUSY` at once), then give `conn` its `busy_timeout` back: for
/// a runtime thread, which must not sleep in SQLite's busy handler (see the
/// `writer` module's documentation).
pub(crate) fn without_waiting(
    conn: &Connection,
    busy_timeout: std::time::Duration,
    sql: &str,
) -> rusqlite::Result<()> {
    conn.busy_timeout(std::time::Duration::ZERO)?;
    let ran = run_cached(conn, sql);
    conn.busy_timeout(busy_timeout)?;
    ran
}
