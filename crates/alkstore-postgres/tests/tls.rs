//! `sslmode` and `sslrootcert` against a private PostgreSQL server that this
//! test starts with `ssl=on` and a certificate it makes (openssl CLI): a CA,
//! and a server certificate for `localhost` only (no IP address in its
//! subjectAltName), so `verify-full` fails on host `127.0.0.1` while
//! `verify-ca` with the same CA passes. The server runs once for every check,
//! is restarted once with `ssl=off` for the clear-text checks, and is stopped
//! (`pg_ctl stop -m immediate`) and deleted by a drop guard, also on panic.
//!
//! Skips with a message when the PostgreSQL binaries or the openssl CLI are
//! missing, unless `CI` is set: then it fails.

#![cfg(feature = "tls")]

use alkstore_core::Writes as _;
use std::error::Error as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use alkstore_core::url::StoreUrl;
use alkstore_core::{Error, ErrorKind, JobClaimParams, NewJob, QueueEngine};
use alkstore_postgres::{testing, PgEngine, PgOptions};

/// A private server in a temporary directory; stopped and deleted on drop.
struct Server {
    bindir: PathBuf,
    /// Holds the data directory, the certificates, the socket and the log.
    dir: tempfile::TempDir,
    port: u16,
    /// initdb refuses root: run the server's commands as `postgres` then.
    as_postgres: bool,
}

impl Server {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Run a shell command line as the server's owner; panics on failure.
    fn run(&self, line: &str) {
        let out = if self.as_postgres {
            Command::new("su")
                .args(["postgres", "-s", "/bin/sh", "-c", line])
                .output()
        } else {
            Command::new("/bin/sh").args(["-c", line]).output()
        };
        let out = out.expect("run a command");
        assert!(
            out.status.success(),
            "{line}: {}\n{}{}\nserver log:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(self.path("server.log")).unwrap_or_default()
        );
    }

    fn pg_ctl(&self) -> String {
        format!(
            "{}/pg_ctl -D {}/data",
            self.bindir.display(),
            self.dir.path().display()
        )
    }

    fn start(&self, ssl: bool) {
        let dir = self.dir.path().display();
        let ssl = if ssl {
            format!("-c ssl=on -c ssl_cert_file={dir}/server.crt -c ssl_key_file={dir}/server.key")
        } else {
            "-c ssl=off".to_string()
        };
        self.run(&format!(
            "{} -l {dir}/server.log -w -t 60 -o '-p {} -k {dir} -c listen_addresses=127.0.0.1 \
             -c fsync=off {ssl}' start >/dev/null",
            self.pg_ctl(),
            self.port
        ));
    }

    fn stop(&self, mode: &str) {
        self.run(&format!("{} -w -m {mode} stop >/dev/null", self.pg_ctl()));
    }

    /// `postgres://postgres@HOST:PORT/postgres?PARAMS`
    fn url(&self, host: &str, params: &str) -> String {
        format!("postgres://postgres@{host}:{}/postgres?{params}", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.path("data/postmaster.pid").exists() {
            let line = format!("{} -m immediate stop >/dev/null 2>&1", self.pg_ctl());
            let _ = if self.as_postgres {
                Command::new("su")
                    .args(["postgres", "-s", "/bin/sh", "-c", &line])
                    .status()
            } else {
                Command::new("/bin/sh").args(["-c", &line]).status()
            };
        }
        // `dir` is deleted after this.
    }
}

/// The newest `/usr/lib/postgresql/*/bin` holding initdb, pg_ctl and postgres.
fn postgres_bindir() -> Option<PathBuf> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            ["initdb", "pg_ctl", "postgres"]
                .iter()
                .all(|b| bin.join(b).exists())
                .then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin)
}

