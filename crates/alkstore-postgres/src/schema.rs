//! Schema bootstrap: the one engine-owned PostgreSQL schema and its tables.
//!
//! Grown from the project's seed (`schema.rs` of the original design):
//!
//! - All engine objects live in one schema, default [`DEFAULT_SCHEMA`],
//!   configurable per store (`?schema=` in the URL), so alkstore can share a
//!   database with the application's own tables.
//! - Queues are rows in one job table; creating a queue is not DDL. Per-queue
//!   options are stamped on each row.
//! - Payloads are `BYTEA`, stored byte for byte (never `JSONB`, whose
//!   normalization would not keep the caller's bytes).
//! - Timestamps are unix seconds in `BIGINT`.
//! - [`quote_identifier`] is the injection boundary: every identifier built
//!   from the schema name is quoted through it, never interpolated raw.
//! - Index names are prefixed with the schema name (`{schema}_job_claim_idx`):
//!   `CREATE INDEX IF NOT EXISTS` checks a bare name, and a co-tenant's
//!   unrelated index of the same name must not make us skip ours.
//!
//! Unlike the seed, the schema records its version in a `meta` table so later
//! releases can migrate in place, and refuses to run against a newer one.
//! Bootstraps serialize on an advisory lock so concurrent first opens cannot
//! race each other's `CREATE … IF NOT EXISTS`.

use std::fmt;

use alkstore_core::{Error, Result};

/// The default engine-owned schema name.
pub const DEFAULT_SCHEMA: &str = "alkstore";

/// The schema version this build writes and understands.
pub const SCHEMA_VERSION: i64 = 2;

/// Longest accepted schema name: the longest prefixed index name
/// (`{schema}_dead_retention_idx`) must fit PostgreSQL's 63-byte identifiers,
/// or two index names could truncate to the same name.
pub const MAX_SCHEMA_LEN: usize = 40;

/// Quote a SQL identifier (PostgreSQL rule: wrap in `"` and double any `"`).
///
/// ```
/// use alkstore_postgres::schema::quote_identifier;
/// assert_eq!(quote_identifier(r#"x"; DROP TABLE job; --"#), r#""x""; DROP TABLE job; --""#);
/// ```
pub fn quote_identifier(name: &str) -> String {
    let mut quoted = String::with_capacity(name.len() + 2);
    quoted.push('"');
    for c in name.chars() {
        if c == '"' {
            quoted.push('"');
        }
        quoted.push(c);
    }
    quoted.push('"');
    quoted
}

/// A schema-qualified table reference: `"schema"."name"`.
#[derive(Debug, Clone, Copy)]
pub struct QualifiedTable<'a> {
    /// The schema name (unquoted form).
    pub schema: &'a str,
    /// The table name (unquoted form).
    pub name: &'a str,
}

impl<'a> QualifiedTable<'a> {
    /// `name` inside `schema`.
    pub fn new(schema: &'a str, name: &'a str) -> Self {
        QualifiedTable { schema, name }
    }
}

impl fmt::Display for QualifiedTable<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}.{}",
            quote_identifier(self.schema),
            quote_identifier(self.name)
        )
    }
}

/// Table names inside the schema.
pub mod tables {
    /// Live jobs (pending and processing).
    pub const JOB: &str = "job";
    /// Dead letters.
    pub const DEAD: &str = "dead";
    /// Acked jobs kept for a while (queues with `keep_completed`).
    pub const DONE: &str = "done";
    /// Key/value facts about the schema (its version).
    pub const META: &str = "meta";
}

/// Index name suffixes; the full name is `{schema}_{suffix}`.
pub mod indexes {
    /// Claim order over pending rows (`queue, priority DESC, run_at, id`).
    pub const JOB_CLAIM: &str = "job_claim_idx";
    /// Claim deadlines of processing rows.
    pub const JOB_DEADLINE: &str = "job_deadline_idx";
    /// Expiry of pending rows.
    pub const JOB_EXPIRY: &str = "job_expiry_idx";
    /// At most one live job per queue and unique key.
    pub const JOB_UNIQUE: &str = "job_unique_idx";
    /// Dead-letter retention sweep and per-queue listing.
    pub const DEAD_RETENTION: &str = "dead_retention_idx";
    /// Pruning of kept completed jobs.
    pub const DONE_RETENTION: &str = "done_retention_idx";
    /// Per-queue listing of kept completed jobs.
    pub const DONE_QUEUE: &str = "done_queue_idx";
}

/// The LISTEN/NOTIFY channel of a schema (`alkstore_{schema}`).
pub fn notify_channel(schema: &str) -> String {
    format!("alkstore_{schema}")
}

/// Reject schema names PostgreSQL would mangle.
pub fn validate_schema_name(schema: &str) -> Result<()> {
    if schema.is_empty() || schema.len() > MAX_SCHEMA_LEN {
        return Err(Error::invalid(
            "schema name",
            format!("must be 1 to {MAX_SCHEMA_LEN} bytes"),
        ));
    }
    if schema.contains('\0') {
        return Err(Error::invalid("schema name", "must not contain NUL"));
    }
    Ok(())
}

