//! Store URLs: `sqlite://path/to/file.db` and `postgres://…?schema=name`.

use std::fmt;
use std::path::PathBuf;

use crate::{Error, Result};

/// A parsed store URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreUrl {
    /// An embedded SQLite file, or with `sqlite://:memory:` an in-memory
    /// store of this process that vanishes with its last connection (see
    /// the SQLite engine's `SqliteOptions::new`).
    Sqlite {
        /// File path (relative paths are relative to the working
        /// directory), or `:memory:`.
        path: String,
        /// `synchronous=full` asks SQLite to fsync every commit (default
        /// `normal`: durable across process crashes, not power loss).
        synchronous_full: bool,
    },
    /// A PostgreSQL database.
    Postgres {
        /// The connection URL with alkstore's own parameters removed.
        /// `sslmode` and `sslrootcert` stay in it (checked here): the
        /// PostgreSQL engine takes them out and sets TLS up itself (see
        /// [`split_pg_tls`]).
        conninfo: String,
        /// The engine-owned schema (default `alkstore`).
        schema: String,
        /// `relaxed_commits=false` makes claims, acks and heartbeats wait
        /// for the WAL flush too (default true; see the PostgreSQL engine).
        relaxed_commits: bool,
        /// `relaxed_writes=true` makes enqueues and publishes made outside
        /// a transaction commit without waiting for the WAL flush too
        /// (default false; see the PostgreSQL engine).
        relaxed_writes: bool,
        /// `pool_size=N`: most pooled connections (1 to 1000; the engine's
        /// default when absent).
        pool_size: Option<usize>,
        /// `pooler=transaction`: the URL reaches the server through a
        /// transaction-mode pooler such as PgBouncer (default `none`).
        pooler: PgPooler,
        /// `listen_url=…` (percent-encoded): where to LISTEN for other
        /// processes' wake-ups and notifications, straight to the server,
        /// when the URL itself goes through a pooler that cannot LISTEN.
        listen_url: Option<String>,
    },
}

/// What sits between a PostgreSQL store's connections and the server
/// (`pooler=` in a store URL).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum PgPooler {
    /// Nothing, or a session-mode pooler: each connection keeps one server
    /// connection, so statements are prepared once and kept.
    #[default]
    None,
    /// A transaction-mode pooler (PgBouncer's `pool_mode = transaction`):
    /// each transaction, and each statement outside one, may run on a
    /// different server connection. Statements then run unnamed, nothing
    /// is set per session, and LISTEN needs its own direct URL.
    Transaction,
}

