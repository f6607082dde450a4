//! Table definitions and the recorded schema version.

use alkstore_core::{Error, Result};
use rusqlite::{Connection, OptionalExtension};

/// The schema version this build writes and understands.
pub const SCHEMA_VERSION: i64 = 1;

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

/// Create or upgrade the tables; refuse a file written by a newer version.
pub(crate) fn migrate(conn: &Connection) -> Result<()> {
    let op = "schema migration";
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS __alkstore_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);",
    )
    .map_err(|e| Error::database(op, e))?;
    let found: Option<i64> = conn
        .query_row(
            "SELECT value FROM __alkstore_meta WHERE key = 'schema_version'",
            [],
            |r| r.get(0),
        )
        .optional()
        .map_err(|e| Error::database(op, e))?;
    if let Some(found) = found {
        if found > SCHEMA_VERSION {
            return Err(Error::SchemaTooNew {
                found,
                supported: SCHEMA_VERSION,
            });
        }
    }
    conn.execute_batch(&format!(
        "BEGIN IMMEDIATE; {V1}
         INSERT INTO __alkstore_meta (key, value) VALUES ('schema_version', {SCHEMA_VERSION})
           ON CONFLICT (key) DO UPDATE SET value = excluded.value;
         COMMIT;"
    ))
    .map_err(|e| {
        let _ = conn.execute_batch("ROLLBACK");
        Error::database(op, e)
    })
}
