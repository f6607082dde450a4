//! Workers as separate OS processes, one of them killed with SIGKILL several
//! times mid-run and restarted: every job completes, none is lost, and every
//! job that ran more than once did so under a new claim (a higher attempt),
//! that is, after its earlier claim expired.

use std::collections::HashMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use alkstore::{queue::QueueOpts, Store};

mod common;
use common::terminate;

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
        if info.state == alkstore::queue::JobState::Processing {
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
        (alkstore::queue::JobState::Pending, 0),
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

const EVENTS: usize = 5_000;

/// Spawn `alk streams tail --consumer` printing JSON Lines; a thread collects
/// the offsets it prints.
/// A tailing consumer, the offsets it printed so far, and the thread that
/// reads them (it ends at the child's end of output: join it before taking
/// the final list, or lines still in the pipe are missed).
type Tail = (
    Child,
    std::sync::Arc<std::sync::Mutex<Vec<i64>>>,
    std::thread::JoinHandle<()>,
);

fn spawn_tail(db: &str) -> Tail {
    use std::io::BufRead;
    let mut child = Command::new(env!("CARGO_BIN_EXE_alk"))
        .args([
            "--db", db, "--json", "streams", "tail", "events", "--follow",
        ])
        .args(["--consumer", "crash", "--commit-every", "100"])
        .env_remove("DATABASE_URL")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn alk streams tail");
    let stdout = child.stdout.take().expect("stdout");
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let into = seen.clone();
    let reader = std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) else {
                continue;
            };
            if let Some(o) = v["offset"].as_i64() {
                into.lock().expect("seen").push(o);
            }
        }
    });
    (child, seen, reader)
}

/// Wait until `seen` holds at least `n` offsets, or `last` when given.
fn wait_for(seen: &std::sync::Mutex<Vec<i64>>, n: usize, last: Option<i64>) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        {
            let s = seen.lock().expect("seen");
            if s.len() >= n && last.is_none_or(|l| s.last() == Some(&l)) {
                return;
            }
        }
        assert!(Instant::now() < deadline, "the subscriber stalled");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A stream subscriber killed with SIGKILL mid-stream and restarted resumes
/// after its last saved offset: every event is printed at least once, and
/// the second run starts exactly after what the first saved.
async fn subscriber_kill_nine_resumes(db: String) {
    let store = Store::open(&db).await.expect("open");
    let stream = store.stream("events");
    let mut offsets = Vec::new();
    for chunk in (0..EVENTS).collect::<Vec<_>>().chunks(500) {
        let batch = chunk
            .iter()
            .map(|i| (None, i.to_string().into_bytes()))
            .collect::<Vec<_>>();
        offsets.extend(stream.publish_batch_raw(batch).await.expect("publish"));
    }
    let head = *offsets.last().expect("published");
    let (mut first, seen_first, reader) = spawn_tail(&db);
    wait_for(&seen_first, 1_500, None);
    first.kill().expect("SIGKILL");
    let _ = first.wait();
    let _ = reader.join();
    // A commit the killed process had already sent still lands after it
    // died (PostgreSQL finishes a statement it received): read the saved
    // offset once it has stopped moving.
    let mut saved = None;
    loop {
        let now = stream.offset("crash").await.expect("offset");
        if now.is_some() && now == saved {
            break;
        }
        saved = now;
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
    let saved = saved.expect("the first run saved an offset");
    let printed_first = seen_first.lock().expect("seen").clone();
    assert!(
        printed_first.contains(&saved),
        "the saved offset {saved} was printed before it was saved"
    );

    let (second, seen_second, reader) = spawn_tail(&db);
    wait_for(&seen_second, 1, Some(head));
    terminate(second);
    let _ = reader.join();
    let printed_second = seen_second.lock().expect("seen").clone();
    let resume_at = offsets
        .iter()
        .copied()
        .find(|o| *o > saved)
        .expect("events after the saved offset");
    assert_eq!(
        printed_second.first(),
        Some(&resume_at),
        "the restart resumes right after the saved offset"
    );
    let mut all: Vec<i64> = printed_first
        .iter()
        .chain(&printed_second)
        .copied()
        .collect();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all, offsets, "every event was handled at least once");
    assert_eq!(stream.offset("crash").await.expect("offset"), Some(head));
    eprintln!(
        "first run printed {} (saved {saved}), second {}",
        printed_first.len(),
        printed_second.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_subscriber_kill_nine_resumes() {
    let dir = tempfile::tempdir().expect("tmp");
    subscriber_kill_nine_resumes(format!("sqlite://{}", dir.path().join("s.db").display())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_subscriber_kill_nine_resumes() {
    use alkstore_postgres::testing;
    let url = testing::ensure_database(&testing::database_url(), "alkstore_test")
        .await
        .expect("postgres");
    let schema = testing::unique_schema("subkill");
    subscriber_kill_nine_resumes(format!("{url}?schema={schema}")).await;
    testing::drop_schema(&url, &schema).await.expect("drop");
}

/// `alk streams tail --consumer … --follow | head -1`: once the reader is
/// gone, the next event cannot be printed, so the command exits (status 0)
/// and does not save that event as handled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tail_stops_when_its_reader_goes_away_without_saving_unprinted_events() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().expect("tmp");
    let db = format!("sqlite://{}", dir.path().join("pipe.db").display());
    let store = Store::open(&db).await.expect("open");
    let stream = store.stream("events");
    stream
        .publish_raw(None, b"first".to_vec())
        .await
        .expect("publish");
    let mut child = Command::new(env!("CARGO_BIN_EXE_alk"))
        .args(["--db", &db, "streams", "tail", "events", "--follow"])
        .args(["--consumer", "reader", "--commit-every", "1"])
        .env_remove("DATABASE_URL")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn alk streams tail");
    let mut lines = std::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
    let first = lines.next().expect("a line").expect("readable");
    assert!(first.contains("first"), "{first}");
    drop(lines); // the reader goes away, like `head -1`
    let unprinted = stream
        .publish_raw(None, b"nobody reads this".to_vec())
        .await
        .expect("publish");
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "tail kept running without a reader"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
    let saved = stream.offset("reader").await.expect("offset");
    assert!(
        saved < Some(unprinted),
        "saved {saved:?}: the event that could not be printed was saved as handled"
    );
}
