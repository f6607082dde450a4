//! Opening stores by URL.

use alkstore::{prelude::JobExt, queue::EnqueueOpts, ErrorKind, Store};

#[tokio::test]
async fn bad_urls_are_typed_errors() {
    for url in [
        "mysql://localhost/db",
        "sqlite://",
        "app.db",
        "sqlite://x.db?mode=weird",
    ] {
        let err = Store::open(url).await.expect_err(url);
        assert_eq!(err.kind(), ErrorKind::InvalidUrl, "{url}: {err}");
    }
}

#[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
struct Email {
    to: String,
}

#[tokio::test]
async fn typed_payloads_round_trip_on_sqlite() {
    let dir = tempfile::tempdir().expect("tmp");
    let store = Store::open(&format!("sqlite://{}", dir.path().join("a.db").display()))
        .await
        .expect("open");
    let q = store.queue("emails");
    q.enqueue(&Email {
        to: "a@example.com".into(),
    })
    .await
    .expect("enqueue");
    q.enqueue_with(
        &Email {
            to: "b@example.com".into(),
        },
        EnqueueOpts::default().priority(9),
    )
    .await
    .expect("enqueue");
    let jobs = q.claim("w", 10).await.expect("claim");
    let emails: Vec<Email> = jobs.iter().map(|j| j.decode().expect("decode")).collect();
    assert_eq!(
        emails,
        vec![
            Email {
                to: "b@example.com".into()
            },
            Email {
                to: "a@example.com".into()
            }
        ]
    );
    let bad: Result<u64, _> = jobs[0].decode();
    assert_eq!(bad.expect_err("not a number").kind(), ErrorKind::Payload);
    assert_eq!(
        q.ack(jobs.iter().map(|j| j.claim()).collect())
            .await
            .expect("ack"),
        vec![true, true]
    );
}

#[tokio::test]
async fn queue_handle_covers_the_job_lifecycle() {
    use alkstore::queue::{JobState, RetryOutcome};
    use std::time::Duration;
    let dir = tempfile::tempdir().expect("tmp");
    let store = Store::open(&format!("sqlite://{}", dir.path().join("q.db").display()))
        .await
        .expect("open");
    let q = store.queue("life");
    let a = q.enqueue(&1).await.expect("enqueue").id();
    let b = q.enqueue(&2).await.expect("enqueue").id();
    let c = q.enqueue(&3).await.expect("enqueue").id();
    let jobs = q.claim("w", 3).await.expect("claim");
    assert_eq!(jobs.len(), 3);
    let by_id = |id| jobs.iter().find(|j| j.id == id).expect("claimed").claim();
    assert!(q.heartbeat(by_id(a)).await.expect("hb").is_some());
    assert!(q.release(by_id(a)).await.expect("release"));
    assert!(q.fail(by_id(b), "bad").await.expect("fail"));
    assert!(matches!(
        q.retry_after(by_id(c), "later", Duration::from_secs(60))
            .await
            .expect("retry"),
        RetryOutcome::Scheduled(_)
    ));
    assert_eq!(
        q.get(a).await.expect("get").expect("a").state,
        JobState::Pending
    );
    assert_eq!(
        q.get(b).await.expect("get").expect("b").state,
        JobState::Dead
    );
    assert_eq!(
        q.cancel(c).await.expect("cancel"),
        alkstore::queue::CancelOutcome::Cancelled
    );
    let cancelled = q.get(c).await.expect("get").expect("c");
    assert_eq!(cancelled.dead_reason.as_deref(), Some("cancelled"));
    let s = q.stats().await.expect("stats");
    assert_eq!((s.ready, s.scheduled, s.processing, s.dead), (1, 0, 0, 2));
}

#[tokio::test]
async fn bad_worker_options_are_rejected() {
    use alkstore::{JobCtx, Worker, WorkerOpts};
    use std::time::Duration;
    let dir = tempfile::tempdir().expect("tmp");
    let store = Store::open(&format!("sqlite://{}", dir.path().join("w.db").display()))
        .await
        .expect("open");
    let bad = [
        WorkerOpts {
            max_claim: 0,
            ..WorkerOpts::default()
        },
        WorkerOpts {
            max_claim: 20_000,
            ..WorkerOpts::default()
        },
        WorkerOpts {
            ack_batch: 0,
            ..WorkerOpts::default()
        },
        WorkerOpts {
            poll_interval: Duration::ZERO,
            ..WorkerOpts::default()
        },
        WorkerOpts {
            sweep_interval: Some(Duration::ZERO),
            ..WorkerOpts::default()
        },
    ];
    for opts in bad {
        let err = Worker::new(store.clone())
            .queue("q", |_j: JobCtx<u32>| async { Ok(()) })
            .opts(opts.clone())
            .run_until(async {})
            .await
            .expect_err("rejected");
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{opts:?}");
    }
    let err = Worker::new(store.clone())
        .queue("q", |_j: JobCtx<u32>| async { Ok(()) })
        .concurrency("q", 2_000_000)
        .run_until(async {})
        .await
        .expect_err("too many slots");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
}

