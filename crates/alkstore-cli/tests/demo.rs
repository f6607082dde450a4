//! `alk demo` runs everything on a fresh SQLite file and reports what ran:
//! its load spread over `--duration`, or cut short by Ctrl-C.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn the_demo_works_its_load_and_summarises_it() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = format!("sqlite://{}", dir.path().join("demo.db").display());
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_alk"))
        .args([
            "--db",
            &db,
            "demo",
            "--jobs",
            "600",
            "--duration",
            "3s",
            "--listen",
            "127.0.0.1:0",
        ])
        .env_remove("DATABASE_URL")
        .output()
        .expect("run alk demo");
    // The load is spread over the duration, not enqueued at once.
    assert!(started.elapsed() >= Duration::from_secs(3), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("dashboard: http://127.0.0.1:"), "{stdout}");
    assert!(
        stdout.contains("600 orders consumed by group billing"),
        "{stdout}"
    );
    // Every job settled: completed + dead covers all 600 (the schedule's
    // reports add a few completions).
    let number_after = |label: &str| -> u64 {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(label))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no {label:?} line in {stdout}"))
    };
    let completed = number_after("jobs:     ");
    let dead = number_after("dead letters waiting: ");
    assert!(completed + dead >= 600, "{stdout}");
    assert!(dead >= 1, "an email to a missing mailbox dies: {stdout}");
    assert!(stdout.contains("retried"), "{stdout}");
}

/// Ctrl-C ends a long demo early, with the summary of what ran.
#[test]
fn ctrl_c_ends_the_demo_early_with_a_summary() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = format!("sqlite://{}", dir.path().join("demo.db").display());
    let mut child = Command::new(env!("CARGO_BIN_EXE_alk"))
        .args([
            "--db",
            &db,
            "demo",
            "--duration",
            "10m",
            "--listen",
            "127.0.0.1:0",
        ])
        .env_remove("DATABASE_URL")
        .stdout(Stdio::piped())
        // Kept, so that a failure says why the demo stopped.
        .stderr(Stdio::piped())
        .spawn()
        .expect("run alk demo");
    let mut stdout = child.stdout.take().expect("stdout");
    // Drained on a thread of its own (a full pipe would stall the demo).
    let mut stderr = child.stderr.take().expect("stderr");
    let errors = std::thread::spawn(move || {
        let mut err = String::new();
        let _ = stderr.read_to_string(&mut err);
        err
    });
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut chunk = [0u8; 1024];
        while let Ok(n) = stdout.read(&mut chunk) {
            if n == 0 || tx.send(chunk[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut seen = String::new();
    let read = |seen: &mut String, until: Instant| {
        while let Ok(bytes) = rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
            seen.push_str(&String::from_utf8_lossy(&bytes));
            if seen.contains("took ") {
                break;
            }
        }
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while !seen.contains("Ctrl-C stops early") && Instant::now() < deadline {
        read(&mut seen, Instant::now() + Duration::from_millis(100));
    }
    assert!(seen.contains("over 10m"), "{seen}");
    let _ = Command::new("kill")
        .arg("-INT")
        .arg(child.id().to_string())
        .status();
    read(&mut seen, Instant::now() + Duration::from_secs(30));
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Ok(Some(status)) = child.try_wait() {
            break Some(status);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let err = if status.is_some() {
        errors.join().unwrap_or_default()
    } else {
        String::new()
    };
    assert!(
        status.is_some_and(|s| s.success()),
        "{status:?}: {seen}\nstderr: {err}"
    );
    assert!(seen.contains("jobs:     "), "{seen}");
    assert!(seen.contains("orders consumed by group billing"), "{seen}");
}