/// Run `openssl` with whitespace-separated `args` in `dir`.
fn openssl(dir: &Path, args: &str) {
    let out = Command::new("openssl")
        .current_dir(dir)
        .args(args.split_whitespace())
        .output()
        .expect("run openssl");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA (`{name}.pem`, `{name}.key`).
fn make_ca(dir: &Path, name: &str) {
    openssl(
        dir,
        &format!(
            "req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
             -keyout {name}.key -out {name}.pem -days 2 -subj /CN=alkstore-test-{name} \
             -addext basicConstraints=critical,CA:TRUE \
             -addext keyUsage=critical,keyCertSign,cRLSign"
        ),
    );
}

/// Start the private server, or `None` (after saying why) when this machine
/// cannot run one and `CI` is not set.
fn start_server() -> Option<Server> {
    let bindir = postgres_bindir();
    let have_openssl = Command::new("openssl")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    let Some(bindir) = bindir.filter(|_| have_openssl) else {
        let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false");
        assert!(
            !ci,
            "CI is set but the PostgreSQL server binaries (/usr/lib/postgresql/*/bin) or the \
             openssl CLI are missing"
        );
        eprintln!(
            "skipping the TLS test: no PostgreSQL server binaries under /usr/lib/postgresql \
             or no openssl CLI"
        );
        return None;
    };
    let as_postgres = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0");
    let dir = tempfile::Builder::new()
        .prefix("alk-tls-")
        .tempdir()
        .expect("temp dir");
    let path = dir.path().to_path_buf();
    let path = path.as_path();
    let text = path.to_str().expect("a UTF-8 temp path");
    assert!(
        text.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-".contains(&b)),
        "{text} needs no shell quoting"
    );
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();

    make_ca(path, "ca");
    make_ca(path, "other-ca");
    openssl(
        path,
        "req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
         -keyout server.key -out server.csr -subj /CN=localhost",
    );
    std::fs::write(
        path.join("server.ext"),
        "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\n\
         keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .expect("write server.ext");
    openssl(
        path,
        "x509 -req -in server.csr -CA ca.pem -CAkey ca.key -set_serial 2 -days 2 \
         -out server.crt -extfile server.ext",
    );
    // The server wants its key private to it.
    let chmod = Command::new("chmod")
        .args(["0600", &format!("{text}/server.key")])
        .status()
        .expect("chmod");
    assert!(chmod.success());
    if as_postgres {
        let chown = Command::new("chown")
            .args(["-R", "postgres", text])
            .status()
            .expect("chown");
        assert!(chown.success());
    }
    let server = Server {
        bindir,
        dir,
        port,
        as_postgres,
    };
    server.run(&format!(
        "{}/initdb -D {text}/data -A trust -U postgres --no-sync >/dev/null",
        server.bindir.display()
    ));
    server.start(true);
    Some(server)
}

async fn open(url: &str) -> Result<PgEngine, Error> {
    let mut opts = PgOptions::new(url, "alkstore");
    opts.pool_size = 2;
    PgEngine::open(opts).await
}

/// Whether the engine's pooled session is encrypted.
async fn session_ssl(engine: &PgEngine) -> bool {
    engine
        .client()
        .await
        .expect("client")
        .query_one(
            "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )
        .await
        .expect("pg_stat_ssl")
        .get(0)
}

async fn connects(url: &str, encrypted: bool) {
    let engine = open(url)
        .await
        .unwrap_or_else(|e| panic!("{url}: {}", chain(&e)));
    assert_eq!(session_ssl(&engine).await, encrypted, "{url}");
}

/// Open must fail with a connect error mentioning `needle`.
async fn refused(url: &str, needle: &str) {
    let err = open(url)
        .await
        .err()
        .unwrap_or_else(|| panic!("{url} connected"));
    let text = chain(&err);
    assert_eq!(err.kind(), ErrorKind::Connect, "{url}: {text}");
    assert!(
        text.to_lowercase().contains(needle),
        "{url}: expected {needle:?} in {text}"
    );
}

/// An error and its sources, for messages.
fn chain(e: &Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[cfg_attr(
    alkstore_no_tls_server,
    ignore = "skipped: no PostgreSQL server binaries under /usr/lib/postgresql or no openssl CLI"
)]
#[tokio::test]
async fn sslmodes_against_a_private_server() {
    let started = Instant::now();
    let Some(server) = start_server() else {
        return;
    };
    eprintln!("private server up in {:?}", started.elapsed());
    let ca = server.path("ca.pem");
    let ca = ca.display();
    let other_ca = server.path("other-ca.pem");
    let other_ca = other_ca.display();

    // sslmode=require, the way `alk` and `Store::open` take a URL: the pools
    // and the LISTEN connection are encrypted, and jobs flow.
    let url = server.url("127.0.0.1", "sslmode=require&schema=tls_require");
    let Ok(StoreUrl::Postgres {
        conninfo,
        schema,
        relaxed_commits,
        ..
    }) = StoreUrl::parse(&url)
    else {
        panic!("{url} parses");
    };
    let mut opts = PgOptions::new(conninfo, schema);
    opts.relaxed_commits = relaxed_commits;
    let engine = PgEngine::open(opts)
        .await
        .unwrap_or_else(|e| panic!("{url}: {}", chain(&e)));
    assert!(session_ssl(&engine).await, "require encrypts");
    let _hints = engine.wake_hints();
    engine
        .job_enqueue(vec![NewJob::new("tls", b"over tls".to_vec())])
        .await
        .expect("enqueue");
    let jobs = engine
        .job_claim(JobClaimParams::new("tls", "w", 1))
        .await
        .expect("claim");
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].payload, b"over tls");
    let client = engine.client().await.expect("client");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        // Every alkstore session (durable pool, relaxed pool, LISTEN).
        let row = client
            .query_one(
                "SELECT count(*), count(*) FILTER (WHERE s.ssl), \
                        count(*) FILTER (WHERE a.query LIKE 'LISTEN %') \
                 FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) \
                 WHERE a.application_name = 'alkstore'",
                &[],
            )
            .await
            .expect("pg_stat_activity");
        let (all, encrypted, listening): (i64, i64, i64) = (row.get(0), row.get(1), row.get(2));
        assert_eq!(all, encrypted, "every session is encrypted");
        if listening == 1 && all >= 3 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "LISTEN and both pools connected: {all} sessions, {listening} listening"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(client);
    drop(engine);

    // No sslmode is libpq's `prefer`: encrypted when the server offers TLS.
    connects(&server.url("127.0.0.1", ""), true).await;
    connects(&server.url("127.0.0.1", "sslmode=prefer"), true).await;
    connects(&server.url("127.0.0.1", "sslmode=disable"), false).await;

    // verify-full: chain and host name.
    let verify_full_localhost = server.url(
        "localhost",
        &format!("sslmode=verify-full&sslrootcert={ca}"),
    );
    connects(&verify_full_localhost, true).await;
    // The test helpers connect the same way.
    testing::drop_schema(&verify_full_localhost, "no_such_schema")
        .await
        .expect("a helper connection with verify-full");
    // The certificate names localhost, not 127.0.0.1.
    refused(
        &server.url(
            "127.0.0.1",
            &format!("sslmode=verify-full&sslrootcert={ca}"),
        ),
        "mismatch",
    )
    .await;
    // verify-ca checks the same chain but not the name.
    connects(
        &server.url("127.0.0.1", &format!("sslmode=verify-ca&sslrootcert={ca}")),
        true,
    )
    .await;
    // The system's roots do not know our CA, and another CA is not ours.
    refused(
        &server.url("localhost", "sslmode=verify-ca"),
        "certificate verify failed",
    )
    .await;
    refused(
        &server.url("localhost", "sslmode=verify-full"),
        "certificate verify failed",
    )
    .await;
    refused(
        &server.url(
            "localhost",
            &format!("sslmode=verify-full&sslrootcert={other_ca}"),
        ),
        "certificate verify failed",
    )
    .await;
    // require does not look at the certificate, whatever the roots.
    connects(
        &server.url(
            "127.0.0.1",
            &format!("sslmode=require&sslrootcert={other_ca}"),
        ),
        true,
    )
    .await;
    // Bad values fail at open, before connecting.
    for (params, needle) in [
        ("sslmode=bogus", "sslmode must be"),
        (
            "sslmode=verify-full&sslrootcert=/no/such/ca.pem",
            "/no/such/ca.pem",
        ),
    ] {
        let err = open(&server.url("localhost", params))
            .await
            .err()
            .unwrap_or_else(|| panic!("{params} opened"));
        assert_eq!(err.kind(), ErrorKind::InvalidUrl, "{params}: {err}");
        assert!(err.to_string().contains(needle), "{params}: {err}");
    }

    // The same server without TLS. (The machine's main server at
    // DATABASE_URL may have ssl on, as Debian's cluster does, so it cannot
    // stand in for a server without TLS.)
    server.stop("fast");
    server.start(false);
    refused(
        &server.url("127.0.0.1", "sslmode=require"),
        "does not support tls",
    )
    .await;
    refused(
        &server.url(
            "localhost",
            &format!("sslmode=verify-full&sslrootcert={ca}"),
        ),
        "does not support tls",
    )
    .await;
    connects(&server.url("127.0.0.1", "sslmode=prefer"), false).await;
    connects(&server.url("127.0.0.1", ""), false).await;

    drop(server);
    eprintln!("TLS checks done in {:?}", started.elapsed());
}