#[tokio::test]
async fn postgres_url_can_turn_relaxed_commits_off() {
    use alkstore_postgres::testing;
    let url = testing::ensure_database(&testing::database_url(), "alkstore_test")
        .await
        .expect("postgres");
    let schema = testing::unique_schema("durable");
    let store = Store::open(&format!("{url}?schema={schema}&relaxed_commits=false"))
        .await
        .expect("open");
    let q = store.queue("d");
    q.enqueue(&1).await.expect("enqueue");
    let jobs = q.claim("w", 1).await.expect("claim");
    assert_eq!(q.ack(vec![jobs[0].claim()]).await.expect("ack"), vec![true]);
    let bad = Store::open(&format!("{url}?schema={schema}&relaxed_commits=sometimes")).await;
    assert_eq!(bad.expect_err("bad flag").kind(), ErrorKind::InvalidUrl);
    testing::drop_schema(&url, &schema).await.expect("drop");
}

/// An error and its sources, one line each, as `alk` prints them.
fn error_lines(e: &alkstore::Error) -> Vec<String> {
    let mut out = vec![e.to_string()];
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        out.push(s.to_string());
        source = s.source();
    }
    out
}

/// A refused connection names what it tried (host:port, database, user),
/// never the password, and says its cause once.
#[tokio::test]
async fn connect_errors_name_the_target_once_without_the_password() {
    let err = Store::open("postgres://u:secret@127.0.0.1:1/db?connect_timeout=5")
        .await
        .expect_err("nothing listens on port 1");
    assert_eq!(err.kind(), ErrorKind::Connect, "{err}");
    let lines = error_lines(&err);
    let text = lines.join("\n");
    assert!(text.contains("127.0.0.1:1"), "names host:port: {text}");
    assert!(text.contains("\"db\""), "names the database: {text}");
    assert!(!text.contains("secret"), "no password: {text}");
    assert!(text.to_lowercase().contains("refused"), "says why: {text}");
    for (i, line) in lines.iter().enumerate() {
        for later in &lines[i + 1..] {
            assert!(!line.contains(later.as_str()), "repeated cause: {text}");
        }
    }
    let parts: Vec<&str> = lines[0].split(": ").collect();
    for (i, part) in parts.iter().enumerate() {
        assert!(!parts[i + 1..].contains(part), "repeated cause: {text}");
    }

    let dir = tempfile::tempdir().expect("tmp");
    let missing = dir.path().join("no/such/dir/x.db");
    let err = Store::open(&format!("sqlite://{}", missing.display()))
        .await
        .expect_err("no directory");
    assert_eq!(err.kind(), ErrorKind::Connect, "{err}");
    let sqlite_lines = error_lines(&err);
    let text = sqlite_lines.join("\n");
    assert!(
        text.contains(&missing.display().to_string()),
        "names the file: {text}"
    );
    assert_eq!(sqlite_lines.len(), 1, "{text}");
}

/// `sqlite://:memory:` is a store of this process that leaves no file:
/// enqueue, claim and ack, publish and read, and a worker run all work on
/// it; a second open is a database of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_stores_work_and_leave_no_file() {
    use alkstore::{JobCtx, Worker};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let cwd = std::env::current_dir().expect("cwd");
    let listing = || {
        let mut names: Vec<_> = std::fs::read_dir(&cwd)
            .expect("ls")
            .map(|e| e.expect("entry").file_name())
            .collect();
        names.sort();
        names
    };
    let before = listing();
    let store = Store::open("sqlite://:memory:").await.expect("open");
    let other = Store::open("sqlite://:memory:").await.expect("open");
    let q = store.queue("emails");
    q.enqueue(&Email {
        to: "a@example.com".into(),
    })
    .await
    .expect("enqueue");
    assert_eq!(other.queue("emails").stats().await.expect("stats").ready, 0);
    let jobs = q.claim("w", 10).await.expect("claim");
    let email: Email = jobs[0].decode().expect("decode");
    assert_eq!(email.to, "a@example.com");
    assert_eq!(
        q.ack(jobs.iter().map(|j| j.claim()).collect())
            .await
            .expect("ack"),
        vec![true]
    );
    let orders = store.stream("orders");
    let offset = orders
        .publish_raw(Some("k"), b"{}".to_vec())
        .await
        .expect("publish");
    let events = orders.read(0, 10).await.expect("read");
    assert_eq!(
        events.iter().map(|e| e.offset).collect::<Vec<_>>(),
        vec![offset]
    );
    assert!(other
        .stream("orders")
        .read(0, 10)
        .await
        .expect("read")
        .is_empty());

    for i in 0..100u32 {
        store.queue("work").enqueue(&i).await.expect("enqueue");
    }
    let done = Arc::new(AtomicUsize::new(0));
    let seen = done.clone();
    let watch = store.queue("work");
    let report = Worker::new(store.clone())
        .queue("work", move |_job: JobCtx<u32>| {
            let seen = seen.clone();
            async move {
                seen.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        })
        .concurrency("work", 8)
        .run_until(async move {
            let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
            while watch.stats().await.expect("stats").live() > 0 {
                assert!(tokio::time::Instant::now() < deadline, "jobs left");
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("run");
    assert_eq!(report.completed, 100, "{report:?}");
    assert_eq!(done.load(Ordering::SeqCst), 100);
    assert_eq!(listing(), before, "no file in {}", cwd.display());
}
