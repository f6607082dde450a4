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
use tokio_postgres::types::Type;

/// The default engine-owned schema name.
pub const DEFAULT_SCHEMA: &str = "alkstore";

/// The migrations, in order: migration `n` (1-based) takes the schema from
/// version `n - 1` to `n`. Each new area adds a file; nothing else changes.
/// Identifiers in the files are placeholders (see [`render`]).
const MIGRATIONS: &[&str] = &[
    include_str!("../migrations/001_queues.sql"),
    include_str!("../migrations/002_queue_tokens_cancel_done.sql"),
    include_str!("../migrations/003_streams.sql"),
    include_str!("../migrations/004_groups.sql"),
    include_str!("../migrations/005_locks.sql"),
    include_str!("../migrations/006_schedules.sql"),
    include_str!("../migrations/007_queue_pause.sql"),
    include_str!("../migrations/008_rate_limits.sql"),
    include_str!("../migrations/009_job_results.sql"),
    include_str!("../migrations/010_queue_throughput.sql"),
    include_str!("../migrations/011_inline_notify.sql"),
    include_str!("../migrations/012_announce_after_commit.sql"),
    include_str!("../migrations/013_processes.sql"),
    include_str!("../migrations/014_schedule_fires.sql"),
    include_str!("../migrations/015_group_handoffs.sql"),
    include_str!("../migrations/016_queue_depth.sql"),
    include_str!("../migrations/017_job_tags_meta.sql"),
    include_str!("../migrations/018_publisher_horizon.sql"),
];

/// The first key of the shared advisory lock in which a stream publisher
/// that already had a transaction id shows readers its offset base
/// (migration 018): "alk\0".
pub const PUBLISH_ADVISORY_NS: i32 = 0x616C_6B00;

/// The schema version this build writes and understands.
#[allow(clippy::cast_possible_wrap)] // a handful of migrations
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

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
    /// Stream events (the offset is `id`).
    pub const EVENT: &str = "event";
    /// Per-stream settings (retention) and facts (the highest trimmed offset).
    pub const STREAM: &str = "stream";
    /// Consumer offsets.
    pub const STREAM_OFFSET: &str = "stream_offset";
    /// Consumer-group bucket leases and checkpoints.
    pub const GROUP_BUCKET: &str = "group_bucket";
    /// Consumer-group live workers.
    pub const GROUP_MEMBER: &str = "group_member";
    /// Consumer-group dead letters.
    pub const GROUP_DEAD: &str = "group_dead";
    /// Named locks and their last fencing tokens.
    pub const LOCK: &str = "lock";
    /// Schedules and their next boundaries.
    pub const SCHEDULE: &str = "schedule";
    /// Paused queues.
    pub const QUEUE_PAUSE: &str = "queue_pause";
    /// Rate-limit windows.
    pub const RATE_LIMIT: &str = "rate_limit";
    /// Saved job results.
    pub const JOB_RESULT: &str = "job_result";
    /// Jobs finished per queue, in buckets of time.
    pub const QUEUE_THROUGHPUT: &str = "queue_throughput";
    /// Running processes, kept by their heartbeats.
    pub const PROCESS: &str = "process";
    /// Each schedule's last fires.
    pub const SCHEDULE_FIRE: &str = "schedule_fire";
    /// Consumer-group lease handoffs (a week of them).
    pub const GROUP_HANDOFF: &str = "group_handoff";
    /// Consumer-group handoffs counted by cause.
    pub const GROUP_HANDOFF_TOTAL: &str = "group_handoff_total";
    /// Queue depth samples, taken by the sweep.
    pub const QUEUE_DEPTH: &str = "queue_depth";
    /// Where a stream publisher that already had a transaction id draws a
    /// fresh one (migration 018); always empty.
    pub const PUBLISH_BASE: &str = "publish_base";
}

/// The LISTEN/NOTIFY channel of a schema's queues (`alkstore_{schema}`).
pub fn notify_channel(schema: &str) -> String {
    format!("alkstore_{schema}")
}