impl PgPooler {
    /// The pooler named by a `pooler` value, if any.
    pub fn from_param(value: &str) -> Option<PgPooler> {
        Some(match value {
            "none" => PgPooler::None,
            "transaction" => PgPooler::Transaction,
            _ => return None,
        })
    }
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
    ///     relaxed_writes: false,
    ///     pool_size: None,
    ///     pooler: alkstore_core::url::PgPooler::None,
    ///     listen_url: None,
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
            if path.starts_with("file:") {
                // Each connection (writer, readers, watcher) would open its
                // own database.
                return Err(bad(
                    "URI databases are not supported; use a file path, or sqlite://:memory: for an in-memory store",
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
            let mut relaxed_writes = false;
            let mut pool_size = None;
            let mut pooler = PgPooler::None;
            let mut listen_url = None;
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
                } else if k == "relaxed_writes" {
                    relaxed_writes = match v {
                        "true" => true,
                        "false" => false,
                        _ => return Err(bad("relaxed_writes must be true or false")),
                    };
                } else if k == "pool_size" {
                    pool_size = match v.parse::<usize>() {
                        Ok(n @ 1..=1000) => Some(n),
                        _ => return Err(bad("pool_size must be a whole number from 1 to 1000")),
                    };
                } else if k == "pooler" {
                    pooler = PgPooler::from_param(v)
                        .ok_or_else(|| bad("pooler must be none or transaction"))?;
                } else if k == "listen_url" {
                    let listen = percent_decode_url(v)
                        .ok_or_else(|| bad("listen_url is not valid percent-encoded UTF-8"))?;
                    listen_url = Some(parse_listen_url(&listen)?);
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
            // Reject a bad sslmode or sslrootcert now rather than at open.
            split_pg_tls(url)?;
            let conninfo = if kept.is_empty() {
                base.to_string()
            } else {
                format!("{base}?{}", kept.join("&"))
            };
            return Ok(StoreUrl::Postgres {
                conninfo,
                schema,
                relaxed_commits,
                relaxed_writes,
                pool_size,
                pooler,
                listen_url,
            });
        }
        Err(bad("expected sqlite://… or postgres://…"))
    }
}

/// A `listen_url`: a plain PostgreSQL URL (no alkstore parameters), its
/// TLS settings checked now.
fn parse_listen_url(listen: &str) -> Result<String> {
    let bad = |reason: &str| Error::InvalidUrl {
        url: mask_password(listen),
        reason: format!("listen_url: {reason}"),
    };
    if !(listen.starts_with("postgres://") || listen.starts_with("postgresql://")) {
        return Err(bad(
            "expected postgres://… (percent-encoded in the store URL)",
        ));
    }
    for (k, _) in query_pairs(split_query(listen).1) {
        if matches!(
            k,
            "schema" | "relaxed_commits" | "relaxed_writes" | "pool_size" | "pooler" | "listen_url"
        ) {
            return Err(bad(&format!(
                "{k} belongs to the store URL, not to listen_url"
            )));
        }
    }
    split_pg_tls(listen)?;
    Ok(listen.to_string())
}

/// libpq's `sslmode`: whether a PostgreSQL connection is encrypted and what
/// of the server's certificate is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PgSslMode {
    /// Never encrypt.
    Disable,
    /// Encrypt when the server offers TLS, else go on in clear text; the
    /// certificate is not checked (libpq's default, and alkstore's).
    #[default]
    Prefer,
    /// Always encrypt (fail on a server without TLS); the certificate is not
    /// checked.
    Require,
    /// Encrypt, and check that the server's certificate chains to a trusted
    /// root; the host name is not compared.
    VerifyCa,
    /// Encrypt, check the chain, and check that the certificate names the
    /// host connected to.
    VerifyFull,
}

impl PgSslMode {
    /// The mode named by an `sslmode` value, if any.
    pub fn from_param(value: &str) -> Option<PgSslMode> {
        Some(match value {
            "disable" => PgSslMode::Disable,
            "prefer" => PgSslMode::Prefer,
            "require" => PgSslMode::Require,
            "verify-ca" => PgSslMode::VerifyCa,
            "verify-full" => PgSslMode::VerifyFull,
            _ => return None,
        })
    }

    /// The `sslmode` value naming this mode.
    pub fn as_param(self) -> &'static str {
        match self {
            PgSslMode::Disable => "disable",
            PgSslMode::Prefer => "prefer",
            PgSslMode::Require => "require",
            PgSslMode::VerifyCa => "verify-ca",
            PgSslMode::VerifyFull => "verify-full",
        }
    }
}

impl fmt::Display for PgSslMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_param())
    }
}

/// The TLS settings of a PostgreSQL connection string (see [`split_pg_tls`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PgTls {
    /// `sslmode` (default [`PgSslMode::Prefer`]).
    pub mode: PgSslMode,
    /// `sslrootcert`: a PEM file of CA certificates to trust instead of the
    /// system's roots. `None` when absent or `sslrootcert=system`.
    pub root_cert: Option<PathBuf>,
}

