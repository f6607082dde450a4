//! Table definitions and the recorded schema version.

use alkstore_core::{Error, Result};
use rusqlite::{Connection, OptionalExtension};

/// The schema version this build writes and understands.
pub const SCHEMA_VERSION: i64 = 2;

const V1: &str = "
CREATE TABLE IF NOT EXISTS __alkstore_job (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  queue TEXT NOT NULL,
  state TEXT NOT NULL DEFAULT 'pending',
  payload BLOB NOT NULL,
  priority INTEGER NOT NULL DEFAULT 0,
  run_at INTEGER NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  max_attempts INTEGER NOT NULL,
  worker_id TEXT,
  claimed_at INTEGER,
  claim_expires_at INTEGER,
  created_at INTEGER NOT NULL,
  expires_at INTEGER,
  visibility_timeout_s INTEGER NOT NULL,
  backoff_base_s INTEGER NOT NULL,
  dead_letter_retention_s INTEGER,
  unique_key TEXT,
  last_error TEXT
);
-- Claim order over pending rows only: a claim moves a row out of this index
-- and the scan starts at the first due row of the highest priority.
CREATE INDEX IF NOT EXISTS __alkstore_job_claim
  ON __alkstore_job (queue, priority DESC, run_at, id) WHERE state = 'pending';
CREATE INDEX IF NOT EXISTS __alkstore_job_deadline
  ON __alkstore_job (queue, claim_expires_at) WHERE state = 'processing';
CREATE INDEX IF NOT EXISTS __alkstore_job_expiry
  ON __alkstore_job (expires_at) WHERE expires_at IS NOT NULL AND state = 'pending';
CREATE UNIQUE INDEX IF NOT EXISTS __alkstore_job_unique
  ON __alkstore_job (queue, unique_key) WHERE unique_key IS NOT NULL;

CREATE TABLE IF NOT EXISTS __alkstore_dead (
  id INTEGER PRIMARY KEY,
  queue TEXT NOT NULL,
  payload BLOB NOT NULL,
  priority INTEGER NOT NULL DEFAULT 0,
  run_at INTEGER NOT NULL,
  attempts INTEGER NOT NULL,
  max_attempts INTEGER NOT NULL,
  worker_id TEXT,
  claimed_at INTEGER,
  claim_expires_at INTEGER,
  created_at INTEGER NOT NULL,
  expires_at INTEGER,
  visibility_timeout_s INTEGER NOT NULL,
  backoff_base_s INTEGER NOT NULL,
  dead_letter_retention_s INTEGER,
  unique_key TEXT,
  last_error TEXT,
  reason TEXT NOT NULL,
  died_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS __alkstore_dead_retention ON __alkstore_dead (queue, died_at);
";

/// Version 2: claim tokens apart from attempts, cooperative cancel, kept
/// completed jobs, and every attempt's error.
const V2: &str = "
ALTER TABLE __alkstore_job ADD COLUMN claim_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE __alkstore_job ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0;
ALTER TABLE __alkstore_job ADD COLUMN keep_completed_s INTEGER;
ALTER TABLE __alkstore_job ADD COLUMN errors TEXT;
-- Version 1 proved claims by attempt; carry those tokens over.
UPDATE __alkstore_job SET claim_count = attempts;
ALTER TABLE __alkstore_dead ADD COLUMN claim_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE __alkstore_dead ADD COLUMN keep_completed_s INTEGER;
ALTER TABLE __alkstore_dead ADD COLUMN errors TEXT;
UPDATE __alkstore_dead SET claim_count = attempts;
CREATE TABLE IF NOT EXISTS __alkstore_done (
  id INTEGER PRIMARY KEY,
  queue TEXT NOT NULL,
  payload BLOB NOT NULL,
  priority INTEGER NOT NULL DEFAULT 0,
  run_at INTEGER NOT NULL,
  attempts INTEGER NOT NULL,
  max_attempts INTEGER NOT NULL,
  worker_id TEXT,
  claimed_at INTEGER,
  claim_expires_at INTEGER,
  created_at INTEGER NOT NULL,
  expires_at INTEGER,
  visibility_timeout_s INTEGER NOT NULL,
  backoff_base_s INTEGER NOT NULL,
  dead_letter_retention_s INTEGER,
  unique_key TEXT,
  claim_count INTEGER NOT NULL DEFAULT 0,
  keep_completed_s INTEGER,
  last_error TEXT,
  errors TEXT,
  completed_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS __alkstore_done_retention ON __alkstore_done (completed_at);
CREATE INDEX IF NOT EXISTS __alkstore_done_queue ON __alkstore_done (queue, id);
";

/// Migrations in order; entry `i` takes the schema from version `i` to `i + 1`.
const MIGRATIONS: [&str; SCHEMA_VERSION as usize] = [V1, V2];

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
        for step in &MIGRATIONS[from.max(0) as usize..] {
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
