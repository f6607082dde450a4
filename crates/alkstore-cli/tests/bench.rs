//! `alk bench` runs every scenario end to end at a tiny scale and prints one
//! parseable line each (the figures themselves are not checked here).

use std::process::Command;

fn bench(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_alk"))
        .arg("bench")
        .args(args)
        .env_remove("DATABASE_URL")
        .output()
        .expect("run alk bench");
    assert!(
        out.status.success(),
        "alk bench {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn scenarios(out: &str) -> Vec<String> {
    out.lines()
        .filter(|l| l.starts_with("bench "))
        .map(|l| {
            assert!(
                l.contains("jobs_per_s=")
                    || l.contains("p50_ms_from_commit=")
                    || l.contains("p50_ms_from_call=")
                    || l.contains("cycles_per_s=")
                    || l.contains("p50_ms="),
                "{l}"
            );
            l.split_whitespace()
                .find_map(|w| w.strip_prefix("scenario="))
                .expect("scenario field")
                .to_string()
        })
        .collect()
}

#[test]
fn queue_bench_runs_every_scenario_on_sqlite() {
    let out = bench(&["queue", "--scale", "0.01"]);
    assert_eq!(scenarios(&out).len(), 8, "{out}");
    // SQLite lines carry the writer's work during the scenario.
    for line in out.lines().filter(|l| l.starts_with("bench ")) {
        let commits: u64 = field(line, "commits").parse().expect("commits");
        let commands: u64 = field(line, "commands").parse().expect("commands");
        let busy: f64 = field(line, "writer_busy_ms").parse().expect("busy");
        assert!(commits > 0 && commands >= commits && busy > 0.0, "{line}");
    }
}

/// The value of `name=` on a bench line.
fn field<'a>(line: &'a str, name: &str) -> &'a str {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(name).and_then(|v| v.strip_prefix('=')))
        .unwrap_or_else(|| panic!("no {name}= in {line}"))
}

#[test]
fn queue_bench_runs_on_postgres() {
    let url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
    let out = bench(&[
        "queue",
        "--on",
        &url,
        "--scale",
        "0.01",
        "--scenario",
        "insert_50k",
        "--scenario",
        "work_50k",
    ]);
    assert_eq!(scenarios(&out), vec!["insert_50k", "work_50k"], "{out}");
    assert!(
        !out.contains("commits="),
        "no SQLite writer on PostgreSQL: {out}"
    );
}

#[test]
fn worker_bench_reports_latency_and_throughput() {
    let out = bench(&["worker", "--samples", "5", "--jobs", "500"]);
    assert_eq!(
        scenarios(&out),
        vec![
            "wake_latency",
            "wake_latency_xproc",
            "raw_claim_ack.round1",
            "worker_50k.round1",
            "raw_claim_ack.round2",
            "worker_50k.round2",
            "raw_claim_ack.round3",
            "worker_50k.round3",
            "raw_claim_ack",
            "worker_50k",
            "worker_vs_raw",
            "worker_retry_once",
            "worker_tx.in_tx.round1",
            "worker_tx.in_tx_per_job.round1",
            "worker_tx.own_tx.round1",
            "worker_tx.in_tx.round2",
            "worker_tx.in_tx_per_job.round2",
            "worker_tx.own_tx.round2",
            "worker_tx.in_tx.round3",
            "worker_tx.in_tx_per_job.round3",
            "worker_tx.own_tx.round3",
            "worker_tx"
        ],
        "{out}"
    );
    assert!(out.contains(" percent="), "{out}");
    // The figure under a scenario's own name is its rounds' median.
    for name in ["raw_claim_ack", "worker_50k"] {
        let rate = |scenario: &str| -> u64 {
            out.lines()
                .find(|l| l.contains(&format!(" scenario={scenario} ")))
                .and_then(|l| {
                    l.split_whitespace()
                        .find_map(|w| w.strip_prefix("jobs_per_s="))
                })
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("no jobs_per_s for {scenario} in {out}"))
        };
        let mut rounds: Vec<u64> = (1..=3).map(|r| rate(&format!("{name}.round{r}"))).collect();
        rounds.sort_unstable();
        assert_eq!(rate(name), rounds[1], "{name} is not the median: {out}");
    }
    // One scenario asked: that one only (no comparison without its raw run).
    let out = bench(&[
        "worker",
        "--jobs",
        "200",
        "--rounds",
        "1",
        "--scenario",
        "worker_50k",
    ]);
    assert_eq!(scenarios(&out), vec!["worker_50k"], "{out}");
    // The Worker's claims (round trips) beside its jobs: at least one, at
    // most one per job.
    let claims: u64 = out
        .split_whitespace()
        .find_map(|w| w.strip_prefix("claims="))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no claims= in {out}"));
    assert!((1..=200).contains(&claims), "{out}");
}

