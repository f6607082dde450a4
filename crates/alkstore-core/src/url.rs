//! Store URLs: `sqlite://path/to/file.db` and `postgres://…?schema=name`.

use crate::{Error, Result};

/// A parsed store URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreUrl {
    /// An embedded SQLite file.
    Sqlite {
        /// File path (relative paths are relative to the working directory).
        path: String,
        /// `synchronous=full` asks SQLite to fsync every commit (default
        /// `normal`: durable across process crashes, not power loss).
        synchronous_full: bool,
    },
    /// A PostgreSQL database.
    Postgres {
        /// The connection URL with alkstore's own parameters removed.
        conninfo: String,
        /// The engine-owned schema (default `alkstore`).
        schema: String,
        /// `relaxed_commits=false` makes claims, acks and heartbeats wait
        /// for the WAL flush too (default true; see the PostgreSQL engine).
        relaxed_commits: bool,
    },
}

/// The schema used when a PostgreSQL URL names none.
pub const DEFAULT_PG_SCHEMA: &str = "alkstore";

impl StoreUrl {
    /// Parse a store URL.
    ///
    /// ```
    /// use alkstore_core::url::StoreUrl;
    /// let u = StoreUrl::parse("postgres://u@localhost/app?schema=jobs").unwrap();
    /// assert_eq!(u, StoreUrl::Postgres {
    ///     conninfo: "postgres://u@localhost/app".into(),
    ///     schema: "jobs".into(),
    ///     relaxed_commits: true,
    /// });
    /// assert!(StoreUrl::parse("mysql://x").is_err());
    /// ```
    pub fn parse(url: &str) -> Result<StoreUrl> {
        let bad = |reason: &str| Error::InvalidUrl {
            url: mask_password(url),
            reason: reason.to_string(),
        };
        // A parameter given twice is a mistake whichever one would win.
        let mut seen = std::collections::HashSet::new();
        for (k, _) in query_pairs(split_query(url).1) {
            if !seen.insert(k) {
                return Err(bad(&format!("parameter {k:?} is given more than once")));
            }
        }
        if let Some(rest) = url.strip_prefix("sqlite://") {
            let (path, query) = split_query(rest);
            if path.is_empty() {
                return Err(bad("missing file path (sqlite://path/to/file.db)"));
            }
            if path == ":memory:" || path.starts_with("file:") {
                // Each connection (writer, readers, watcher) would open its
                // own empty database.
                return Err(bad(
                    "in-memory and URI databases are not supported; use a file path (a temporary file for tests)",
                ));
            }
            let mut synchronous_full = false;
            for (k, v) in query_pairs(query) {
                match (k, v) {
                    ("synchronous", "full") => synchronous_full = true,
                    ("synchronous", "normal") => synchronous_full = false,
                    ("synchronous", _) => return Err(bad("synchronous must be normal or full")),
                    _ => return Err(bad(&format!("unknown parameter {k:?}"))),
                }
            }
            return Ok(StoreUrl::Sqlite {
                path: path.to_string(),
                synchronous_full,
            });
        }
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            let (base, query) = split_query(url);
            let mut schema = DEFAULT_PG_SCHEMA.to_string();
            let mut relaxed_commits = true;
            let mut kept = Vec::new();
            for (k, v) in query_pairs(query) {
                if k == "schema" {
                    schema = percent_decode(v)
                        .ok_or_else(|| bad("schema is not valid percent-encoded UTF-8"))?;
                } else if k == "relaxed_commits" {
                    relaxed_commits = match v {
                        "true" => true,
                        "false" => false,
                        _ => return Err(bad("relaxed_commits must be true or false")),
                    };
                } else {
                    kept.push(format!("{k}={v}"));
                }
            }
            if schema.is_empty() || schema.len() > 63 {
                return Err(bad("schema must be 1 to 63 bytes"));
            }
            if schema.contains('\0') {
                return Err(bad("schema must not contain NUL"));
            }
            let conninfo = if kept.is_empty() {
                base.to_string()
            } else {
                format!("{base}?{}", kept.join("&"))
            };
            return Ok(StoreUrl::Postgres {
                conninfo,
                schema,
                relaxed_commits,
            });
        }
        Err(bad("expected sqlite://… or postgres://…"))
    }
}

fn split_query(s: &str) -> (&str, &str) {
    match s.split_once('?') {
        Some((a, b)) => (a, b),
        None => (s, ""),
    }
}

fn query_pairs(q: &str) -> impl Iterator<Item = (&str, &str)> {
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| p.split_once('=').unwrap_or((p, "")))
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'%' => return None,
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// Replace the password of a URL with `***` for error messages and logs.
pub fn mask_password(url: &str) -> String {
    if let Some((scheme, rest)) = url.split_once("://") {
        if let Some((userinfo, host)) = rest.split_once('@') {
            if let Some((user, _)) = userinfo.split_once(':') {
                return format!("{scheme}://{user}:***@{host}");
            }
        }
    }
    url.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sqlite_and_postgres() {
        assert_eq!(
            StoreUrl::parse("sqlite://app.db").ok(),
            Some(StoreUrl::Sqlite {
                path: "app.db".into(),
                synchronous_full: false
            })
        );
        assert_eq!(
            StoreUrl::parse("sqlite:///tmp/x.db?synchronous=full").ok(),
            Some(StoreUrl::Sqlite {
                path: "/tmp/x.db".into(),
                synchronous_full: true
            })
        );
        let u = StoreUrl::parse("postgres://a:b@h:5/d?sslmode=disable&schema=x%22%3B%20DROP").ok();
        assert_eq!(
            u,
            Some(StoreUrl::Postgres {
                conninfo: "postgres://a:b@h:5/d?sslmode=disable".into(),
                schema: "x\"; DROP".into(),
                relaxed_commits: true,
            })
        );
        let u = StoreUrl::parse("postgres://h/d?relaxed_commits=false").ok();
        assert_eq!(
            u,
            Some(StoreUrl::Postgres {
                conninfo: "postgres://h/d".into(),
                schema: "alkstore".into(),
                relaxed_commits: false,
            })
        );
    }

    #[test]
    fn rejects_bad_urls_with_typed_errors() {
        for bad in [
            "",
            "mysql://x",
            "sqlite://",
            "sqlite://a.db?foo=1",
            "postgres://h/d?schema=",
            "postgres://h/d?schema=%zz",
            "postgres://h/d?relaxed_commits=maybe",
            "postgres://h/d?schema=a&schema=b",
            "postgres://h/d?sslmode=disable&sslmode=require",
            "sqlite://a.db?synchronous=full&synchronous=normal",
            "sqlite://:memory:",
            "sqlite://file::memory:?cache=shared",
        ] {
            let err = StoreUrl::parse(bad).err();
            assert!(
                matches!(err, Some(Error::InvalidUrl { .. })),
                "{bad}: {err:?}"
            );
        }
    }

    #[test]
    fn masks_passwords() {
        assert_eq!(
            mask_password("postgres://u:secret@h/d"),
            "postgres://u:***@h/d"
        );
    }
}