/// Whether `schema` holds an alkstore store (its `meta` table exists).
pub async fn exists(client: &tokio_postgres::Client, schema: &str) -> Result<bool> {
    validate_schema_name(schema)?;
    let meta = QualifiedTable::new(schema, tables::META).to_string();
    let row = client
        .query_one("SELECT to_regclass($1) IS NOT NULL", &[&meta])
        .await
        .map_err(|e| Error::database("schema check", e))?;
    Ok(row.get(0))
}

/// Create or check the schema on `client`. Idempotent and safe to run from
/// many processes at once.
pub async fn bootstrap(client: &mut tokio_postgres::Client, schema: &str) -> Result<()> {
    validate_schema_name(schema)?;
    let op = "schema bootstrap";
    let db = |e| Error::database(op, e);
    let tx = client.transaction().await.map_err(db)?;
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended('alkstore bootstrap ' || $1, 0))",
        &[&schema],
    )
    .await
    .map_err(db)?;
    let meta = QualifiedTable::new(schema, tables::META);
    tx.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS {s};
         CREATE TABLE IF NOT EXISTS {meta} (key TEXT PRIMARY KEY, value BIGINT NOT NULL);",
        s = quote_identifier(schema)
    ))
    .await
    .map_err(db)?;
    let found: Option<i64> = tx
        .query_opt(
            &format!("SELECT value FROM {meta} WHERE key = 'schema_version'"),
            &[],
        )
        .await
        .map_err(db)?
        .map(|r| r.get(0));
    if let Some(found) = found {
        if found > SCHEMA_VERSION {
            return Err(Error::SchemaTooNew {
                found,
                supported: SCHEMA_VERSION,
            });
        }
        if found == SCHEMA_VERSION {
            // Up to date: no DDL. `CREATE INDEX IF NOT EXISTS` and
            // `CREATE OR REPLACE TRIGGER` lock the job table even when they
            // change nothing, and would queue every worker behind any long
            // transaction that touched it.
            return tx.commit().await.map_err(db);
        }
    }
    if found.unwrap_or(0) < 1 {
        tx.batch_execute(&ddl_v1(schema)).await.map_err(db)?;
    }
    tx.batch_execute(&ddl_v2(schema)).await.map_err(db)?;
    tx.execute(
        &format!(
            "INSERT INTO {meta} (key, value) VALUES ('schema_version', $1)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value"
        ),
        &[&SCHEMA_VERSION],
    )
    .await
    .map_err(db)?;
    tx.commit().await.map_err(db)
}

