//! A worker keeps going through a PostgreSQL restart: its pool reconnects,
//! its LISTEN connection reconnects, and every job completes. The server is a
//! private instance (own data directory and port, run as the `postgres` user
//! when the test runs as root), so restarting it disturbs no other test.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use alkstore::{queue::QueueOpts, JobCtx, Store, Worker};

struct PrivatePg {
    bin: PathBuf,
    data: PathBuf,
    port: u16,
    _dir: tempfile::TempDir,
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout.starts_with(b"0"))
        .unwrap_or(false)
}

/// Run a PostgreSQL tool, as the postgres user when we are root.
fn pg_tool(bin: &Path, tool: &str, args: &[String]) -> std::process::Output {
    let exe = bin.join(tool);
    let out = if is_root() {
        let quoted: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
        Command::new("su")
            .args(["postgres", "-s", "/bin/sh", "-c"])
            .arg(format!("{} {}", exe.display(), quoted.join(" ")))
            .output()
    } else {
        Command::new(&exe).args(args).output()
    };
    out.unwrap_or_else(|e| panic!("run {tool}: {e}"))
}

impl PrivatePg {
    fn start() -> PrivatePg {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .expect("PostgreSQL binaries under /usr/lib/postgresql (scripts/ensure-postgres installs them)")
            .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
            .filter(|p| p.join("initdb").exists())
            .max()
            .expect("an initdb");
        let dir = tempfile::Builder::new()
            .prefix("alk-pg-")
            .tempdir_in("/tmp")
            .expect("tmp");
        let data = dir.path().join("data");
        std::fs::create_dir(&data).expect("mkdir");
        if is_root() {
            assert!(Command::new("chown")
                .args(["-R", "postgres"])
                .arg(dir.path())
                .status()
                .expect("chown")
                .success());
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .expect("free port")
            .local_addr()
            .expect("addr")
            .port();
        let init = pg_tool(
            &bin,
            "initdb",
            &[
                "-D".into(),
                data.display().to_string(),
                "-A".into(),
                "trust".into(),
                "-U".into(),
                "postgres".into(),
            ],
        );
        assert!(
            init.status.success(),
            "initdb: {}",
            String::from_utf8_lossy(&init.stderr)
        );
        let pg = PrivatePg {
            bin,
            data,
            port,
            _dir: dir,
        };
        pg.ctl("start");
        pg
    }

    fn ctl(&self, action: &str) {
        let log = self.data.join("server.log").display().to_string();
        let mut args = vec![
            action.to_string(),
            "-D".into(),
            self.data.display().to_string(),
            "-w".into(),
            "-l".into(),
            log,
        ];
        if action != "stop" {
            args.push("-o".into());
            args.push(format!(
                "-p {} -k /tmp -c listen_addresses=127.0.0.1",
                self.port
            ));
        }
        if action != "start" {
            args.push("-m".into());
            args.push("fast".into());
        }
        let out = pg_tool(&self.bin, "pg_ctl", &args);
        assert!(
            out.status.success(),
            "pg_ctl {action}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for PrivatePg {
    fn drop(&mut self) {
        let args = vec![
            "stop".into(),
            "-D".into(),
            self.data.display().to_string(),
            "-m".into(),
            "immediate".into(),
        ];
        let _ = pg_tool(&self.bin, "pg_ctl", &args);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_survives_a_postgres_restart() {
    const JOBS: usize = 3_000;
    let pg = PrivatePg::start();
    let store = Store::open(&format!("{}?schema=restart", pg.url()))
        .await
        .expect("open");
    let q = store.queue_with(
        "r",
        QueueOpts {
            visibility_timeout: Duration::from_secs(3),
            ..QueueOpts::default()
        },
    );
    q.enqueue_batch(0..u32::try_from(JOBS).expect("small"))
        .await
        .expect("enqueue");

    let done = Arc::new(AtomicUsize::new(0));
    let d = done.clone();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let worker = tokio::spawn(
        Worker::new(store.clone())
            .queue("r", move |_job: JobCtx<u32>| {
                let d = d.clone();
                async move {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    d.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                }
            })
            .concurrency("r", 8)
            .run_until(async move {
                let _ = stop_rx.await;
            }),
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    while done.load(Ordering::SeqCst) < JOBS / 4 {
        assert!(Instant::now() < deadline, "worker never got going");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let restart_at = done.load(Ordering::SeqCst);
    tokio::task::spawn_blocking({
        let bin = pg.bin.clone();
        let data = pg.data.clone();
        let port = pg.port;
        move || {
            let log = data.join("server.log").display().to_string();
            let args = vec![
                "restart".into(),
                "-D".into(),
                data.display().to_string(),
                "-w".into(),
                "-l".into(),
                log,
                "-m".into(),
                "fast".into(),
                "-o".into(),
                format!("-p {port} -k /tmp -c listen_addresses=127.0.0.1"),
            ];
            let out = pg_tool(&bin, "pg_ctl", &args);
            assert!(
                out.status.success(),
                "restart: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    })
    .await
    .expect("restart");
    assert!(restart_at < JOBS, "the restart happened mid-run");

    // A job enqueued after the restart is picked up too.
    let late = q
        .enqueue(&u32::MAX)
        .await
        .expect("enqueue after restart")
        .id();
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        if let Ok(s) = q.stats().await {
            if s.live() == 0 {
                assert_eq!(s.dead, 0);
                break;
            }
        }
        assert!(Instant::now() < deadline, "jobs left after the restart");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(store.queue("r").stats().await.is_ok());
    let _ = stop_tx.send(());
    let report = worker
        .await
        .expect("join")
        .expect("worker ran to a clean stop");
    assert!(
        done.load(Ordering::SeqCst) > JOBS,
        "all {JOBS} + 1 jobs ran (some may have run twice): {report:?}"
    );
    assert!(
        alkstore::prelude::QueueAdmin::job_get(store.engine(), late)
            .await
            .expect("get")
            .is_none(),
        "late job done"
    );
}
