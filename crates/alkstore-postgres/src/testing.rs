//! Helpers for tests and benchmarks that need a private schema on a real
//! server. Not part of the stable API.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use alkstore_core::{Error, Result};

/// The server tests use: `DATABASE_URL`, else the local default.
pub fn database_url() -> String {
    std::env::var("DATABASE_URL")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "postgres://postgres@127.0.0.1:5432/postgres".to_string())
}

/// `url` with its database name replaced by `db`.
pub fn with_database(url: &str, db: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let scheme_end = base.find("://").map(|i| i + 3).unwrap_or(0);
    let host_part = &base[scheme_end..];
    let trimmed = match host_part.find('/') {
        Some(i) => &base[..scheme_end + i],
        None => base,
    };
    match query {
        Some(q) => format!("{trimmed}/{db}?{q}"),
        None => format!("{trimmed}/{db}"),
    }
}

/// Create database `db` on the server of `url` unless it exists; returns a
/// URL for it. Safe when several processes race to create it.
pub async fn ensure_database(url: &str, db: &str) -> Result<String> {
    let (client, task) = crate::tls::connect(url).await?;
    let exists = client
        .query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&db])
        .await
        .map_err(|e| Error::database("ensure database", e))?
        .is_some();
    if !exists {
        let create = format!("CREATE DATABASE {}", crate::schema::quote_identifier(db));
        if let Err(e) = client.batch_execute(&create).await {
            let code = e.code().map(|c| c.code().to_string()).unwrap_or_default();
            // 42P04 duplicate_database, 23505 unique_violation: a racing
            // process created it first.
            if code != "42P04" && code != "23505" {
                return Err(Error::database("ensure database", e));
            }
        }
    }
    drop(client);
    let _ = task.await;
    Ok(with_database(url, db))
}

/// A schema name unique to this process and call, at most 40 bytes.
pub fn unique_schema(prefix: &str) -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let prefix: String = prefix.chars().take(12).collect();
    format!(
        "{prefix}_{:x}_{:x}_{}",
        std::process::id(),
        nanos,
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// Drop `schema` and everything in it.
pub async fn drop_schema(url: &str, schema: &str) -> Result<()> {
    let (client, task) = crate::tls::connect(url).await?;
    client
        .batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {} CASCADE",
            crate::schema::quote_identifier(schema)
        ))
        .await
        .map_err(|e| Error::database("drop schema", e))?;
    drop(client);
    let _ = task.await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_database_name() {
        assert_eq!(
            with_database("postgres://u@h:5/postgres", "t"),
            "postgres://u@h:5/t"
        );
        assert_eq!(with_database("postgres://u@h", "t"), "postgres://u@h/t");
        assert_eq!(
            with_database("postgres://u@h/d?sslmode=disable", "t"),
            "postgres://u@h/t?sslmode=disable"
        );
        assert!(unique_schema("a_very_long_prefix_indeed").len() <= 40);
    }
}
