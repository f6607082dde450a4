//! Tells the tests what this machine lacks, so that a test needing it is
//! reported as skipped (nextest's count) rather than passing having done
//! nothing. Under `CI` nothing is skipped: the tests themselves then fail
//! on what is missing (`scripts/test` provides all of it).

use std::path::Path;

fn main() {
    println!("cargo::rerun-if-env-changed=CI");
    println!("cargo::rerun-if-env-changed=ALKSTORE_TEST_PGBOUNCER_URL");
    println!("cargo::rustc-check-cfg=cfg(alkstore_no_pgbouncer)");
    println!("cargo::rustc-check-cfg=cfg(alkstore_no_tls_server)");
    let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false");
    if ci {
        return;
    }
    if std::env::var("ALKSTORE_TEST_PGBOUNCER_URL").map_or(true, |u| u.is_empty()) {
        println!("cargo::rustc-cfg=alkstore_no_pgbouncer");
    }
    // The TLS test starts a private server from the machine's PostgreSQL
    // binaries and makes its certificates with the openssl CLI.
    let server = std::fs::read_dir("/usr/lib/postgresql").is_ok_and(|dirs| {
        dirs.flatten()
            .any(|d| d.path().join("bin/postgres").is_file())
    });
    let openssl = ["/usr/bin/openssl", "/usr/local/bin/openssl", "/bin/openssl"]
        .iter()
        .any(|p| Path::new(p).is_file());
    if !(server && openssl) {
        println!("cargo::rustc-cfg=alkstore_no_tls_server");
    }
}
