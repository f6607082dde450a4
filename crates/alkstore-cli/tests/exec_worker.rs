//! `alk worker --exec`: a shell command per job, on both engines. Exit 0
//! acks, a non-zero exit retries with stderr as the error, a command past
//! the timeout is killed.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use alkstore::{EnqueueOpts, JobState, NewJob, QueueAdmin, QueueEngine, Store};

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
            NewJob::new("shell", b"\"hello\"".to_vec()).with_opts(once.clone()),
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
         echo \"$ALK_QUEUE $ALK_JOB_ID $ALK_JOB_ATTEMPT $p\" >> {}",
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
    assert_eq!(ran.trim(), format!("shell {} 1 \"hello\"", ids[0]));
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