/// The LISTEN/NOTIFY channel of a schema's streams (`alkstore_s_{schema}`;
/// 51 bytes at most, under PostgreSQL's 63).
pub fn stream_channel(schema: &str) -> String {
    format!("alkstore_s_{schema}")
}

/// The LISTEN/NOTIFY channel of a schema's notifications (`alkstore_m_{schema}`;
/// each message names its alkstore channel, see
/// [`alkstore_core::notify::encode_message`]).
pub fn message_channel(schema: &str) -> String {
    format!("alkstore_m_{schema}")
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
    // One simple-protocol statement: it runs whole through a
    // transaction-mode pooler too, where a statement prepared in one round
    // trip may be gone in the next.
    let rows = client
        .simple_query(&format!(
            "SELECT to_regclass({}) IS NOT NULL",
            quote_literal(&meta)
        ))
        .await
        .map_err(|e| Error::database("schema check", e))?;
    Ok(rows.iter().any(|m| match m {
        tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0) == Some("t"),
        _ => false,
    }))
}

/// Create or check the schema on `client`. Idempotent and safe to run from
/// many processes at once.
pub async fn bootstrap(client: &mut tokio_postgres::Client, schema: &str) -> Result<()> {
    validate_schema_name(schema)?;
    let op = "schema bootstrap";
    let tx = client.transaction().await.map_err(crate::db(op))?;
    // Unnamed statements (`query_typed`), which run whole through a
    // transaction-mode pooler: a pooler's server connection may still hold
    // a named one another client left behind under the same name.
    tx.query_typed(
        "SELECT pg_advisory_xact_lock(hashtextextended('alkstore bootstrap ' || $1, 0))",
        &[(&schema, Type::TEXT)],
    )
    .await
    .map_err(crate::db(op))?;
    let meta = QualifiedTable::new(schema, tables::META);
    tx.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS {s};
         CREATE TABLE IF NOT EXISTS {meta} (key TEXT PRIMARY KEY, value BIGINT NOT NULL);",
        s = quote_identifier(schema)
    ))
    .await
    .map_err(crate::db(op))?;
    let found: Option<i64> = tx
        .query_typed_opt(
            &format!("SELECT value FROM {meta} WHERE key = 'schema_version'"),
            &[],
        )
        .await
        .map_err(crate::db(op))?
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
            return tx.commit().await.map_err(crate::db(op));
        }
    }
    let from = usize::try_from(found.unwrap_or(0)).unwrap_or(0);
    for migration in &MIGRATIONS[from..] {
        tx.batch_execute(&render(migration, schema))
            .await
            .map_err(crate::db(op))?;
    }
    tx.query_typed(
        &format!(
            "INSERT INTO {meta} (key, value) VALUES ('schema_version', $1)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value"
        ),
        &[(&SCHEMA_VERSION, Type::INT8)],
    )
    .await
    .map_err(crate::db(op))?;
    tx.commit().await.map_err(crate::db(op))
}

/// `text` as a SQL string literal, whatever `standard_conforming_strings`
/// says (PostgreSQL's `quote_literal` rule).
pub(crate) fn quote_literal(text: &str) -> String {
    let quoted = text.replace('\'', "''");
    if quoted.contains('\\') {
        format!("E'{}'", quoted.replace('\\', "\\\\"))
    } else {
        format!("'{quoted}'")
    }
}

