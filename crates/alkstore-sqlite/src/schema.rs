//! Table definitions and the recorded schema version.

use alkstore_core::{Error, Result};
use rusqlite::{Connection, OptionalExtension};

/// The schema version this build writes and understands.
#[allow(clippy::cast_possible_wrap)] // a handful of migrations
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The migrations, in order: migration `n` (1-based) takes the schema from
/// version `n - 1` to `n`. Each new area adds a file; nothing else changes.
const MIGRATIONS: &[&str] = &[
    include_str!("../migrations/001_queues.sql"),
    include_str!("../migrations/002_queue_tokens_cancel_done.sql"),
    include_str!("../migrations/003_streams.sql"),
    include_str!("../migrations/004_groups.sql"),
    include_str!("../migrations/005_locks.sql"),
    include_str!("../migrations/006_schedules.sql"),
    include_str!("../migrations/007_queue_pause.sql"),
    include_str!("../migrations/008_rate_limits.sql"),
    include_str!("../migrations/009_notify.sql"),
    include_str!("../migrations/010_job_results.sql"),
    include_str!("../migrations/011_event_key_hash.sql"),
    include_str!("../migrations/012_queue_throughput.sql"),
    include_str!("../migrations/013_job_ids.sql"),
    include_str!("../migrations/014_processes.sql"),
    include_str!("../migrations/015_schedule_fires.sql"),
    include_str!("../migrations/016_group_handoffs.sql"),
    include_str!("../migrations/017_queue_depth.sql"),
    include_str!("../migrations/018_job_tags_meta.sql"),
];

/// Read the recorded schema version (`None` for a file alkstore never wrote).
pub(crate) fn recorded_version(conn: &Connection) -> rusqlite::Result<Option<i64>> {
    let has_meta: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '__alkstore_meta')",
        [],
        |r| r.get(0),
    )?;
    if !has_meta {
        return Ok(None);
    }
    conn.query_row(
        "SELECT value FROM __alkstore_meta WHERE key = 'schema_version'",
        [],
        |r| r.get(0),
    )
    .optional()
}

/// Create or upgrade the tables; refuse a file written by a newer version.
/// Runs inside one `BEGIN IMMEDIATE`, so processes opening the same file at
/// once migrate it exactly once.
pub(crate) fn migrate(conn: &Connection) -> Result<()> {
    let op = "schema migration";
    // A current store needs no write lock: opening must not queue behind
    // (or block) the application's writers.
    let found = recorded_version(conn).map_err(crate::db(op))?;
    if found == Some(SCHEMA_VERSION) {
        return Ok(());
    }
    conn.execute_batch("BEGIN IMMEDIATE")
        .map_err(|e| Error::database(op, e))?;
    let result = (|| {
        let found = recorded_version(conn).map_err(|e| Error::database(op, e))?;
        let from = found.unwrap_or(0);
        if from > SCHEMA_VERSION {
            return Err(Error::SchemaTooNew {
                found: from,
                supported: SCHEMA_VERSION,
            });
        }
        if from == SCHEMA_VERSION {
            return Ok(());
        }
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS __alkstore_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);",
        )
        .map_err(|e| Error::database(op, e))?;
        for step in &MIGRATIONS[usize::try_from(from).unwrap_or(0)..] {
            conn.execute_batch(step)
                .map_err(|e| Error::database(op, e))?;
        }
        conn.execute(
            "INSERT INTO __alkstore_meta (key, value) VALUES ('schema_version', ?1) \
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [SCHEMA_VERSION],
        )
        .map_err(|e| Error::database(op, e))?;
        Ok(())
    })();
    match result {
        Ok(()) => conn
            .execute_batch("COMMIT")
            .map_err(|e| Error::database(op, e)),
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}
