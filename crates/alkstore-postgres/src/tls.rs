//! TLS for every connection the engine opens (the pool, the LISTEN
//! connection, the test helpers): libpq's `sslmode` and `sslrootcert` are taken
//! out of the connection string (tokio-postgres only knows `disable`,
//! `prefer` and `require`) and turned into a tokio-postgres [`SslMode`] plus a
//! connector configured to check what the mode asks for.
//!
//! | `sslmode`     | encrypted                  | chain checked | host name checked |
//! |---------------|----------------------------|---------------|-------------------|
//! | `disable`     | no                         | –             | –                 |
//! | `prefer`      | if the server offers it    | no            | no                |
//! | `require`     | yes                        | no            | no                |
//! | `verify-ca`   | yes                        | yes           | no                |
//! | `verify-full` | yes                        | yes           | yes               |
//!
//! The chain is checked against `sslrootcert` (a PEM file of CA certificates)
//! when given, else against the system's roots.

use std::str::FromStr;

use alkstore_core::url::{mask_password, split_pg_tls, PgSslMode, PgTls};
use alkstore_core::{Error, Result};
use tokio_postgres::config::SslMode;

/// The connector every connection is made with.
#[cfg(feature = "tls")]
pub(crate) type Connector = postgres_native_tls::MakeTlsConnector;
/// The connector every connection is made with (built without TLS).
#[cfg(not(feature = "tls"))]
pub(crate) type Connector = tokio_postgres::NoTls;

/// Parse `conninfo` (URL or key/value) into a tokio-postgres config whose
/// `ssl_mode` is set, and the connector its `sslmode` needs. A bad value or
/// an unreadable `sslrootcert` is [`Error::InvalidUrl`].
pub(crate) fn prepare(conninfo: &str) -> Result<(tokio_postgres::Config, Connector)> {
    let (rest, tls) = split_pg_tls(conninfo)?;
    let mut config = tokio_postgres::Config::from_str(&rest).map_err(|e| Error::InvalidUrl {
        url: mask_password(conninfo),
        // The driver's message is "invalid connection string"; the
        // parameter it refused is in the source.
        reason: match std::error::Error::source(&e) {
            Some(cause) => format!("{e}: {cause}"),
            None => e.to_string(),
        },
    })?;
    config.ssl_mode(match tls.mode {
        PgSslMode::Disable => SslMode::Disable,
        PgSslMode::Prefer => SslMode::Prefer,
        PgSslMode::Require | PgSslMode::VerifyCa | PgSslMode::VerifyFull => SslMode::Require,
    });
    let connector = connector(&tls).map_err(|e| match e {
        Error::InvalidUrl { reason, .. } => Error::InvalidUrl {
            url: mask_password(conninfo),
            reason,
        },
        other => other,
    })?;
    Ok((config, connector))
}

/// What a connection made with `config` reaches, for error messages (no
/// password): `PostgreSQL at h:5432 (database "d", user "u")`.
pub(crate) fn target(config: &tokio_postgres::Config) -> String {
    use tokio_postgres::config::Host;
    let ports = config.get_ports();
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, host)| {
            let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
            match host {
                Host::Tcp(name) if name.contains(':') => format!("[{name}]:{port}"),
                Host::Tcp(name) => format!("{name}:{port}"),
                #[cfg(unix)]
                Host::Unix(dir) => format!("{}/.s.PGSQL.{port}", dir.display()),
            }
        })
        .collect();
    let mut text = if hosts.is_empty() {
        "PostgreSQL (no host given)".to_string()
    } else {
        format!("PostgreSQL at {}", hosts.join(", "))
    };
    let mut about = Vec::new();
    if let Some(db) = config.get_dbname() {
        about.push(format!("database {db:?}"));
    }
    if let Some(user) = config.get_user() {
        about.push(format!("user {user:?}"));
    }
    if !about.is_empty() {
        text.push_str(&format!(" ({})", about.join(", ")));
    }
    text
}

/// Connect once, outside any pool, and drive the connection on a task
/// (for `testing`).
#[cfg(any(test, feature = "testing"))]
pub(crate) async fn connect(
    conninfo: &str,
) -> Result<(
    tokio_postgres::Client,
    tokio::task::JoinHandle<Result<(), tokio_postgres::Error>>,
)> {
    let (config, connector) = prepare(conninfo)?;
    let (client, conn) = config
        .connect(connector)
        .await
        .map_err(|e| crate::pool::refused(&target(&config), e))?;
    Ok((client, tokio::spawn(conn)))
}