/// A migration with its placeholders replaced by quoted identifiers:
/// `@job@`, `@dead@`, `@done@`, `@meta@` (tables in the schema), `@schema@`,
/// `@schema_literal@` (the schema's name as a string literal),
/// `@event_literal@` (the event table's qualified name as a string literal),
/// `@advisory_ns@` ([`PUBLISH_ADVISORY_NS`])
/// and `@index:NAME@` (`{schema}_NAME`, schema-prefixed so a co-tenant's
/// index of the same name cannot make `IF NOT EXISTS` skip ours). Every name
/// goes through [`quote_identifier`], the injection boundary.
fn render(sql: &str, schema: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 256);
    let mut rest = sql;
    while let Some(start) = rest.find('@') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let Some(len) = after.find('@') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let token = &after[..len];
        let name = match token {
            "job" => QualifiedTable::new(schema, tables::JOB).to_string(),
            "dead" => QualifiedTable::new(schema, tables::DEAD).to_string(),
            "done" => QualifiedTable::new(schema, tables::DONE).to_string(),
            "meta" => QualifiedTable::new(schema, tables::META).to_string(),
            "event" => QualifiedTable::new(schema, tables::EVENT).to_string(),
            "stream" => QualifiedTable::new(schema, tables::STREAM).to_string(),
            "stream_offset" => QualifiedTable::new(schema, tables::STREAM_OFFSET).to_string(),
            "group_bucket" => QualifiedTable::new(schema, tables::GROUP_BUCKET).to_string(),
            "group_member" => QualifiedTable::new(schema, tables::GROUP_MEMBER).to_string(),
            "group_dead" => QualifiedTable::new(schema, tables::GROUP_DEAD).to_string(),
            "lock" => QualifiedTable::new(schema, tables::LOCK).to_string(),
            "schedule" => QualifiedTable::new(schema, tables::SCHEDULE).to_string(),
            "queue_pause" => QualifiedTable::new(schema, tables::QUEUE_PAUSE).to_string(),
            "rate_limit" => QualifiedTable::new(schema, tables::RATE_LIMIT).to_string(),
            "job_result" => QualifiedTable::new(schema, tables::JOB_RESULT).to_string(),
            "queue_throughput" => QualifiedTable::new(schema, tables::QUEUE_THROUGHPUT).to_string(),
            "process" => QualifiedTable::new(schema, tables::PROCESS).to_string(),
            "schedule_fire" => QualifiedTable::new(schema, tables::SCHEDULE_FIRE).to_string(),
            "group_handoff" => QualifiedTable::new(schema, tables::GROUP_HANDOFF).to_string(),
            "queue_depth" => QualifiedTable::new(schema, tables::QUEUE_DEPTH).to_string(),
            "publish_base" => QualifiedTable::new(schema, tables::PUBLISH_BASE).to_string(),
            "advisory_ns" => PUBLISH_ADVISORY_NS.to_string(),
            "event_literal" => {
                quote_literal(&QualifiedTable::new(schema, tables::EVENT).to_string())
            }
            "group_handoff_total" => {
                QualifiedTable::new(schema, tables::GROUP_HANDOFF_TOTAL).to_string()
            }
            "schema" => quote_identifier(schema),
            "schema_literal" => quote_literal(schema),
            _ => match token.strip_prefix("index:") {
                Some(index) => quote_identifier(&format!("{schema}_{index}")),
                // Not a placeholder: keep the text as written.
                None => {
                    out.push('@');
                    rest = after;
                    continue;
                }
            },
        };
        out.push_str(&name);
        rest = &after[len + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_render_every_placeholder_quoted() {
        for (n, m) in MIGRATIONS.iter().enumerate() {
            let sql = render(m, r#"we"ird"#);
            for token in [
                "@job@",
                "@dead@",
                "@done@",
                "@meta@",
                "@event@",
                "@stream",
                "@index:",
                "@schema@",
                "@publish_base@",
                "@event_literal@",
            ] {
                assert!(!sql.contains(token), "migration {} keeps {token}", n + 1);
            }
            assert!(sql.contains(r#""we""ird"."#), "migration {}", n + 1);
        }
        let first = render(MIGRATIONS[0], "s");
        assert!(first.contains(r#"CREATE INDEX IF NOT EXISTS "s_job_claim_idx" ON "s"."job""#));
        assert!(first.contains(r#""s".job_notify()"#));
    }
}
