//! `alk worker --exec`: a shell command per job, on both engines. Exit 0
//! acks, a non-zero exit retries with stderr as the error, a command past
//! the timeout is killed; a command's whole process group is stopped at its
//! timeout and at shutdown, before its job is settled or handed back.

use alkstore::Writes as _;
use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use alkstore::{
    prelude::QueueAdmin,
    queue::{EnqueueOpts, JobState, NewJob},
    Store,
};

mod common;
use common::terminate;

async fn commands_ack_retry_and_time_out(db: String) {
    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("ran.txt");
    let store = Store::open(&db).await.expect("open");
    let once = EnqueueOpts::default().max_attempts(1);
    let ids: Vec<i64> = store
        .engine()
        .job_enqueue(vec![
            NewJob::new("shell", b"\"hello\"".to_vec())
                .with_opts(once.clone().tag("greet").meta("by", "test")),
            NewJob::new("shell", b"\"fail\"".to_vec()).with_opts(once.clone()),
            NewJob::new("shell", b"\"slow\"".to_vec()).with_opts(once),
        ])
        .await
        .expect("enqueue")
        .iter()
        .map(|e| e.id())
        .collect();
    let script = format!(
        "p=$(cat); case \"$p\" in *fail*) echo \"bad job $ALK_JOB_ID\" >&2; exit 3;; *slow*) sleep 30;; esac; \
         echo \"$ALK_QUEUE $ALK_JOB_ID $ALK_JOB_ATTEMPT $p $ALK_JOB_TAGS $ALK_JOB_META\" >> {}",
        out.display()
    );
    let worker = Command::new(env!("CARGO_BIN_EXE_alk"))
        .args(["--db", &db, "worker", "--queue", "shell", "--timeout", "2s"])
        .args(["--exec", &script])
        .env_remove("DATABASE_URL")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn alk worker");
    // All three settle: one acked (gone), two dead.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let stats = store.engine().queue_stats("shell").await.expect("stats");
        if stats.live() == 0 && stats.dead == 2 {
            break;
        }
        assert!(Instant::now() < deadline, "jobs did not settle: {stats:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    terminate(worker);
    let ran = std::fs::read_to_string(&out).expect("the hello job ran");
    assert_eq!(
        ran.trim(),
        format!(
            "shell {} 1 \"hello\" [\"greet\"] {{\"by\":\"test\"}}",
            ids[0]
        )
    );
    assert!(store.engine().job_get(ids[0]).await.expect("get").is_none());
    let failed = store
        .engine()
        .job_get(ids[1])
        .await
        .expect("get")
        .expect("dead");
    assert_eq!(failed.state, JobState::Dead);
    assert_eq!(
        failed.last_error.as_deref(),
        Some(format!("exit code 3: bad job {}", ids[1]).as_str())
    );
    let slow = store
        .engine()
        .job_get(ids[2])
        .await
        .expect("get")
        .expect("dead");
    assert_eq!(slow.state, JobState::Dead);
    assert!(
        slow.last_error
            .as_deref()
            .unwrap_or("")
            .contains("timed out"),
        "{:?}",
        slow.last_error
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_exec_workers_ack_retry_and_time_out() {
    let dir = tempfile::tempdir().expect("tmp");
    commands_ack_retry_and_time_out(format!("sqlite://{}", dir.path().join("w.db").display()))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_exec_workers_ack_retry_and_time_out() {
    use alkstore_postgres::testing;
    let url = testing::ensure_database(&testing::database_url(), "alkstore_test")
        .await
        .expect("postgres");
    let schema = testing::unique_schema("execworker");
    commands_ack_retry_and_time_out(format!("{url}?schema={schema}")).await;
    testing::drop_schema(&url, &schema).await.expect("drop");
}

/// `alk worker` on `db` with `args`, its stderr collected as it comes.
fn spawn_worker(db: &str, args: &[&str]) -> (Child, Arc<Mutex<String>>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_alk"))
        .args(["--db", db, "worker"])
        .args(args)
        .env_remove("DATABASE_URL")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn alk worker");
    let text = Arc::new(Mutex::new(String::new()));
    let mut stderr = child.stderr.take().expect("stderr");
    let sink = text.clone();
    std::thread::spawn(move || {
        let mut chunk = [0u8; 1024];
        while let Ok(n) = stderr.read(&mut chunk) {
            if n == 0 {
                break;
            }
            if let Ok(mut t) = sink.lock() {
                t.push_str(&String::from_utf8_lossy(&chunk[..n]));
            }
        }
    });
    (child, text)
}

/// Wait (up to 30 s) until `f` holds.
async fn wait_until(what: &str, mut f: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !f().await {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// What `alk worker` wrote to stderr so far.
fn said(text: &Arc<Mutex<String>>) -> String {
    text.lock().map(|t| t.clone()).unwrap_or_default()
}

/// SIGTERM the worker, wait for it to exit, return its whole stderr.
fn stop_worker(child: Child, text: &Arc<Mutex<String>>) -> String {
    terminate(child);
    // The reader thread sees the pipe close right after the exit.
    // Generous: the worker may first stop a command's group (up to
    // --shutdown-timeout plus the kill grace) on a loaded machine.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !said(text).contains("stopped;") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    said(text)
}

/// Live (not zombie) processes: their pid, process group and arguments.
fn processes() -> Vec<(i32, i32, Vec<String>)> {
    let mut found = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        let (Ok(stat), Ok(cmdline)) = (
            std::fs::read_to_string(format!("/proc/{pid}/stat")),
            std::fs::read(format!("/proc/{pid}/cmdline")),
        ) else {
            continue;
        };
        // `pid (comm) state ppid pgrp …`; comm may hold spaces.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.first() == Some(&"Z") {
            continue;
        }
        let Some(pgrp) = fields.get(2).and_then(|g| g.parse().ok()) else {
            continue;
        };
        let args = cmdline
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        found.push((pid, pgrp, args));
    }
    found
}

/// Live processes running `sleep SECONDS`, or in process group `group`.
fn leftovers(seconds: &str, group: Option<i32>) -> Vec<(i32, i32, Vec<String>)> {
    processes()
        .into_iter()
        .filter(|(_, pgrp, args)| {
            Some(*pgrp) == group
                || (args.len() == 2 && args[0].ends_with("sleep") && args[1] == seconds)
        })
        .collect()
}

/// The process group the command recorded (`echo $$`: `sh` leads it).
fn recorded_group(file: &std::path::Path) -> Option<i32> {
    std::fs::read_to_string(file)
        .ok()
        .and_then(|s| s.lines().last().and_then(|l| l.trim().parse().ok()))
}

/// Wait (up to 10 s) until neither `sleep SECONDS` nor any process of
/// `group` is left; panic naming what is.
async fn assert_no_leftovers(seconds: &str, group: Option<i32>, when: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = leftovers(seconds, group);
        if left.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{when}: the command's processes survive: {left:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A command past `--timeout`, one still running at shutdown and one whose
/// job is cancelled are stopped with everything they started (`sleep` is a child of `sh` here,
/// in the same process group) before their jobs are dead-lettered or
/// handed back; the summary counts every outcome.
async fn commands_stop_with_their_process_group(db: String, tag: u8) {
    let dir = tempfile::tempdir().expect("tmp");
    let pids = dir.path().join("pids.txt");
    // A duration no other test's command sleeps.
    let seconds = format!("97.{tag}{}", std::process::id());
    let script = format!("echo $$ >> {}; sleep {seconds}; echo done", pids.display());
    let store = Store::open(&db).await.expect("open");
    let once = EnqueueOpts::default().max_attempts(1);
    let e = store.engine();
    let timed = e
        .job_enqueue(vec![NewJob::new("slow", b"1".to_vec()).with_opts(once)])
        .await
        .expect("enqueue")[0]
        .id();

    // A worker running `script`, once the job's command runs: the worker,
    // its stderr, and the command's process group.
    let start = async |flags: &[&str]| {
        let _ = std::fs::remove_file(&pids);
        let mut args = vec!["--queue", "slow", "--exec", &script];
        args.extend_from_slice(flags);
        let (worker, text) = spawn_worker(&db, &args);
        wait_until("the command started", async || {
            !leftovers(&seconds, None).is_empty() && recorded_group(&pids).is_some()
        })
        .await;
        (worker, text, recorded_group(&pids))
    };

    // Past its timeout: dead as timed out, nothing of it left running.
    let (worker, text, group) = start(&["--timeout", "2s", "--verbose"]).await;
    wait_until("the timed-out job died", async || {
        e.queue_stats("slow").await.expect("stats").dead == 1
    })
    .await;
    assert_no_leftovers(&seconds, group, "after the timeout").await;
    let said = stop_worker(worker, &text);
    assert!(
        said.contains(&format!(
            "job {timed} attempt 1/1: timed out after 2s; dead (last attempt)"
        )),
        "{said}"
    );
    assert!(
        said.contains("stopped; 0 completed, 0 retried, 1 dead, 1 timed out, 0 handed back"),
        "{said}"
    );

    // Running at shutdown: stopped after --shutdown-timeout, its job
    // pending again with its attempt not counted.
    let held = e
        .job_enqueue(vec![NewJob::new("slow", b"2".to_vec())])
        .await
        .expect("enqueue")[0]
        .id();
    let (worker, text, group) = start(&["--shutdown-timeout", "1s"]).await;
    let said = stop_worker(worker, &text);
    assert_no_leftovers(&seconds, group, "after the worker stopped").await;
    assert!(
        said.contains("stopped; 0 completed, 0 retried, 0 dead, 0 timed out, 1 handed back"),
        "{said}"
    );
    let job = e.job_get(held).await.expect("get").expect("live");
    assert_eq!(job.state, JobState::Pending, "{job:?}");
    assert_eq!(job.attempts, 0, "{job:?}");

    // Cancelled while it runs (`alk cancel`): stopped the same way, the
    // job dead as cancelled.
    let (worker, text, group) = start(&[]).await;
    assert_eq!(
        e.job_cancel(held).await.expect("cancel"),
        alkstore::queue::CancelOutcome::Requested
    );
    wait_until("the cancelled job died", async || {
        e.job_get(held)
            .await
            .expect("get")
            .is_some_and(|j| j.state == JobState::Dead)
    })
    .await;
    assert_no_leftovers(&seconds, group, "after the cancel").await;
    let job = e.job_get(held).await.expect("get").expect("dead");
    assert_eq!(job.dead_reason.as_deref(), Some("cancelled"), "{job:?}");
    stop_worker(worker, &text);

    // A command that exits leaving a background process behind (its
    // output closed, so nothing waits for it): the leftover is stopped
    // once the command exits, before the next attempt could start.
    let lingering = format!("96.{tag}{}", std::process::id());
    let script = format!(
        "echo $$ >> {}; sleep {lingering} >/dev/null 2>&1 & exit 0",
        pids.display()
    );
    let _ = std::fs::remove_file(&pids);
    let done = e
        .job_enqueue(vec![NewJob::new("bg", b"3".to_vec())])
        .await
        .expect("enqueue")[0]
        .id();
    let (worker, text) = spawn_worker(&db, &["--queue", "bg", "--exec", &script]);
    wait_until("the command ran and its job completed", async || {
        recorded_group(&pids).is_some() && e.job_get(done).await.expect("get").is_none()
    })
    .await;
    assert_no_leftovers(
        &lingering,
        recorded_group(&pids),
        "after the command exited",
    )
    .await;
    stop_worker(worker, &text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_commands_stop_with_their_process_group() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = format!("sqlite://{}", dir.path().join("w.db").display());
    commands_stop_with_their_process_group(db, 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_commands_stop_with_their_process_group() {
    use alkstore_postgres::testing;
    let url = testing::ensure_database(&testing::database_url(), "alkstore_test")
        .await
        .expect("postgres");
    let schema = testing::unique_schema("execgroup");
    commands_stop_with_their_process_group(format!("{url}?schema={schema}"), 2).await;
    testing::drop_schema(&url, &schema).await.expect("drop");
}

/// A worker started on a paused queue says so; zero handler slots are
/// refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_queue_is_named_and_zero_concurrency_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = format!("sqlite://{}", dir.path().join("w.db").display());
    let store = Store::open(&db).await.expect("open");
    store.engine().queue_pause("held").await.expect("pause");
    let (worker, text) = spawn_worker(&db, &["--queue", "held", "--exec", "true"]);
    wait_until("the worker names the pause", async || {
        said(&text).contains("queue \"held\" is paused")
    })
    .await;
    stop_worker(worker, &text);
    let out = Command::new(env!("CARGO_BIN_EXE_alk"))
        .args(["--db", &db, "worker", "--queue", "held", "--exec", "true"])
        .args(["--concurrency", "0"])
        .env_remove("DATABASE_URL")
        .output()
        .expect("run alk worker");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--concurrency"), "{err}");
}

/// `alk worker --group G --stream S --exec CMD`: a command per event, in
/// order per key, with the event's place in the environment; an event
/// whose command keeps failing goes to the group's dead letters; one whose
/// command is stopped at shutdown does not, and its bucket's checkpoint
/// stays before it, for the next member.
async fn group_members_run_a_command_per_event(db: String) {
    use alkstore::group::{GroupDeadListParams, GroupStatusParams};
    use alkstore::prelude::GroupEngine;
    use alkstore::stream::NewEvent;

    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("events.txt");
    let started = dir.path().join("slow-started");
    let store = Store::open(&db).await.expect("open");
    let mut events: Vec<NewEvent> = (1..=6)
        .map(|i| {
            NewEvent::new("orders", format!("{{\"n\":{i}}}").into_bytes())
                .key(format!("k{}", i % 2))
        })
        .collect();
    events.push(NewEvent::new("orders", b"\"bad\"".to_vec()).key("bad"));
    events.push(NewEvent::new("orders", b"\"slow\"".to_vec()).key("slow"));
    let offsets = store
        .engine()
        .stream_publish(events)
        .await
        .expect("publish");
    let (bad, slow) = (offsets[6], offsets[7]);
    let script = format!(
        "p=$(cat); case \"$p\" in *bad*) echo \"bad event $ALK_EVENT_OFFSET\" >&2; exit 3;; \
         *slow*) touch {started}; sleep 30;; esac; \
         echo \"$ALK_GROUP $ALK_STREAM $ALK_EVENT_OFFSET $ALK_EVENT_KEY $ALK_BUCKET $ALK_EPOCH\" >> {out}",
        started = started.display(),
        out = out.display()
    );
    let (worker, text) = spawn_worker(
        &db,
        &[
            "--group",
            "g",
            "--stream",
            "orders",
            "--buckets",
            "4",
            "--attempts",
            "1",
            "--shutdown-timeout",
            "1s",
            "--exec",
            &script,
        ],
    );
    wait_until(
        "six events handled, one dead, the slow one running",
        async || {
            let lines = std::fs::read_to_string(&out)
                .unwrap_or_default()
                .lines()
                .count();
            let dead = store
                .engine()
                .group_dead_list(GroupDeadListParams::new("g", 0, 10))
                .await
                .map(|d| d.len())
                .unwrap_or(0);
            lines == 6 && dead == 1 && started.exists()
        },
    )
    .await;
    let said = stop_worker(worker, &text);
    assert!(said.contains("1 stopped at shutdown"), "{said}");

    let ran = std::fs::read_to_string(&out).expect("events ran");
    let mut per_key: std::collections::BTreeMap<String, Vec<i64>> = Default::default();
    for line in ran.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        assert_eq!(f.len(), 6, "{line}");
        assert_eq!((f[0], f[1]), ("g", "orders"), "{line}");
        let offset: i64 = f[2].parse().expect("offset");
        let bucket: u32 = f[4].parse().expect("bucket");
        assert_eq!(
            bucket,
            alkstore::group::bucket_of(f[3].as_bytes(), 4),
            "{line}"
        );
        assert!(f[5].parse::<i64>().expect("epoch") >= 1, "{line}");
        per_key.entry(f[3].to_string()).or_default().push(offset);
    }
    assert_eq!(per_key["k1"], vec![offsets[0], offsets[2], offsets[4]]);
    assert_eq!(per_key["k0"], vec![offsets[1], offsets[3], offsets[5]]);

    let dead = store
        .engine()
        .group_dead_list(GroupDeadListParams::new("g", 0, 10))
        .await
        .expect("dead");
    assert_eq!(dead.len(), 1, "only the failing event is dead: {dead:?}");
    assert_eq!(dead[0].offset, bad);
    assert!(dead[0].error.contains("bad event"), "{:?}", dead[0].error);
    let status = store
        .engine()
        .group_status(GroupStatusParams::without_lag("g"))
        .await
        .expect("status");
    let slow_bucket = alkstore::group::bucket_of(b"slow", 4);
    let checkpoint = status.buckets[slow_bucket as usize].checkpoint;
    assert!(
        checkpoint < slow,
        "the stopped event is left for the next member: {checkpoint} < {slow}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_group_members_run_a_command_per_event() {
    let dir = tempfile::tempdir().expect("tmp");
    group_members_run_a_command_per_event(format!(
        "sqlite://{}",
        dir.path().join("g.db").display()
    ))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_group_members_run_a_command_per_event() {
    use alkstore_postgres::testing;
    let url = testing::ensure_database(&testing::database_url(), "alkstore_test")
        .await
        .expect("postgres");
    let schema = testing::unique_schema("execmember");
    group_members_run_a_command_per_event(format!("{url}?schema={schema}")).await;
    testing::drop_schema(&url, &schema).await.expect("drop");
}

/// `alk processes`: a running `alk worker` is listed (kind, queue, pid),
/// `alk processes stop` makes it shut down at its next heartbeat, and its
/// row is gone after; an unknown id is an error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alk_processes_lists_and_stops_a_worker() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = format!("sqlite://{}", dir.path().join("p.db").display());
    let alk = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_alk"))
            .args(["--db", &db])
            .args(args)
            .env_remove("DATABASE_URL")
            .output()
            .expect("run alk")
    };
    let listed = || -> Vec<serde_json::Value> {
        let out = alk(&["--json", "processes", "list"]);
        serde_json::from_slice(&out.stdout).unwrap_or_default()
    };
    let (mut worker, text) = spawn_worker(&db, &["--queue", "mail", "--exec", "true"]);
    let pid = worker.id();
    wait_until("the worker is registered", async || !listed().is_empty()).await;
    let p = listed().remove(0);
    assert_eq!(p["kind"], "worker", "{p}");
    assert_eq!(p["roles"], serde_json::json!(["mail"]), "{p}");
    assert_eq!(p["pid"], serde_json::json!(pid), "{p}");
    assert_eq!(p["alive"], serde_json::json!(true), "{p}");
    let id = p["id"].as_str().expect("id").to_string();

    let out = alk(&["processes", "stop", &id]);
    assert!(out.status.success(), "{out:?}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while worker.try_wait().expect("wait").is_none() {
        assert!(
            Instant::now() < deadline,
            "the worker did not stop: {}",
            said(&text)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(listed().is_empty(), "removed at exit");
    let out = alk(&["processes", "stop", "nobody"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not found"),
        "{out:?}"
    );
}

/// `url` with its user replaced by `user` (and no password).
fn with_user(url: &str, user: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("a postgres:// URL");
    let host = rest.split_once('@').map_or(rest, |(_, h)| h);
    format!("{scheme}://{user}@{host}")
}

/// Thirty-two `alk worker` processes fit under a server's default
/// `max_connections = 100` (97 slots for roles that are not superusers)
/// when each holds at most three connections (two pooled, one to
/// LISTEN). Eight of them, under a role limited to three connections
/// each, run without one refused; eight, not 32, so that the test needs
/// few of the server's slots beside the other tests running at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_workers_fit_in_three_connections_each() {
    use alkstore_postgres::{testing, tokio_postgres};
    const WORKERS: usize = 8;
    const ROLE: &str = "alkstore_conn_limited";
    const LIMIT: usize = WORKERS * 3;
    let url = testing::ensure_database(&testing::database_url(), "alkstore_test_conn")
        .await
        .expect("postgres");
    let (admin, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(conn);
    let schema = testing::unique_schema("connlimit");
    admin
        .batch_execute(&format!(
            "DO $$ BEGIN CREATE ROLE {ROLE} LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$; \
             ALTER ROLE {ROLE} LOGIN NOSUPERUSER CONNECTION LIMIT {LIMIT}; \
             GRANT CREATE ON DATABASE alkstore_test_conn TO {ROLE}; \
             CREATE SCHEMA \"{schema}\" AUTHORIZATION {ROLE}"
        ))
        .await
        .expect("role and schema");
    let db = format!("{}?schema={schema}", with_user(&url, ROLE));
    {
        // The role makes the tables (it owns them) and the jobs.
        let store = Store::open(&db).await.expect("open as the limited role");
        let jobs: Vec<NewJob> = (0..WORKERS * 20)
            .map(|i| NewJob::new("fit", format!("{i}").into_bytes()))
            .collect();
        store.engine().job_enqueue(jobs).await.expect("enqueue");
        alkstore::prelude::Engine::close(store.engine());
    }
    // Only the workers' connections count: wait for the role's own to go.
    let held = "SELECT count(*) FROM pg_stat_activity WHERE usename = $1";
    let deadline = Instant::now() + Duration::from_secs(10);
    while count(&admin, held, ROLE).await > 0 {
        assert!(
            Instant::now() < deadline,
            "the enqueuing store kept its connections"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut workers = KillOnDrop(
        (0..WORKERS)
            .map(|_| {
                spawn_worker(
                    &db,
                    &[
                        "--queue",
                        "fit",
                        "--concurrency",
                        "4",
                        "--exec",
                        "cat >/dev/null",
                    ],
                )
            })
            .collect(),
    );
    let left = format!("SELECT count(*) FROM \"{schema}\".job WHERE $1::text IS NOT NULL");
    let mut most = 0;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        most = most.max(count(&admin, held, ROLE).await);
        if count(&admin, &left, ROLE).await == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "the jobs were not all worked");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Idle now: every worker still holds what it needs to wait for work.
    tokio::time::sleep(Duration::from_secs(1)).await;
    most = most.max(count(&admin, held, ROLE).await);
    let mut refused = Vec::new();
    for (mut child, stderr) in std::mem::take(&mut workers.0) {
        assert!(
            child.try_wait().expect("try_wait").is_none(),
            "a worker exited: {}",
            stderr.lock().expect("stderr")
        );
        terminate(child);
        let text = stderr.lock().expect("stderr").clone();
        if text.contains("53300") || text.contains("connection slots") {
            refused.push(text);
        }
    }
    assert!(
        refused.is_empty(),
        "workers were refused connections: {refused:?}"
    );
    assert!(
        most <= i64::try_from(LIMIT).expect("small"),
        "{WORKERS} workers held {most} connections at once"
    );
    testing::drop_schema(&url, &schema).await.expect("drop");
}

/// The one count `sql` returns for `role`.
async fn count(client: &alkstore_postgres::tokio_postgres::Client, sql: &str, role: &str) -> i64 {
    client
        .query_one(sql, &[&role])
        .await
        .expect("count")
        .get::<_, i64>(0)
}

/// Worker processes killed if the test ends before it stops them (a
/// failed assertion must not leave them holding connections).
struct KillOnDrop(Vec<(Child, Arc<Mutex<String>>)>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        for (child, _) in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