#[cfg(feature = "tls")]
fn connector(tls: &PgTls) -> Result<Connector> {
    let mut builder = native_tls::TlsConnector::builder();
    match tls.mode {
        // libpq checks nothing in these modes (and `disable` never uses it).
        PgSslMode::Disable | PgSslMode::Prefer | PgSslMode::Require => {
            builder.danger_accept_invalid_certs(true);
        }
        PgSslMode::VerifyCa => {
            builder.danger_accept_invalid_hostnames(true);
        }
        PgSslMode::VerifyFull => {}
    }
    if let Some(path) = &tls.root_cert {
        let bad = |reason: String| Error::InvalidUrl {
            url: String::new(),
            reason: format!("sslrootcert {}: {reason}", path.display()),
        };
        let pem = std::fs::read(path).map_err(|e| bad(format!("cannot read it: {e}")))?;
        let roots = native_tls::Certificate::stack_from_pem(&pem)
            .map_err(|e| bad(format!("not a PEM file of certificates: {e}")))?;
        if roots.is_empty() {
            return Err(bad("holds no PEM certificate".into()));
        }
        // As libpq: the file's roots replace the system's.
        builder.disable_built_in_roots(true);
        for root in roots {
            builder.add_root_certificate(root);
        }
    }
    let connector = builder
        .build()
        .map_err(|e| Error::connect("PostgreSQL (setting up TLS)", e))?;
    Ok(postgres_native_tls::MakeTlsConnector::new(connector))
}

#[cfg(not(feature = "tls"))]
fn connector(tls: &PgTls) -> Result<Connector> {
    match tls.mode {
        // `prefer` allows clear text, which is all this build can do.
        PgSslMode::Disable | PgSslMode::Prefer => Ok(tokio_postgres::NoTls),
        mode => Err(Error::InvalidUrl {
            url: String::new(),
            reason: format!(
                "sslmode={mode} needs TLS, and alkstore-postgres was built without its `tls` feature"
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alkstore_core::ErrorKind;

    fn kind(conninfo: &str) -> Option<ErrorKind> {
        prepare(conninfo).err().map(|e| e.kind())
    }

    #[test]
    fn maps_sslmode_onto_tokio_postgres() {
        let mode = |s: &str| prepare(s).map(|(c, _)| c.get_ssl_mode()).ok();
        assert_eq!(
            mode("postgres://h/d"),
            Some(SslMode::Prefer),
            "libpq default"
        );
        assert_eq!(
            mode("postgres://h/d?sslmode=disable"),
            Some(SslMode::Disable)
        );
        assert_eq!(mode("host=h sslmode=prefer"), Some(SslMode::Prefer));
        #[cfg(feature = "tls")]
        for m in ["require", "verify-ca", "verify-full"] {
            assert_eq!(
                mode(&format!("postgres://h/d?sslmode={m}")),
                Some(SslMode::Require),
                "{m}"
            );
        }
    }

    #[test]
    fn keeps_the_other_parameters() {
        let (config, _) = prepare(
            "postgres://u:pw@h:6543/d?sslmode=disable&application_name=x&sslrootcert=system",
        )
        .expect("valid");
        assert_eq!(config.get_user(), Some("u"));
        assert_eq!(config.get_ports(), &[6543]);
        assert_eq!(config.get_application_name(), Some("x"));
        assert_eq!(config.get_dbname(), Some("d"));
    }

    #[test]
    fn rejects_bad_values_as_invalid_urls() {
        assert_eq!(
            kind("postgres://h/d?sslmode=bogus"),
            Some(ErrorKind::InvalidUrl)
        );
        assert_eq!(kind("host=h sslmode=bogus"), Some(ErrorKind::InvalidUrl));
        assert_eq!(
            kind("postgres://h/d?sslmode=prefer&sslnegotiation=bogus"),
            Some(ErrorKind::InvalidUrl),
            "other values still go through tokio-postgres's checks"
        );
    }

    #[cfg(feature = "tls")]
    #[test]
    fn rejects_unusable_root_files_with_the_path_and_no_password() {
        let dir = tempfile::tempdir().expect("tempdir");
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, b"no certificate here\n").expect("write");
        let garbled = dir.path().join("garbled.pem");
        std::fs::write(
            &garbled,
            b"-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n",
        )
        .expect("write");
        let missing = dir.path().join("missing.pem");
        for path in [&empty, &garbled, &missing] {
            let url = format!(
                "postgres://u:secret@h/d?sslmode=verify-full&sslrootcert={}",
                path.display()
            );
            let err = prepare(&url).err().expect("rejected");
            assert_eq!(err.kind(), ErrorKind::InvalidUrl, "{err}");
            let msg = err.to_string();
            assert!(msg.contains(&path.display().to_string()), "{msg}");
            assert!(!msg.contains("secret"), "{msg}");
        }
    }

    #[cfg(not(feature = "tls"))]
    #[test]
    fn without_the_feature_refuses_modes_that_need_tls() {
        for m in ["require", "verify-ca", "verify-full"] {
            let err =
                prepare(&format!("postgres://u:secret@h/d?sslmode={m}")).expect_err("refused");
            assert_eq!(err.kind(), ErrorKind::InvalidUrl);
            let msg = err.to_string();
            assert!(msg.contains("`tls` feature"), "{msg}");
            assert!(!msg.contains("secret"), "{msg}");
        }
        assert!(prepare("postgres://h/d?sslmode=prefer").is_ok());
    }
}