#[test]
fn http_bench_reports_its_scenarios() {
    let out = bench(&["http", "--scale", "0.02"]);
    assert_eq!(
        scenarios(&out),
        vec![
            "http_enqueue_4conns",
            "http_enqueue_batch_100",
            "http_claim100_batch_ack_4conns",
            "http_wake_latency"
        ],
        "{out}"
    );
}

#[test]
fn lock_and_schedule_benches_report_their_scenarios() {
    let out = bench(&["lock", "--scale", "0.02"]);
    assert_eq!(
        scenarios(&out),
        vec!["lock_uncontended", "lock_8_contenders"],
        "{out}"
    );
    let out = bench(&["schedule", "--scale", "0.2"]);
    assert_eq!(scenarios(&out), vec!["fire_latency"], "{out}");
    assert!(
        out.contains("samples=") && !out.contains("samples=0 "),
        "{out}"
    );
}

#[test]
fn unknown_scenario_is_rejected() {
    let out = Command::new(env!("CARGO_BIN_EXE_alk"))
        .args(["bench", "queue", "--scenario", "nope"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown"));
}

/// `group_tx` runs both variants (a row in the handler's transaction, a
/// row in one of its own) in alternating rounds, then compares them.
#[test]
fn group_tx_bench_compares_its_variants() {
    let out = bench(&["group", "--scenario", "group_tx", "--scale", "0.01"]);
    let names: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("bench "))
        .filter_map(|l| {
            l.split_whitespace()
                .find_map(|w| w.strip_prefix("scenario="))
        })
        .collect();
    assert_eq!(
        names,
        [
            "group_tx.in_tx.round1",
            "group_tx.own_tx.round1",
            "group_tx.in_tx.round2",
            "group_tx.own_tx.round2",
            "group_tx"
        ],
        "{out}"
    );
    assert!(
        out.contains(" in_tx_events_per_s=") && out.contains(" speedup="),
        "{out}"
    );
}

/// `alk bench scale` prints one line per point of each curve, with work
/// done at every point and probe latencies where it measures them.
#[test]
fn scale_bench_reports_every_point() {
    let out = bench(&[
        "scale",
        "--backlogs",
        "500",
        "--queues",
        "1,3",
        "--processes",
        "1",
        "--secs",
        "1",
    ]);
    let points: Vec<(String, String)> = out
        .lines()
        .filter(|l| l.starts_with("bench "))
        .map(|l| {
            assert_eq!(field(l, "scenario"), "scale", "{l}");
            let rate: f64 = field(l, "jobs_per_s").parse().expect("jobs_per_s");
            assert!(rate > 0.0, "no work measured: {l}");
            if field(l, "curve") != "processes" {
                let p50: f64 = field(l, "p50_ms").parse().expect("p50_ms");
                let p99: f64 = field(l, "p99_ms").parse().expect("p99_ms");
                assert!(p50 > 0.0 && p99 >= p50, "{l}");
            }
            (field(l, "curve").to_string(), field(l, "x").to_string())
        })
        .collect();
    let want: Vec<(String, String)> = [
        ("backlog", "500"),
        ("queues", "1"),
        ("queues", "3"),
        ("processes", "1"),
    ]
    .iter()
    .map(|(c, x)| ((*c).to_string(), (*x).to_string()))
    .collect();
    assert_eq!(points, want, "{out}");
}
