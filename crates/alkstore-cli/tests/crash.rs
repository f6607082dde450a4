//! Workers as separate OS processes, one of them killed with SIGKILL several
//! times mid-run and restarted: every job completes, none is lost, and every
//! job that ran more than once did so under a new claim (a higher attempt),
//! that is, after its earlier claim expired.

use std::collections::HashMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use alkstore::{QueueOpts, Store};

const JOBS: usize = 20_000;

fn spawn_worker(db: &str, log: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_alk"))
        .args([
            "--db",
            db,
            "test-worker",
            "--queue",
            "crash",
            "--concurrency",
            "32",
            "--sleep-ms",
            "1",
            "--log",
        ])
        .arg(log)
        .env_remove("DATABASE_URL")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn alk test-worker")
}

fn terminate(mut child: Child) {
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status();
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}

async fn kill_nine_loses_nothing(db: String) {
    let dir = tempfile::tempdir().expect("tmp");
    let store = Store::open(&db).await.expect("open");
    let q = store.queue_with(
        "crash",
        QueueOpts {
            visibility_timeout: Duration::from_secs(2),
            ..QueueOpts::default()
        },
    );
    for chunk in (0..JOBS).collect::<Vec<_>>().chunks(2_000) {
        q.enqueue_batch(chunk.iter().copied())
            .await
            .expect("enqueue");
    }
    let steady_log = dir.path().join("steady.log");
    let victim_log = dir.path().join("victim.log");
    let steady = spawn_worker(&db, &steady_log);
    let mut kills = 0;
    for _ in 0..4 {
        let mut victim = spawn_worker(&db, &victim_log);
        tokio::time::sleep(Duration::from_millis(400)).await;
        victim.kill().expect("SIGKILL");
        let _ = victim.wait();
        kills += 1;
    }
    let victim = spawn_worker(&db, &victim_log);
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let s = q.stats().await.expect("stats");
        if s.live() == 0 {
            assert_eq!(s.dead, 0, "no job may die");
            break;
        }
        assert!(Instant::now() < deadline, "jobs left after 120 s: {s:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    terminate(steady);
    terminate(victim);

    let mut runs: HashMap<i64, Vec<u32>> = HashMap::new();
    for log in [&steady_log, &victim_log] {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        for line in text.lines() {
            let mut parts = line.split_whitespace();
            let (Some(id), Some(attempt)) = (parts.next(), parts.next()) else {
                continue;
            };
            let (Ok(id), Ok(attempt)) = (id.parse::<i64>(), attempt.parse::<u32>()) else {
                continue;
            };
            runs.entry(id).or_default().push(attempt);
        }
    }
    assert_eq!(kills, 4);
    assert_eq!(runs.len(), JOBS, "every job ran at least once");
    let mut reruns = 0;
    for (id, attempts) in &runs {
        let mut sorted = attempts.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(
            sorted.len(),
            attempts.len(),
            "job {id} ran twice under one claim: {attempts:?}"
        );
        reruns += attempts.len() - 1;
    }
    eprintln!(
        "{} jobs, {reruns} re-runs after expired claims, {kills} kills",
        runs.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_kill_nine_loses_nothing() {
    let dir = tempfile::tempdir().expect("tmp");
    kill_nine_loses_nothing(format!(
        "sqlite://{}",
        dir.path().join("crash.db").display()
    ))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_kill_nine_loses_nothing() {
    use alkstore_postgres::testing;
    let url = testing::ensure_database(&testing::database_url(), "alkstore_test")
        .await
        .expect("postgres");
    let schema = testing::unique_schema("crash");
    kill_nine_loses_nothing(format!("{url}?schema={schema}")).await;
    testing::drop_schema(&url, &schema).await.expect("drop");
}

/// SIGTERM (what Docker, Kubernetes and systemd send) shuts a worker down
/// gracefully: a job whose handler outlives the shutdown timeout is handed
/// back at once with its attempt given back, not left processing until its
/// claim lapses.
async fn sigterm_hands_running_jobs_back(db: String) {
    let dir = tempfile::tempdir().expect("tmp");
    let store = Store::open(&db).await.expect("open");
    let q = store.queue("term");
    let id = q.enqueue(&1).await.expect("enqueue").id();
    let log = dir.path().join("runs.log");
    let child = Command::new(env!("CARGO_BIN_EXE_alk"))
        .args(["--db", &db, "test-worker", "--queue", "term"])
        .args([
            "--sleep-ms",
            "600000",
            "--shutdown-timeout-ms",
            "200",
            "--log",
        ])
        .arg(&log)
        .env_remove("DATABASE_URL")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn alk test-worker");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let info = q.get(id).await.expect("get").expect("live");
        if info.state == alkstore::JobState::Processing {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the worker never claimed the job"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let started = Instant::now();
    let mut child = child;
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status();
    let status = loop {
        if let Ok(Some(status)) = child.try_wait() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the worker ignored SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "graceful exit: {status:?}");
    let info = q.get(id).await.expect("get").expect("live");
    assert_eq!(
        (info.state, info.attempts),
        (alkstore::JobState::Pending, 0),
        "handed back at once, attempt not used"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_sigterm_hands_running_jobs_back() {
    let dir = tempfile::tempdir().expect("tmp");
    sigterm_hands_running_jobs_back(format!("sqlite://{}", dir.path().join("term.db").display()))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_sigterm_hands_running_jobs_back() {
    use alkstore_postgres::testing;
    let url = testing::ensure_database(&testing::database_url(), "alkstore_test")
        .await
        .expect("postgres");
    let schema = testing::unique_schema("term");
    sigterm_hands_running_jobs_back(format!("{url}?schema={schema}")).await;
    testing::drop_schema(&url, &schema).await.expect("drop");
}