/// Take `sslmode` and `sslrootcert` out of a PostgreSQL connection string
/// (URL or key/value form): returns the rest, for tokio-postgres, and the
/// parsed settings. The last occurrence of a parameter wins, as in libpq.
///
/// ```
/// use alkstore_core::url::{split_pg_tls, PgSslMode};
/// let (rest, tls) =
///     split_pg_tls("postgres://u@db/app?sslmode=verify-full&sslrootcert=/etc/ca.pem").unwrap();
/// assert_eq!(rest, "postgres://u@db/app");
/// assert_eq!(tls.mode, PgSslMode::VerifyFull);
/// assert_eq!(tls.root_cert.as_deref(), Some(std::path::Path::new("/etc/ca.pem")));
/// let (rest, tls) = split_pg_tls("host=db sslmode=require user=u").unwrap();
/// assert_eq!((rest.as_str(), tls.mode), ("host=db user=u", PgSslMode::Require));
/// ```
pub fn split_pg_tls(conninfo: &str) -> Result<(String, PgTls)> {
    let bad = |reason: String| Error::InvalidUrl {
        url: mask_password(conninfo),
        reason,
    };
    let mut tls = PgTls::default();
    let mut take = |key: &str, value: &str| -> Result<bool> {
        match key {
            "sslmode" => {
                tls.mode = PgSslMode::from_param(value).ok_or_else(|| {
                    bad(format!(
                        "sslmode must be disable, prefer, require, verify-ca or verify-full, not {value:?}"
                    ))
                })?;
            }
            "sslrootcert" => {
                tls.root_cert = match value {
                    "" => return Err(bad("sslrootcert must name a PEM file".into())),
                    "system" => None,
                    path => Some(PathBuf::from(path)),
                };
            }
            _ => return Ok(false),
        }
        Ok(true)
    };
    let rest = if conninfo.starts_with("postgres://") || conninfo.starts_with("postgresql://") {
        let (base, query) = split_query(conninfo);
        let mut kept = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let v = percent_decode_url(v)
                .ok_or_else(|| bad(format!("{k} is not valid percent-encoded UTF-8")))?;
            if !take(k, &v)? {
                kept.push(pair);
            }
        }
        if kept.is_empty() {
            base.to_string()
        } else {
            format!("{base}?{}", kept.join("&"))
        }
    } else {
        let pairs = kv_pairs(conninfo).map_err(|e| bad(e.to_string()))?;
        let mut kept = Vec::new();
        for p in pairs {
            if !take(&p.key, &p.value)? {
                kept.push(&conninfo[p.start..p.end]);
            }
        }
        kept.join(" ")
    };
    Ok((rest, tls))
}

/// One `key=value` of a key/value connection string: its unescaped key and
/// value and where the pair sits in the string.
struct KvPair {
    key: String,
    value: String,
    start: usize,
    end: usize,
    value_start: usize,
}

/// Split a libpq key/value connection string (`host=h user='a b'`), with
/// libpq's quoting: values may be single-quoted, and `\` escapes a character.
fn kv_pairs(s: &str) -> std::result::Result<Vec<KvPair>, &'static str> {
    let mut pairs = Vec::new();
    let mut chars = s.char_indices().peekable();
    let skip_ws = |chars: &mut std::iter::Peekable<std::str::CharIndices<'_>>| {
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
    };
    loop {
        skip_ws(&mut chars);
        let Some(&(start, _)) = chars.peek() else {
            return Ok(pairs);
        };
        let mut key = String::new();
        while let Some((_, c)) = chars.next_if(|(_, c)| *c != '=' && !c.is_whitespace()) {
            key.push(c);
        }
        skip_ws(&mut chars);
        if chars.next_if(|(_, c)| *c == '=').is_none() {
            return Err("expected key=value pairs");
        }
        skip_ws(&mut chars);
        let value_start = chars.peek().map_or(s.len(), |&(i, _)| i);
        let mut value = String::new();
        let quoted = chars.next_if(|(_, c)| *c == '\'').is_some();
        let end = loop {
            match chars.next() {
                None if quoted => return Err("unterminated quoted value"),
                None => break s.len(),
                Some((i, c)) if !quoted && c.is_whitespace() => break i,
                Some((i, '\'')) if quoted => break i + 1,
                Some((_, '\\')) => match chars.next() {
                    Some((_, c)) => value.push(c),
                    None => return Err("a value ends with a lone backslash"),
                },
                Some((_, c)) => value.push(c),
            }
        };
        pairs.push(KvPair {
            key,
            value,
            start,
            end,
            value_start,
        });
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
    decode_percent(s, true)
}