/// Version 2: claim tokens apart from attempts, cooperative cancel, kept
/// completed jobs, and every attempt's error. Idempotent (`IF NOT EXISTS`).
fn ddl_v2(schema: &str) -> String {
    let index = |suffix: &str| quote_identifier(&format!("{schema}_{suffix}"));
    let job = QualifiedTable::new(schema, tables::JOB);
    let dead = QualifiedTable::new(schema, tables::DEAD);
    let done = QualifiedTable::new(schema, tables::DONE);
    let done_retention = index(indexes::DONE_RETENTION);
    let done_queue = index(indexes::DONE_QUEUE);
    format!(
        "
ALTER TABLE {job} ADD COLUMN IF NOT EXISTS claim_count BIGINT NOT NULL DEFAULT 0,
  ADD COLUMN IF NOT EXISTS cancel_requested BOOLEAN NOT NULL DEFAULT false,
  ADD COLUMN IF NOT EXISTS keep_completed_s BIGINT,
  ADD COLUMN IF NOT EXISTS errors JSONB;
-- Version 1 proved claims by attempt; carry those tokens over.
UPDATE {job} SET claim_count = attempts WHERE claim_count = 0 AND attempts > 0;
ALTER TABLE {dead} ADD COLUMN IF NOT EXISTS claim_count BIGINT NOT NULL DEFAULT 0,
  ADD COLUMN IF NOT EXISTS keep_completed_s BIGINT,
  ADD COLUMN IF NOT EXISTS errors JSONB;
UPDATE {dead} SET claim_count = attempts WHERE claim_count = 0 AND attempts > 0;
CREATE TABLE IF NOT EXISTS {done} (
  id BIGINT PRIMARY KEY,
  queue TEXT NOT NULL,
  payload BYTEA NOT NULL,
  priority BIGINT NOT NULL DEFAULT 0,
  run_at BIGINT NOT NULL DEFAULT 0,
  attempts BIGINT NOT NULL DEFAULT 0,
  max_attempts BIGINT NOT NULL DEFAULT 0,
  worker_id TEXT,
  claimed_at BIGINT,
  claim_expires_at BIGINT,
  created_at BIGINT NOT NULL,
  expires_at BIGINT,
  visibility_timeout_s BIGINT NOT NULL DEFAULT 300,
  backoff_base_s BIGINT NOT NULL DEFAULT 5,
  dead_letter_retention_s BIGINT,
  unique_key TEXT,
  claim_count BIGINT NOT NULL DEFAULT 0,
  keep_completed_s BIGINT,
  last_error TEXT,
  errors JSONB,
  completed_at BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS {done_retention} ON {done} (completed_at);
CREATE INDEX IF NOT EXISTS {done_queue} ON {done} (queue, id);
"
    )
}

fn ddl_v1(schema: &str) -> String {
    let index = |suffix: &str| quote_identifier(&format!("{schema}_{suffix}"));
    let job = QualifiedTable::new(schema, tables::JOB);
    let dead = QualifiedTable::new(schema, tables::DEAD);
    let job_claim = index(indexes::JOB_CLAIM);
    let job_deadline = index(indexes::JOB_DEADLINE);
    let job_expiry = index(indexes::JOB_EXPIRY);
    let job_unique = index(indexes::JOB_UNIQUE);
    let dead_retention = index(indexes::DEAD_RETENTION);
    let schema_q = quote_identifier(schema);
    format!(
        "
CREATE TABLE IF NOT EXISTS {job} (
  id BIGSERIAL PRIMARY KEY,
  queue TEXT NOT NULL,
  state TEXT NOT NULL DEFAULT 'pending',
  payload BYTEA NOT NULL,
  priority BIGINT NOT NULL DEFAULT 0,
  run_at BIGINT NOT NULL,
  attempts BIGINT NOT NULL DEFAULT 0,
  max_attempts BIGINT NOT NULL DEFAULT 3,
  worker_id TEXT,
  claimed_at BIGINT,
  claim_expires_at BIGINT,
  created_at BIGINT NOT NULL,
  expires_at BIGINT,
  visibility_timeout_s BIGINT NOT NULL DEFAULT 300,
  backoff_base_s BIGINT NOT NULL DEFAULT 5,
  dead_letter_retention_s BIGINT,
  unique_key TEXT,
  last_error TEXT
);
-- Pending rows only: a claim takes a row out of this index, so the scan
-- starts at the first due row whatever the backlog of claimed rows.
CREATE INDEX IF NOT EXISTS {job_claim} ON {job} (queue, priority DESC, run_at, id)
  WHERE state = 'pending';
CREATE INDEX IF NOT EXISTS {job_deadline} ON {job} (queue, claim_expires_at)
  WHERE state = 'processing';
CREATE INDEX IF NOT EXISTS {job_expiry} ON {job} (expires_at)
  WHERE expires_at IS NOT NULL AND state = 'pending';
CREATE UNIQUE INDEX IF NOT EXISTS {job_unique} ON {job} (queue, unique_key)
  WHERE unique_key IS NOT NULL;
-- A queue table churns: every job is inserted, updated and deleted. Vacuum it
-- after 1 % of its rows are dead rather than PostgreSQL's default 20 %, so
-- dead entries at the head of the claim index do not pile up.
ALTER TABLE {job} SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000,
  autovacuum_analyze_scale_factor = 0.02, autovacuum_vacuum_cost_delay = 1);

CREATE TABLE IF NOT EXISTS {dead} (
  id BIGINT PRIMARY KEY,
  queue TEXT NOT NULL,
  payload BYTEA NOT NULL,
  priority BIGINT NOT NULL DEFAULT 0,
  run_at BIGINT NOT NULL DEFAULT 0,
  attempts BIGINT NOT NULL DEFAULT 0,
  max_attempts BIGINT NOT NULL DEFAULT 0,
  worker_id TEXT,
  claimed_at BIGINT,
  claim_expires_at BIGINT,
  created_at BIGINT NOT NULL,
  expires_at BIGINT,
  visibility_timeout_s BIGINT NOT NULL DEFAULT 300,
  backoff_base_s BIGINT NOT NULL DEFAULT 5,
  dead_letter_retention_s BIGINT,
  unique_key TEXT,
  last_error TEXT,
  reason TEXT NOT NULL,
  died_at BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS {dead_retention} ON {dead} (queue, died_at);

-- Wake-ups: every insert into the job table (ours, the caller's outbox
-- transaction, a requeue) notifies listeners of the queues it touched, at
-- commit. The channel is derived from the schema inside the function, so no
-- schema name is ever spliced into a string literal.
CREATE OR REPLACE FUNCTION {schema_q}.job_notify() RETURNS trigger LANGUAGE plpgsql AS $alk$
BEGIN
  PERFORM pg_notify('alkstore_' || TG_TABLE_SCHEMA, d.q) FROM (SELECT DISTINCT queue AS q FROM new_rows) d;
  RETURN NULL;
END
$alk$;
CREATE OR REPLACE TRIGGER job_notify_insert AFTER INSERT ON {job}
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {schema_q}.job_notify();
"
    )
}
