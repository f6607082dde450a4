//! SQLite-specific behaviour: schema versions and file errors.

use alkstore_core::{ErrorKind, NewJob, QueueEngine};
use alkstore_sqlite::{SqliteEngine, SqliteOptions};

#[test]
fn file_from_a_newer_version_is_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("x.db");
    drop(SqliteEngine::open(SqliteOptions::new(&path)).expect("open"));
    let conn = rusqlite::Connection::open(&path).expect("conn");
    conn.execute(
        "UPDATE __alkstore_meta SET value = 999 WHERE key = 'schema_version'",
        [],
    )
    .expect("bump");
    drop(conn);
    let err = SqliteEngine::open(SqliteOptions::new(&path)).expect_err("too new");
    assert_eq!(err.kind(), ErrorKind::SchemaTooNew, "{err}");
}

#[test]
fn unopenable_path_is_a_connect_error() {
    let err =
        SqliteEngine::open(SqliteOptions::new("/nonexistent-dir/sub/x.db")).expect_err("no dir");
    assert_eq!(err.kind(), ErrorKind::Connect, "{err}");
}

#[tokio::test]
async fn jobs_survive_reopening_the_file() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("x.db");
    let e = SqliteEngine::open(SqliteOptions::new(&path)).expect("open");
    let id = e
        .job_enqueue(vec![NewJob::new("q", b"durable".to_vec())])
        .await
        .expect("enqueue")[0]
        .id();
    drop(e);
    let e = SqliteEngine::open(SqliteOptions::new(&path)).expect("reopen");
    let info = e.job_get(id).await.expect("get").expect("still there");
    assert_eq!(info.payload, b"durable");
}

#[tokio::test]
async fn application_tables_share_the_file_untouched() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("x.db");
    let conn = rusqlite::Connection::open(&path).expect("conn");
    conn.execute_batch("CREATE TABLE job (id INTEGER PRIMARY KEY, mine TEXT); INSERT INTO job (mine) VALUES ('app');")
        .expect("app table");
    let e = SqliteEngine::open(SqliteOptions::new(&path)).expect("open");
    e.job_enqueue(vec![NewJob::new("q", b"x".to_vec())])
        .await
        .expect("enqueue");
    let mine: String = conn
        .query_row("SELECT mine FROM job", [], |r| r.get(0))
        .expect("app row");
    assert_eq!(mine, "app");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_share_commits() {
    let dir = tempfile::tempdir().expect("tmp");
    let e = SqliteEngine::open(SqliteOptions::new(dir.path().join("g.db"))).expect("open");
    let (commits_before, _) = e.commit_stats();
    let mut tasks = Vec::new();
    for t in 0..32 {
        let e = e.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..50 {
                e.job_enqueue(vec![NewJob::new("g", format!("{t}-{i}").into_bytes())])
                    .await
                    .expect("enqueue");
            }
        }));
    }
    for t in tasks {
        t.await.expect("task");
    }
    let (commits, commands) = e.commit_stats();
    let commits = commits - commits_before;
    assert_eq!(e.queue_stats("g".into()).await.expect("stats").ready, 1_600);
    assert!(commands >= 1_600);
    assert!(
        commits < 1_600,
        "1,600 concurrent enqueues took {commits} commits: no grouping"
    );
    eprintln!("1,600 enqueues in {commits} commits");
}