/// Percent-decoding as tokio-postgres does it for URL parameters: `+` stays.
fn percent_decode_url(s: &str) -> Option<String> {
    decode_percent(s, false)
}

fn decode_percent(s: &str, plus_is_space: bool) -> Option<String> {
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
            b'+' if plus_is_space => {
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

/// A URL after its `scheme://`, with the password of its user info, its
/// `password=` parameter and any in its `listen_url=` replaced by `***`.
fn mask_after_scheme(rest: &str) -> String {
    let (base, query) = split_query(rest);
    let base = match base.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{user}:***@{host}"),
            None => base.to_string(),
        },
        None => base.to_string(),
    };
    if !rest.contains('?') {
        return base;
    }
    let query: Vec<String> = query
        .split('&')
        .map(|p| match p.split_once('=') {
            Some(("password", _)) => "password=***".to_string(),
            // A URL in a URL (percent-encoded): shown decoded, masked.
            Some(("listen_url", v)) => match percent_decode_url(v) {
                Some(inner) => format!("listen_url={}", mask_password(&inner)),
                None => "listen_url=***".to_string(),
            },
            _ => p.to_string(),
        })
        .collect();
    format!("{base}?{}", query.join("&"))
}

/// Replace the password of a connection string with `***` for error
/// messages and logs: the one in a URL's user info or its `password=`
/// parameter, or a key/value string's `password=…`.
pub fn mask_password(url: &str) -> String {
    if let Some((scheme, rest)) = url.split_once("://") {
        // A scheme is letters, digits, `+`, `-` and `.`; anything else
        // before `://` is text to mask like any other.
        let is_scheme = !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
        if is_scheme {
            return format!("{scheme}://{}", mask_after_scheme(rest));
        }
    }
    let masked = if url.contains("password") {
        match kv_pairs(url) {
            Ok(pairs) => {
                let mut out = String::with_capacity(url.len());
                let mut from = 0;
                for p in pairs.iter().filter(|p| p.key == "password") {
                    out.push_str(&url[from..p.value_start]);
                    out.push_str("***");
                    from = p.end;
                }
                out.push_str(&url[from..]);
                out
            }
            // Not parseable: show nothing that might be the password.
            Err(_) => return "***".to_string(),
        }
    } else {
        url.to_string()
    };
    // URL-shaped text without its scheme (`user:secret@host/db`, the
    // scheme left out by mistake) still has its user info masked.
    mask_userinfo(&masked)
}

