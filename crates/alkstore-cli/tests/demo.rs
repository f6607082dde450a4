//! `alk demo` runs everything on a fresh SQLite file and reports what ran.

use std::process::Command;

#[test]
fn the_demo_works_its_load_and_summarises_it() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = format!("sqlite://{}", dir.path().join("demo.db").display());
    let out = Command::new(env!("CARGO_BIN_EXE_alk"))
        .args([
            "--db",
            &db,
            "demo",
            "--jobs",
            "600",
            "--listen",
            "127.0.0.1:0",
        ])
        .env_remove("DATABASE_URL")
        .output()
        .expect("run alk demo");
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