/// `user:secret@` user info in text without a scheme, its secret replaced
/// by `***`: in each word (split at whitespace) with an `@`, what lies
/// between the word's first `:` and its last `@`.
fn mask_userinfo(text: &str) -> String {
    text.split_inclusive(char::is_whitespace)
        .map(|word| match word.rfind('@') {
            Some(at) => match word[..at].find(':') {
                Some(colon) => format!("{}***{}", &word[..=colon], &word[at..]),
                None => word.to_string(),
            },
            None => word.to_string(),
        })
        .collect()
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
        assert_eq!(
            StoreUrl::parse("sqlite://:memory:").ok(),
            Some(StoreUrl::Sqlite {
                path: ":memory:".into(),
                synchronous_full: false
            })
        );
        let u = StoreUrl::parse("postgres://a:b@h:5/d?sslmode=disable&schema=x%22%3B%20DROP").ok();
        assert_eq!(
            u,
            Some(StoreUrl::Postgres {
                conninfo: "postgres://a:b@h:5/d?sslmode=disable".into(),
                schema: "x\"; DROP".into(),
                relaxed_commits: true,
                relaxed_writes: false,
                pool_size: None,
                pooler: PgPooler::None,
                listen_url: None,
            })
        );
        let u = StoreUrl::parse("postgres://h/d?relaxed_commits=false&pool_size=8").ok();
        assert_eq!(
            u,
            Some(StoreUrl::Postgres {
                conninfo: "postgres://h/d".into(),
                schema: "alkstore".into(),
                relaxed_commits: false,
                relaxed_writes: false,
                pool_size: Some(8),
                pooler: PgPooler::None,
                listen_url: None,
            })
        );
        let u = StoreUrl::parse("postgres://h/d?relaxed_writes=true").ok();
        assert!(
            matches!(
                u,
                Some(StoreUrl::Postgres {
                    relaxed_writes: true,
                    relaxed_commits: true,
                    ..
                })
            ),
            "{u:?}"
        );
        // Through PgBouncer, listening straight to the server.
        let u = StoreUrl::parse(
            "postgres://u@bouncer:6432/d?pooler=transaction\
             &listen_url=postgres%3A%2F%2Fu%40db%3A5432%2Fd%3Fsslmode%3Ddisable",
        )
        .ok();
        assert_eq!(
            u,
            Some(StoreUrl::Postgres {
                conninfo: "postgres://u@bouncer:6432/d".into(),
                schema: "alkstore".into(),
                relaxed_commits: true,
                relaxed_writes: false,
                pool_size: None,
                pooler: PgPooler::Transaction,
                listen_url: Some("postgres://u@db:5432/d?sslmode=disable".into()),
            })
        );
    }

    #[test]
    fn masks_a_password_inside_listen_url() {
        let url = "postgres://u:outer@b/d?listen_url=postgres%3A%2F%2Fu%3Ainner%40db%2Fd";
        let masked = mask_password(url);
        assert!(
            !masked.contains("outer") && !masked.contains("inner"),
            "{masked}"
        );
        assert!(
            masked.contains("listen_url=postgres://u:***@db/d"),
            "{masked}"
        );
        // A refused listen_url does not show its password either.
        let bad = "postgres://b/d?listen_url=mysql%3A%2F%2Fu%3Ainner%40db";
        let err = StoreUrl::parse(bad)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            err.contains("listen_url") && !err.contains("inner"),
            "{err}"
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
            "postgres://h/d?relaxed_writes=yes",
            "postgres://h/d?pool_size=0",
            "postgres://h/d?pool_size=1001",
            "postgres://h/d?pool_size=many",
            "postgres://h/d?schema=a&schema=b",
            "postgres://h/d?sslmode=disable&sslmode=require",
            "sqlite://a.db?synchronous=full&synchronous=normal",
            "sqlite://file::memory:?cache=shared",
            "postgres://h/d?sslmode=bogus",
            "postgres://h/d?sslmode=verify_full",
            "postgres://h/d?sslmode=",
            "postgres://h/d?sslrootcert=",
            "postgres://h/d?sslrootcert=%zz",
            "postgres://h/d?pooler=session",
            "postgres://h/d?listen_url=",
            "postgres://h/d?listen_url=sqlite%3A%2F%2Fa.db",
            "postgres://h/d?listen_url=postgres%3A%2F%2Fh%2Fd%3Fschema%3Dx",
            "postgres://h/d?listen_url=postgres%3A%2F%2Fh%2Fd%3Fsslmode%3Dbogus",
            "postgres://h/d?listen_url=%zz",
        ] {
            let err = StoreUrl::parse(bad).err();
            assert!(
                matches!(err, Some(Error::InvalidUrl { .. })),
                "{bad}: {err:?}"
            );
        }
    }

    proptest::proptest! {
        /// Any text, under any scheme, parses or is refused as an invalid
        /// URL; splitting TLS parameters and masking never panic, and a
        /// refusal never shows a password given in the URL.
        #[test]
        fn arbitrary_urls_never_panic_or_show_a_password(
            scheme in proptest::prop_oneof![
                proptest::strategy::Just("sqlite://"),
                proptest::strategy::Just("postgres://"),
                proptest::strategy::Just("postgresql://"),
                proptest::strategy::Just(""),
            ],
            rest in "\\PC{0,60}",
            password in "[A-Za-z0-9]{6,12}",
        ) {
            for url in [format!("{scheme}{rest}"), format!("{scheme}u:{password}@{rest}")] {
                let shown = format!(":{password}@");
                if let Err(e) = StoreUrl::parse(&url) {
                    proptest::prop_assert_eq!(e.kind(), crate::ErrorKind::InvalidUrl, "{}", url);
                    proptest::prop_assert!(!e.to_string().contains(&shown), "{}", e);
                }
                let _ = split_pg_tls(&url);
                let _ = mask_password(&url);
            }
        }

        /// A PostgreSQL URL built from valid parts parses back to them, and
        /// its masked form hides the password.
        #[test]
        fn a_postgres_url_built_from_parts_parses_back(
            user in "[a-z]{1,8}",
            password in "[A-Za-z0-9]{1,12}",
            host in "[a-z]{1,10}",
            port in 1u16..65535,
            db in "[a-z]{1,10}",
            schema in "s[a-z0-9_]{0,20}",
            pool in proptest::option::of(1usize..1000),
            pooled in proptest::bool::ANY,
            listen in proptest::option::of(("[A-Za-z0-9]{1,12}", "[a-z]{1,10}")),
        ) {
            let base = format!("postgres://{user}:{password}@{host}:{port}/{db}");
            let mut url = format!("{base}?schema={schema}");
            if let Some(n) = pool {
                url.push_str(&format!("&pool_size={n}"));
            }
            if pooled {
                url.push_str("&pooler=transaction");
            }
            let listen_url = listen.as_ref().map(|(secret, host)| {
                format!("postgres://{user}:{secret}@{host}:5432/{db}")
            });
            if let Some(l) = &listen_url {
                let encoded = l.replace(':', "%3A").replace('/', "%2F").replace('@', "%40");
                url.push_str(&format!("&listen_url={encoded}"));
            }
            let parsed = StoreUrl::parse(&url);
            proptest::prop_assert_eq!(
                parsed.ok(),
                Some(StoreUrl::Postgres {
                    conninfo: base,
                    schema,
                    relaxed_commits: true,
                    relaxed_writes: false,
                    pool_size: pool,
                    pooler: if pooled { PgPooler::Transaction } else { PgPooler::None },
                    listen_url: listen_url.clone(),
                })
            );
            let shown = format!(":{password}@");
            let masked = mask_password(&url);
            proptest::prop_assert!(!masked.contains(&shown));
            if let Some((secret, _)) = &listen {
                let shown = format!(":{secret}@");
                proptest::prop_assert!(!masked.contains(&shown));
            }
        }
    }

    #[test]
    fn masks_passwords() {
        assert_eq!(
            mask_password("postgres://u:secret@h/d"),
            "postgres://u:***@h/d"
        );
        assert_eq!(
            mask_password("postgres://u@h/d?sslmode=require&password=secret"),
            "postgres://u@h/d?sslmode=require&password=***"
        );
        assert_eq!(mask_password("postgres://h/d"), "postgres://h/d");
        assert_eq!(
            mask_password("host=h password='se cret' user=u"),
            "host=h password=*** user=u"
        );
        assert_eq!(mask_password("host=h password='unterminated"), "***");
        assert_eq!(mask_password("host=h user=u"), "host=h user=u");
        // A URL whose scheme was left out still hides its password.
        assert_eq!(mask_password("u:secret@h/d"), "u:***@h/d");
    }

    #[test]
    fn store_urls_keep_tls_parameters_for_the_engine() {
        for mode in ["disable", "prefer", "require", "verify-ca", "verify-full"] {
            let url = format!("postgres://h/d?sslmode={mode}&sslrootcert=/ca.pem&schema=s");
            let Ok(StoreUrl::Postgres { conninfo, .. }) = StoreUrl::parse(&url) else {
                panic!("{url} parses");
            };
            assert_eq!(
                conninfo,
                format!("postgres://h/d?sslmode={mode}&sslrootcert=/ca.pem")
            );
        }
    }

    #[test]
    fn splits_tls_parameters_from_urls() {
        let (rest, tls) = split_pg_tls("postgres://u:p@h:5/d").expect("plain");
        assert_eq!(rest, "postgres://u:p@h:5/d");
        assert_eq!(tls, PgTls::default());
        assert_eq!(tls.mode, PgSslMode::Prefer, "libpq's default");

        for mode in ["disable", "prefer", "require", "verify-ca", "verify-full"] {
            let (rest, tls) = split_pg_tls(&format!(
                "postgresql://h/d?connect_timeout=3&sslmode={mode}"
            ))
            .expect(mode);
            assert_eq!(rest, "postgresql://h/d?connect_timeout=3");
            assert_eq!(tls.mode.as_param(), mode);
            assert_eq!(PgSslMode::from_param(mode), Some(tls.mode));
            assert_eq!(tls.mode.to_string(), mode);
        }

        let (rest, tls) = split_pg_tls(
            "postgres://h/d?sslrootcert=%2Ftmp%2Fmy%20ca+1.pem&sslmode=require&sslmode=verify-ca&user=u",
        )
        .expect("encoded path");
        assert_eq!(rest, "postgres://h/d?user=u");
        assert_eq!(tls.mode, PgSslMode::VerifyCa, "the last one wins");
        assert_eq!(
            tls.root_cert,
            Some(PathBuf::from("/tmp/my ca+1.pem")),
            "percent-decoded, + kept"
        );

        let (_, tls) = split_pg_tls("postgres://h/d?sslrootcert=system&sslmode=verify-full")
            .expect("system roots");
        assert_eq!(tls.root_cert, None);
    }

    #[test]
    fn splits_tls_parameters_from_key_value_strings() {
        let (rest, tls) = split_pg_tls(
            r"host=h  sslmode = verify-full user='a b' sslrootcert='/x y/c\\a.pem' dbname=d\\x",
        )
        .expect("key/value");
        assert_eq!(rest, r"host=h user='a b' dbname=d\\x");
        assert_eq!(tls.mode, PgSslMode::VerifyFull);
        assert_eq!(tls.root_cert, Some(PathBuf::from(r"/x y/c\a.pem")));

        let (rest, tls) = split_pg_tls("").expect("empty");
        assert_eq!((rest.as_str(), tls), ("", PgTls::default()));
    }

    #[test]
    fn rejects_bad_tls_parameters_without_showing_the_password() {
        for bad in [
            "postgres://u:secret@h/d?sslmode=bogus",
            "postgres://u:secret@h/d?sslmode=VERIFY-FULL",
            "postgres://u:secret@h/d?sslrootcert=",
            "postgres://u:secret@h/d?sslrootcert=%ff",
            "host=h password=secret sslmode=bogus",
            "host=h password=secret sslrootcert=''",
            "host=h password=secret sslmode",
            "host=h password='secret",
        ] {
            let err = split_pg_tls(bad).err();
            let Some(err @ Error::InvalidUrl { .. }) = err else {
                panic!("{bad}: {err:?}");
            };
            let msg = err.to_string();
            assert!(!msg.contains("secret"), "{msg}");
            if bad.contains("bogus") {
                assert!(msg.contains("verify-full"), "says what is allowed: {msg}");
            }
        }
    }
}
