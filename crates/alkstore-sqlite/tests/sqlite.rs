//! SQLite-specific behaviour: file errors, migrations from older files,
//! the single writer and its locks. Opening and reopening a store is the
//! contract's `open` area.

use alkstore_core::prelude::*;
use alkstore_core::queue::JobFailParams;
use alkstore_core::{ErrorKind, NewJob};
use alkstore_sqlite::{SqliteEngine, SqliteOptions};

#[test]
fn unopenable_path_is_a_connect_error() {
    let err =
        SqliteEngine::open(SqliteOptions::new("/nonexistent-dir/sub/x.db")).expect_err("no dir");
    assert_eq!(err.kind(), ErrorKind::Connect, "{err}");
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
    assert_eq!(e.queue_stats("g").await.expect("stats").ready, 1_600);
    assert!(commands >= 1_600);
    assert!(
        commits < 1_600,
        "1,600 concurrent enqueues took {commits} commits: no grouping"
    );
    eprintln!("1,600 enqueues in {commits} commits");
}

/// A write that finds the file locked by another connection for longer than
/// the busy timeout fails with a distinct, retryable `Busy` error that says
/// how long it waited, and writes nothing; once the lock is gone it works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_held_elsewhere_is_a_busy_error() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("locked.db");
    let mut opts = SqliteOptions::new(&path);
    opts.busy_timeout = std::time::Duration::from_millis(1_500);
    let e = SqliteEngine::open(opts).expect("open");
    let other = rusqlite::Connection::open(&path).expect("conn");
    other.execute_batch("BEGIN IMMEDIATE").expect("lock");
    let err = e
        .job_enqueue(vec![NewJob::new("q", b"x".to_vec())])
        .await
        .expect_err("locked");
    assert_eq!(err.kind(), ErrorKind::Busy, "{err}");
    let msg = err.to_string();
    assert!(msg.contains("locked") && msg.contains("1.5s"), "{msg}");
    other.execute_batch("ROLLBACK").expect("unlock");
    let s = e.queue_stats("q").await.expect("stats");
    assert_eq!(s.ready, 0, "nothing was written");
    e.job_enqueue(vec![NewJob::new("q", b"x".to_vec())])
        .await
        .expect("works once the lock is gone");
}

/// A write that must wait for another connection's lock waits off the
/// runtime's threads: on a single-threaded runtime, the task that releases
/// the lock still runs, and the write then goes through.
#[tokio::test(flavor = "current_thread")]
async fn a_write_waiting_for_a_lock_leaves_the_runtime_free() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("held.db");
    let mut opts = SqliteOptions::new(&path);
    opts.busy_timeout = std::time::Duration::from_secs(3);
    let e = SqliteEngine::open(opts).expect("open");
    let other = rusqlite::Connection::open(&path).expect("conn");
    other.execute_batch("BEGIN IMMEDIATE").expect("lock");
    let writer = e.clone();
    let write = tokio::spawn(async move {
        writer
            .job_enqueue(vec![NewJob::new("q", b"x".to_vec())])
            .await
    });
    // The write has begun to wait; this task (on the same thread) must
    // still run to release the lock.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(!write.is_finished(), "the write waits for the lock");
    other.execute_batch("COMMIT").expect("unlock");
    let out = write
        .await
        .expect("join")
        .expect("written once the lock is gone");
    assert_eq!(out.len(), 1);
    assert_eq!(e.queue_stats("q").await.expect("stats").ready, 1);
}

/// An in-memory database would be a different, empty database on every
/// connection: it is refused with a clear error instead of failing later.
#[test]
fn other_in_memory_forms_are_refused() {
    for path in ["", "file::memory:?cache=shared", "file:x?mode=memory"] {
        let err = SqliteEngine::open(SqliteOptions::new(path)).expect_err(path);
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{path}: {err}");
        assert!(err.to_string().contains(":memory:"), "{err}");
    }
    let mut existing_only = SqliteOptions::new(":memory:");
    existing_only.create = false;
    let err = SqliteEngine::open(existing_only).expect_err("a new one is empty");
    assert_eq!(err.kind(), ErrorKind::NoStore, "{err}");
}

/// `:memory:` is one database shared by every connection of the engine
/// (writer, readers): what one writes the others read; each open is a
/// database of its own; and it leaves no file behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_stores_are_shared_by_the_engine_and_apart_from_each_other() {
    use alkstore_core::stream::{NewEvent, StreamReadParams};
    use alkstore_core::{JobClaimParams, QueueAdmin, QueueEngine, StreamEngine};
    let cwd = std::env::current_dir().expect("cwd");
    let before: Vec<_> = std::fs::read_dir(&cwd).expect("ls").collect();
    let a = SqliteEngine::open(SqliteOptions::new(":memory:")).expect("open a");
    let b = SqliteEngine::open(SqliteOptions::new(":memory:")).expect("open b");
    assert_ne!(a.path(), b.path());
    a.job_enqueue(vec![NewJob::new("q", b"1".to_vec())])
        .await
        .expect("enqueue");
    // Reads on pooled read connections see the writer's commit.
    let again = a.clone();
    let stats = tokio::spawn(async move { again.queue_stats("q").await })
        .await
        .expect("join")
        .expect("stats");
    assert_eq!(stats.ready, 1);
    assert_eq!(b.queue_stats("q").await.expect("stats b").ready, 0, "apart");
    let jobs = a
        .job_claim(JobClaimParams::new("q", "w", 10))
        .await
        .expect("claim");
    assert_eq!(jobs.len(), 1);
    assert_eq!(
        a.job_ack(vec![jobs[0].claim()]).await.expect("ack"),
        vec![true]
    );
    let offsets = a
        .stream_publish(NewEvent::new("s", b"e".to_vec()))
        .await
        .expect("publish");
    let events = a
        .stream_read(StreamReadParams::new("s", 0, 10))
        .await
        .expect("read");
    assert_eq!(events.iter().map(|e| e.offset).collect::<Vec<_>>(), offsets);
    assert!(b
        .stream_read(StreamReadParams::new("s", 0, 10))
        .await
        .expect("read b")
        .is_empty());

    // Many readers and the writer at once: nothing fails for a lock.
    let mut tasks = Vec::new();
    for i in 0..8 {
        let e = a.clone();
        tasks.push(tokio::spawn(async move {
            for j in 0..50 {
                let job = NewJob::new("many", format!("{i}-{j}").into_bytes());
                e.job_enqueue(vec![job]).await.expect("enqueue");
                e.queue_stats("many").await.expect("stats");
            }
        }));
    }
    for t in tasks {
        t.await.expect("task");
    }
    assert_eq!(a.queue_stats("many").await.expect("stats").ready, 400);

    // A dropped store is gone: a new open starts empty.
    let path = a.path().to_path_buf();
    drop(a);
    let c = SqliteEngine::open(SqliteOptions::new(":memory:")).expect("open c");
    assert_ne!(c.path(), path);
    assert_eq!(c.queue_stats("many").await.expect("stats").ready, 0);
    let after: Vec<_> = std::fs::read_dir(&cwd).expect("ls").collect();
    assert_eq!(before.len(), after.len(), "no file in {}", cwd.display());
}

/// An existing-only open (`create: false`) of a file that holds only the
/// application's tables is `NoStore`, and creates no alkstore table in it
/// (the contract row `open::an_existing_only_open_creates_nothing` covers
/// a missing file).
#[test]
fn existing_only_open_of_an_application_file_creates_nothing() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("app.db");
    let mut opts = SqliteOptions::new(&path);
    opts.create = false;
    let conn = rusqlite::Connection::open(&path).expect("conn");
    conn.execute_batch("CREATE TABLE app (x)")
        .expect("app table");
    drop(conn);
    let err = SqliteEngine::open(opts.clone()).expect_err("not a store");
    assert_eq!(err.kind(), ErrorKind::NoStore, "{err}");
    let conn = rusqlite::Connection::open(&path).expect("conn");
    let tables: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE name LIKE '__alkstore%'",
            [],
            |r| r.get(0),
        )
        .expect("count");
    assert_eq!(tables, 0, "no alkstore tables were created");
    drop(SqliteEngine::open(SqliteOptions::new(&path)).expect("create"));
    SqliteEngine::open(opts).expect("an existing store opens");
}

/// A version 1 file (claims proven by attempt) migrates in place: live
/// claims keep working, and the new tables and columns appear.
#[tokio::test]
async fn version_1_files_migrate_keeping_live_claims() {
    use alkstore_core::{Claim, JobClaimParams};
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("v1.db");
    let e = SqliteEngine::open(SqliteOptions::new(&path)).expect("open");
    e.job_enqueue(vec![NewJob::new("q", b"x".to_vec())])
        .await
        .expect("enqueue");
    let job = e
        .job_claim(JobClaimParams::new("q", "w", 1))
        .await
        .expect("claim")
        .remove(0);
    drop(e);
    // Turn the file back into version 1.
    let conn = rusqlite::Connection::open(&path).expect("conn");
    conn.execute_batch(
        "UPDATE __alkstore_job SET claim_count = 0;
         ALTER TABLE __alkstore_job DROP COLUMN claim_count;
         ALTER TABLE __alkstore_job DROP COLUMN cancel_requested;
         ALTER TABLE __alkstore_job DROP COLUMN keep_completed_s;
         ALTER TABLE __alkstore_job DROP COLUMN errors;
         ALTER TABLE __alkstore_dead DROP COLUMN claim_count;
         ALTER TABLE __alkstore_dead DROP COLUMN keep_completed_s;
         ALTER TABLE __alkstore_dead DROP COLUMN errors;
         ALTER TABLE __alkstore_job DROP COLUMN tags;
         ALTER TABLE __alkstore_job DROP COLUMN meta;
         ALTER TABLE __alkstore_dead DROP COLUMN tags;
         ALTER TABLE __alkstore_dead DROP COLUMN meta;
         DROP TABLE __alkstore_done;
         ALTER TABLE __alkstore_event DROP COLUMN key_hash;
         ALTER TABLE __alkstore_group_bucket DROP COLUMN last_owner;
         ALTER TABLE __alkstore_group_bucket DROP COLUMN released_how;
         UPDATE __alkstore_meta SET value = 1 WHERE key = 'schema_version';",
    )
    .expect("downgrade");
    drop(conn);
    let e = SqliteEngine::open(SqliteOptions::new(&path)).expect("migrate");
    // A version 1 claim's token was its attempt number.
    let v1_claim = Claim {
        id: job.id,
        worker: "w".into(),
        token: i64::from(job.attempt),
    };
    assert_eq!(e.job_ack(vec![v1_claim]).await.expect("ack"), vec![true]);
    let version: i64 = rusqlite::Connection::open(&path)
        .expect("conn")
        .query_row(
            "SELECT value FROM __alkstore_meta WHERE key = 'schema_version'",
            [],
            |r| r.get(0),
        )
        .expect("version");
    assert_eq!(version, alkstore_sqlite::SCHEMA_VERSION);
}

/// The outbox publish on a connection with no open transaction runs in a
/// savepoint of its own: a failure part-way through a batch (here a trigger
/// of the application's refusing one event) leaves nothing, and the offset
/// counter does not move.
#[tokio::test]
async fn outbox_publish_without_a_transaction_is_all_or_none() {
    use alkstore_core::stream::{NewEvent, StreamReadParams};
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("outbox.db");
    let engine = SqliteEngine::open(SqliteOptions::new(&path)).expect("open");
    let conn = rusqlite::Connection::open(&path).expect("app connection");
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .expect("busy timeout");
    conn.execute_batch(
        "CREATE TRIGGER refuse_boom BEFORE INSERT ON __alkstore_event \
         WHEN NEW.payload = CAST('boom' AS BLOB) BEGIN SELECT RAISE(ABORT, 'boom'); END;",
    )
    .expect("trigger");
    let mut batch: Vec<NewEvent> = (0..70)
        .map(|i| NewEvent::new("s", format!("e{i}").into_bytes()))
        .collect();
    batch.push(NewEvent::new("s", b"boom".to_vec()));
    assert!(conn.is_autocommit());
    engine
        .within(&conn)
        .run_now::<alkstore_core::stream::StreamPublishParams>(batch)
        .expect_err("the trigger refuses the last event");
    assert!(conn.is_autocommit(), "no transaction left open");
    let read = engine
        .stream_read(StreamReadParams::new("s", 0, 100))
        .await
        .expect("read");
    assert!(read.is_empty(), "none of the batch was written");
    let offsets = engine
        .within(&conn)
        .run_now::<alkstore_core::stream::StreamPublishParams>(vec![NewEvent::new(
            "s",
            b"ok".to_vec(),
        )])
        .expect("publish");
    assert_eq!(
        offsets,
        [1],
        "the counter did not move for the failed batch"
    );
}

/// Notifications are kept about a minute for listeners catching up, then
/// pruned; ids never go back, even once every row was pruned.
#[tokio::test]
async fn notifications_are_pruned_after_a_minute_and_ids_keep_growing() {
    use alkstore_core::notify::{NotifyParams, NotifyPollParams};
    use alkstore_core::NotifyEngine;
    let dir = tempfile::tempdir().expect("tmp");
    let clock = alkstore_core::ManualClock::starting_now();
    let engine = SqliteEngine::open(
        SqliteOptions::new(dir.path().join("n.db")).clock(std::sync::Arc::new(clock.clone())),
    )
    .expect("open");
    let poll = |after_id| NotifyPollParams::new("c", after_id, 100);
    engine
        .notify(NotifyParams::new("c", "old"))
        .await
        .expect("notify");
    clock.advance(std::time::Duration::from_secs(30));
    engine
        .notify(NotifyParams::new("c", "newer"))
        .await
        .expect("notify");
    let kept: Vec<String> = engine
        .notify_poll(poll(0))
        .await
        .expect("poll")
        .into_iter()
        .map(|n| n.payload)
        .collect();
    assert_eq!(kept, ["old", "newer"]);
    clock.advance(std::time::Duration::from_secs(31));
    engine
        .notify(NotifyParams::new("c", "newest"))
        .await
        .expect("notify");
    let kept: Vec<(i64, String)> = engine
        .notify_poll(poll(0))
        .await
        .expect("poll")
        .into_iter()
        .map(|n| (n.id, n.payload))
        .collect();
    assert_eq!(
        kept,
        [(2, "newer".to_string()), (3, "newest".to_string())],
        "the first is pruned"
    );
    clock.advance(std::time::Duration::from_secs(3_600));
    engine
        .notify(NotifyParams::new("other", "x"))
        .await
        .expect("notify");
    assert!(
        engine.notify_poll(poll(0)).await.expect("poll").is_empty(),
        "all pruned"
    );
    assert_eq!(engine.notify_head().await.expect("head"), 4);
}

/// Events stored before the key hash was kept (schema 10) get it when the
/// file migrates: consumer groups place them exactly as PostgreSQL would.
#[tokio::test]
async fn events_from_before_the_key_hash_get_it_on_migration() {
    use alkstore_core::group::{bucket_of, hashtextextended};
    use alkstore_core::stream::NewEvent;
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("h.db");
    let e = SqliteEngine::open(SqliteOptions::new(&path)).expect("open");
    let keys = ["a", "customer-42", "ü€𝄞", "x y"];
    let mut events: Vec<NewEvent> = keys
        .iter()
        .map(|k| NewEvent::new("s", b"x".to_vec()).key(*k))
        .collect();
    events.push(NewEvent::new("s", b"keyless".to_vec()));
    e.stream_publish(events).await.expect("publish");
    drop(e);
    let conn = rusqlite::Connection::open(&path).expect("conn");
    conn.execute_batch(
        "ALTER TABLE __alkstore_event DROP COLUMN key_hash;
         ALTER TABLE __alkstore_job DROP COLUMN tags;
         ALTER TABLE __alkstore_job DROP COLUMN meta;
         ALTER TABLE __alkstore_dead DROP COLUMN tags;
         ALTER TABLE __alkstore_dead DROP COLUMN meta;
         ALTER TABLE __alkstore_done DROP COLUMN tags;
         ALTER TABLE __alkstore_done DROP COLUMN meta;
         ALTER TABLE __alkstore_group_bucket DROP COLUMN last_owner;
         ALTER TABLE __alkstore_group_bucket DROP COLUMN released_how;
         UPDATE __alkstore_meta SET value = 10 WHERE key = 'schema_version';",
    )
    .expect("downgrade");
    drop(conn);
    drop(SqliteEngine::open(SqliteOptions::new(&path)).expect("migrate"));
    let conn = rusqlite::Connection::open(&path).expect("conn");
    let rows: Vec<(Option<String>, Option<i64>)> = conn
        .prepare("SELECT key, key_hash FROM __alkstore_event ORDER BY id")
        .expect("prepare")
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("query")
        .collect::<rusqlite::Result<_>>()
        .expect("rows");
    assert_eq!(rows.len(), 5);
    for (key, hash) in &rows {
        assert_eq!(
            *hash,
            key.as_ref().map(|k| hashtextextended(k.as_bytes(), 0)),
            "{key:?}"
        );
    }
    assert_eq!(bucket_of("customer-42".as_bytes(), 16), 0);
}

/// A stored schedule whose spec no longer parses (here: written by hand
/// with an unknown zone) is skipped; every other schedule still fires.
#[tokio::test]
async fn a_schedule_that_no_longer_parses_does_not_stop_the_others() {
    use alkstore_core::schedule::{ScheduleFireParams, ScheduleSetParams};
    use alkstore_core::ScheduleEngine;
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("s.db");
    let clock = alkstore_core::ManualClock::starting_now();
    let e = SqliteEngine::open(SqliteOptions::new(&path).clock(std::sync::Arc::new(clock.clone())))
        .expect("open");
    for name in ["bad", "good"] {
        e.schedule_set(ScheduleSetParams::new(name, "0 * * * *", "q").tz("UTC"))
            .await
            .expect("set");
    }
    rusqlite::Connection::open(&path)
        .expect("conn")
        .execute(
            "UPDATE __alkstore_schedule SET tz = 'Gone/Zone' WHERE name = 'bad'",
            [],
        )
        .expect("corrupt");
    clock.advance(std::time::Duration::from_secs(3_600));
    let r = e
        .schedule_fire_due(ScheduleFireParams::default())
        .await
        .expect("fire");
    let fired: Vec<&str> = r.fired.iter().map(|f| f.schedule.as_str()).collect();
    assert_eq!(fired, ["good"]);
}

/// An ack from another process (another engine on the file) counts the job
/// for its queue too: the acking engine never saw the claim, so it learns
/// the queue from the row it deletes.
#[tokio::test]
async fn acks_of_jobs_claimed_elsewhere_count_for_their_queue() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("x.db");
    let claimer = SqliteEngine::open(SqliteOptions::new(&path)).expect("open");
    let acker = SqliteEngine::open(SqliteOptions::new(&path)).expect("open");
    claimer
        .job_enqueue(vec![
            NewJob::new("a", b"1".to_vec()),
            NewJob::new("a", b"2".to_vec()),
            NewJob::new("b", b"3".to_vec()),
        ])
        .await
        .expect("enqueue");
    let mut claims = Vec::new();
    for q in ["a", "b"] {
        let jobs = claimer
            .job_claim(alkstore_core::JobClaimParams::new(q, "w", 10))
            .await
            .expect("claim");
        claims.extend(jobs.iter().map(|j| j.claim()));
    }
    assert_eq!(
        acker.job_ack(claims.clone()).await.expect("ack"),
        vec![true; 3]
    );
    // The claimer's own ack of the same claims finds nothing and counts
    // nothing, though it remembers their queues.
    assert_eq!(claimer.job_ack(claims).await.expect("ack"), vec![false; 3]);
    let got = claimer
        .queue_throughput(alkstore_core::QueueThroughputParams::every_queue(
            std::time::Duration::from_secs(60),
        ))
        .await
        .expect("throughput");
    let totals: Vec<(String, u64)> = got
        .totals
        .iter()
        .map(|t| (t.queue.clone(), t.completed))
        .collect();
    assert_eq!(totals, vec![("a".to_string(), 2), ("b".to_string(), 1)]);
}

/// The id of the job enqueued first, acking it so that no row holds it.
async fn enqueue_and_ack(e: &SqliteEngine, queue: &str) -> i64 {
    use alkstore_core::JobClaimParams;
    let id = e
        .job_enqueue(vec![NewJob::new(queue, b"x".to_vec())])
        .await
        .expect("enqueue")[0]
        .id();
    let j = e
        .job_claim(JobClaimParams::new(queue, "w", 1))
        .await
        .expect("claim")
        .remove(0);
    assert_eq!(j.id, id);
    assert_eq!(e.job_ack(vec![j.claim()]).await.expect("ack"), vec![true]);
    id
}

/// Job ids come from blocks the engine reserves (migration 013): after the
/// newest job is acked, a reopened file (a restart, or a crash after the
/// commit) hands out higher ids; two engines on one file never hand out the
/// same id and their ids rise in commit order; the outbox takes its own.
#[tokio::test]
async fn job_ids_are_never_reused_across_engines_and_restarts() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("ids.db");
    let a = SqliteEngine::open(SqliteOptions::new(&path)).expect("open");
    let first = enqueue_and_ack(&a, "q").await;
    drop(a);
    let a = SqliteEngine::open(SqliteOptions::new(&path)).expect("reopen");
    let b = SqliteEngine::open(SqliteOptions::new(&path)).expect("second engine");
    let mut last = first;
    for round in 0..3 {
        for e in [&a, &b] {
            let id = enqueue_and_ack(e, "q").await;
            assert!(id > last, "round {round}: {id} after {last}");
            last = id;
        }
    }
    let conn = rusqlite::Connection::open(&path).expect("app connection");
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .expect("busy timeout");
    let outboxed = a
        .within(&conn)
        .run_now::<alkstore_core::queue::JobEnqueueParams>(NewJob::new("q", b"o".to_vec()))
        .expect("outbox")[0]
        .id();
    assert!(outboxed > last, "{outboxed} after {last}");
    let after = enqueue_and_ack(&b, "other").await;
    assert!(after > outboxed, "{after} after {outboxed}");
}

/// A command that reserved ids and then failed rolls its reservation back:
/// the engine must forget those ids, or it would hand them out again after
/// a restart, when the file no longer records them (here a job made
/// invalid by an application trigger fails its batch, the first
/// reservation's).
#[tokio::test]
async fn ids_reserved_by_a_failed_batch_are_not_handed_out() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("rollback.db");
    let e = SqliteEngine::open(SqliteOptions::new(&path)).expect("open");
    rusqlite::Connection::open(&path)
        .expect("conn")
        .execute_batch(
            "CREATE TRIGGER refuse BEFORE INSERT ON __alkstore_job WHEN new.queue = 'bad' \
             BEGIN SELECT RAISE(ABORT, 'refused'); END",
        )
        .expect("trigger");
    let failed = e
        .job_enqueue(vec![
            NewJob::new("q", b"x".to_vec()),
            NewJob::new("bad", b"x".to_vec()),
        ])
        .await;
    assert!(failed.is_err(), "{failed:?}");
    let id = enqueue_and_ack(&e, "q").await;
    drop(e);
    let e = SqliteEngine::open(SqliteOptions::new(&path)).expect("reopen");
    let next = enqueue_and_ack(&e, "q").await;
    assert!(next > id, "{next} after {id}");
}

/// A file written with AUTOINCREMENT ids (schema 12) keeps its counter
/// through migration 013: the newest job was acked, and the next id is
/// still above it.
#[tokio::test]
async fn ids_continue_above_an_autoincrement_counter() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("v12.db");
    drop(SqliteEngine::open(SqliteOptions::new(&path)).expect("open"));
    // Turn the file back into version 12: a job table with AUTOINCREMENT
    // whose counter (5000) is above every row (the newest ones were acked),
    // and further above them than a block of reserved ids reaches.
    let conn = rusqlite::Connection::open(&path).expect("conn");
    conn.execute_batch(
        "DROP TABLE __alkstore_job;
         CREATE TABLE __alkstore_job (id INTEGER PRIMARY KEY AUTOINCREMENT, queue TEXT NOT NULL,
           state TEXT NOT NULL DEFAULT 'pending', payload BLOB NOT NULL,
           priority INTEGER NOT NULL DEFAULT 0, run_at INTEGER NOT NULL,
           attempts INTEGER NOT NULL DEFAULT 0, max_attempts INTEGER NOT NULL, worker_id TEXT,
           claimed_at INTEGER, claim_expires_at INTEGER, created_at INTEGER NOT NULL,
           expires_at INTEGER, visibility_timeout_s INTEGER NOT NULL,
           backoff_base_s INTEGER NOT NULL, dead_letter_retention_s INTEGER, unique_key TEXT,
           last_error TEXT, claim_count INTEGER NOT NULL DEFAULT 0,
           cancel_requested INTEGER NOT NULL DEFAULT 0, keep_completed_s INTEGER, errors TEXT);
         INSERT INTO __alkstore_job (id, queue, payload, run_at, max_attempts, created_at,
           visibility_timeout_s, backoff_base_s) VALUES (7, 'q', x'00', 0, 3, 0, 300, 5);
         UPDATE sqlite_sequence SET seq = 5000 WHERE name = '__alkstore_job';
         INSERT INTO sqlite_sequence (name, seq) SELECT '__alkstore_job', 5000
           WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = '__alkstore_job');
         DELETE FROM __alkstore_meta WHERE key = 'job_id_high';
         ALTER TABLE __alkstore_dead DROP COLUMN tags;
         ALTER TABLE __alkstore_dead DROP COLUMN meta;
         ALTER TABLE __alkstore_done DROP COLUMN tags;
         ALTER TABLE __alkstore_done DROP COLUMN meta;
         ALTER TABLE __alkstore_group_bucket DROP COLUMN last_owner;
         ALTER TABLE __alkstore_group_bucket DROP COLUMN released_how;
         UPDATE __alkstore_meta SET value = 12 WHERE key = 'schema_version';",
    )
    .expect("downgrade");
    drop(conn);
    let e = SqliteEngine::open(SqliteOptions::new(&path)).expect("migrate");
    let kept = e
        .job_get(7)
        .await
        .expect("get")
        .expect("the old job is kept");
    assert_eq!(kept.queue, "q");
    let id = e
        .job_enqueue(vec![NewJob::new("q", b"new".to_vec())])
        .await
        .expect("enqueue")[0]
        .id();
    assert!(id > 5000, "{id} reuses an id at or below the counter");
}

/// The outbox enqueue outside a transaction reserves its id and inserts the
/// job in one savepoint: they commit together or not at all (a reservation
/// committed alone would let a writer reserve above it and commit a higher
/// id first). Here an application trigger refuses the job, and the counter
/// is left as it was.
#[tokio::test]
async fn an_outbox_enqueue_reserves_its_id_only_with_its_job() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("outbox-ids.db");
    let engine = SqliteEngine::open(SqliteOptions::new(&path)).expect("open");
    enqueue_and_ack(&engine, "q").await;
    let conn = rusqlite::Connection::open(&path).expect("app connection");
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .expect("busy timeout");
    conn.execute_batch(
        "CREATE TRIGGER refuse BEFORE INSERT ON __alkstore_job WHEN new.queue = 'bad' \
         BEGIN SELECT RAISE(ABORT, 'refused'); END",
    )
    .expect("trigger");
    let high = |conn: &rusqlite::Connection| -> i64 {
        conn.query_row(
            "SELECT value FROM __alkstore_meta WHERE key = 'job_id_high'",
            [],
            |r| r.get(0),
        )
        .expect("counter")
    };
    let before = high(&conn);
    let refused = engine
        .within(&conn)
        .run_now::<alkstore_core::queue::JobEnqueueParams>(NewJob::new("bad", b"x".to_vec()));
    assert!(refused.is_err(), "{refused:?}");
    assert!(conn.is_autocommit(), "no transaction left open");
    assert_eq!(high(&conn), before, "the reservation went with the job");
    let id = engine
        .within(&conn)
        .run_now::<alkstore_core::queue::JobEnqueueParams>(NewJob::new("q", b"x".to_vec()))
        .expect("outbox")[0]
        .id();
    assert_eq!(high(&conn), id, "one id reserved, and used");
}

/// Every `Wake::All` hint that arrives within `within`.
async fn all_hints(
    rx: &mut tokio::sync::broadcast::Receiver<alkstore_core::Wake>,
    within: std::time::Duration,
) -> usize {
    let deadline = tokio::time::Instant::now() + within;
    let mut all = 0;
    while let Ok(got) = tokio::time::timeout_at(deadline, rx.recv()).await {
        match got {
            Ok(alkstore_core::Wake::All) => all += 1,
            Ok(_) => {}
            // A lag counts as nothing seen: the assertions below fail only
            // on hints seen.
            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
            Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
        }
    }
    all
}

/// Commits by other connections wake every listener, whether the engine's
/// writer is idle (the watcher sees them) or busy (the watcher waits for
/// its groups to end, and each group looks at its start).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_connections_commits_wake_listeners_while_the_engine_writes() {
    use std::time::Duration;
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("x.db");
    let e = SqliteEngine::open(SqliteOptions::new(&path)).expect("open");
    let mut rx = e.wake_hints();
    e.job_enqueue(vec![NewJob::new("q", b"first".to_vec())])
        .await
        .expect("enqueue");
    // Let the watcher start, then forget what came before.
    all_hints(&mut rx, Duration::from_millis(200)).await;
    let other = rusqlite::Connection::open(&path).expect("conn");
    other
        .execute_batch("CREATE TABLE app (x); INSERT INTO app VALUES (1);")
        .expect("app commit");
    assert!(
        all_hints(&mut rx, Duration::from_millis(500)).await >= 1,
        "another connection's commit woke nobody while the engine was idle"
    );
    // The engine writes all the time; another connection commits between.
    let writer = {
        let e = e.clone();
        tokio::spawn(async move {
            for i in 0..400u32 {
                e.job_enqueue(vec![NewJob::new("q", i.to_le_bytes().to_vec())])
                    .await
                    .expect("enqueue");
            }
        })
    };
    tokio::time::sleep(Duration::from_millis(5)).await;
    while rx.try_recv().is_ok() {}
    other
        .execute("INSERT INTO app VALUES (2)", [])
        .expect("app commit");
    assert!(
        all_hints(&mut rx, Duration::from_millis(500)).await >= 1,
        "another connection's commit woke nobody while the engine wrote"
    );
    writer.await.expect("writer task");
}

/// What the rate limit promises across processes sharing a file (engines
/// on one file stand in for them): never more than the limit per window
/// in total. (No share per engine is promised; see `alkstore_core::rate`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limits_hold_across_engines_on_one_file() {
    use alkstore_core::rate::RateAcquireParams;
    use alkstore_core::RateEngine;
    use std::time::Duration;
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("rates.db");
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let engine = SqliteEngine::open(SqliteOptions::new(&path)).expect("open");
        for _ in 0..4 {
            let e = engine.clone();
            tasks.push(tokio::spawn(async move {
                let mut admitted = 0;
                for _ in 0..30 {
                    let p = RateAcquireParams::new("smtp", 50, Duration::from_secs(86_400));
                    if e.rate_acquire(p).await.expect("acquire").admitted {
                        admitted += 1;
                    }
                }
                admitted
            }));
        }
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.expect("task");
    }
    assert_eq!(total, 50, "exactly the limit, over every engine");
}

// The application's own transaction (`Transaction` on this engine).

use alkstore_core::stream::NewEvent;
use alkstore_core::stream::StreamReadParams;
use alkstore_core::{JobClaimParams, QueueThroughputParams, Transaction};

/// A file store and the application's table `orders` in it.
fn store_with_orders(dir: &tempfile::TempDir) -> SqliteEngine {
    let path = dir.path().join("tx.db");
    let e = SqliteEngine::open(SqliteOptions::new(&path)).expect("open");
    let conn = rusqlite::Connection::open(&path).expect("conn");
    conn.execute_batch("CREATE TABLE orders (id INTEGER PRIMARY KEY, note TEXT)")
        .expect("app table");
    e
}

/// Rows of the application's table, read on a connection of its own.
fn orders(e: &SqliteEngine) -> Vec<String> {
    let conn = rusqlite::Connection::open(e.path()).expect("conn");
    let mut s = conn
        .prepare("SELECT note FROM orders ORDER BY id")
        .expect("select");
    let rows = s.query_map([], |r| r.get(0)).expect("rows");
    rows.collect::<rusqlite::Result<_>>().expect("collect")
}

fn insert_order(tx: &mut Transaction<SqliteEngine>, note: &str) {
    tx.driver_tx()
        .expect("open")
        .conn()
        .execute("INSERT INTO orders (note) VALUES (?1)", [note])
        .expect("business row");
}

/// A write through the engine's writer that finds a transaction open waits
/// for it (off the runtime's one thread, so the transaction can go on and
/// commit), then goes through; ids rise in commit order: the writer's job,
/// committed after the transaction's, has the higher id, though the writer
/// had reserved a block of ids before the transaction began.
#[tokio::test(flavor = "current_thread")]
async fn tx_a_racing_writer_call_gets_through_after_commit_with_higher_ids() {
    let dir = tempfile::tempdir().expect("tmp");
    let e = store_with_orders(&dir);
    let before = e
        .job_enqueue(vec![NewJob::new("q", b"before".to_vec())])
        .await
        .expect("enqueue")[0]
        .id();
    let mut tx = Transaction::begin(&e).await.expect("begin");
    insert_order(&mut tx, "order 1");
    let in_tx = tx
        .job_enqueue(vec![NewJob::new("q", b"in tx".to_vec())])
        .await
        .expect("enqueue in tx")[0]
        .id();
    let racer = e.clone();
    let racing = tokio::spawn(async move {
        racer
            .job_enqueue(vec![NewJob::new("q", b"racing".to_vec())])
            .await
    });
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(
        !racing.is_finished(),
        "the writer waits for the transaction"
    );
    tx.commit().await.expect("commit");
    let after = racing
        .await
        .expect("join")
        .expect("written after the commit")[0]
        .id();
    assert!(
        before < in_tx && in_tx < after,
        "{before} < {in_tx} < {after}"
    );
    assert_eq!(orders(&e), ["order 1"]);
    let jobs = e
        .job_claim(JobClaimParams::new("q", "w", 10))
        .await
        .expect("claim");
    let payloads: Vec<&[u8]> = jobs.iter().map(|j| j.payload.as_slice()).collect();
    assert_eq!(payloads, [&b"before"[..], b"in tx", b"racing"]);
}

/// Dropping a transaction rolls back its writes and the application's; the
/// next transaction on the engine's connection begins clean and commits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tx_dropped_rolls_back_and_the_next_one_commits() {
    let dir = tempfile::tempdir().expect("tmp");
    let e = store_with_orders(&dir);
    {
        let mut tx = Transaction::begin(&e).await.expect("begin");
        insert_order(&mut tx, "dropped");
        tx.job_enqueue(vec![NewJob::new("q", b"dropped".to_vec())])
            .await
            .expect("enqueue");
        tx.stream_publish(vec![NewEvent::new("s", b"dropped".to_vec())])
            .await
            .expect("publish");
    }
    assert!(orders(&e).is_empty());
    assert_eq!(e.queue_stats("q").await.expect("stats").ready, 0);
    let mut tx = Transaction::begin(&e).await.expect("begin again");
    insert_order(&mut tx, "kept");
    let offsets = tx
        .stream_publish(vec![NewEvent::new("s", b"kept".to_vec())])
        .await
        .expect("publish");
    tx.commit().await.expect("commit");
    assert_eq!(orders(&e), ["kept"]);
    let events = e
        .stream_read(StreamReadParams::new("s", 0, 10))
        .await
        .expect("read");
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].offset, offsets[0]);
}

/// SQL of the application's own that ends the transaction (a `COMMIT` on
/// its connection) makes the wrapper's commit fail rather than pretend;
/// one that leaves a transaction of its own open is rolled back when the
/// transaction is dropped: the next one begins clean all the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tx_ended_by_its_own_sql_is_refused_and_spoils_nothing_after() {
    let dir = tempfile::tempdir().expect("tmp");
    let e = store_with_orders(&dir);
    let mut tx = Transaction::begin(&e).await.expect("begin");
    let conn = tx.driver_tx().expect("open").conn();
    conn.execute_batch("COMMIT").expect("own SQL");
    let err = tx.commit().await.expect_err("already ended");
    assert_eq!(err.kind(), ErrorKind::Database, "{err}");
    {
        let mut tx = Transaction::begin(&e).await.expect("begin");
        let conn = tx.driver_tx().expect("open").conn();
        conn.execute_batch("COMMIT; BEGIN; INSERT INTO orders (note) VALUES ('stray')")
            .expect("own SQL");
    }
    let mut tx = Transaction::begin(&e).await.expect("begin again");
    insert_order(&mut tx, "clean");
    tx.notify(alkstore_core::notify::NotifyParams::new("orders", "1"))
        .await
        .expect("notify");
    tx.commit().await.expect("commit");
    assert_eq!(orders(&e), ["clean"], "the stray write was rolled back");
}

/// Acks and failures in a transaction count in the queue's throughput
/// with the transaction: nothing when it rolls back, once when it commits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tx_acks_count_in_throughput_only_when_committed() {
    let dir = tempfile::tempdir().expect("tmp");
    let e = store_with_orders(&dir);
    e.job_enqueue(vec![
        NewJob::new("q", b"1".to_vec()),
        NewJob::new("q", b"2".to_vec()),
    ])
    .await
    .expect("enqueue");
    let jobs = e
        .job_claim(JobClaimParams::new("q", "w", 2))
        .await
        .expect("claim");
    let totals = |e: SqliteEngine| async move {
        let t = e
            .queue_throughput(QueueThroughputParams::every_queue(
                std::time::Duration::from_secs(60),
            ))
            .await
            .expect("throughput");
        t.totals
            .iter()
            .map(|t| (t.completed, t.failed))
            .next()
            .unwrap_or((0, 0))
    };
    let tx = Transaction::begin(&e).await.expect("begin");
    tx.job_ack(jobs[0].claim()).await.expect("ack");
    tx.job_fail(JobFailParams::new(jobs[1].claim(), "no".to_string()))
        .await
        .expect("fail");
    tx.rollback().await.expect("rollback");
    assert_eq!(totals(e.clone()).await, (0, 0));
    let tx = Transaction::begin(&e).await.expect("begin");
    tx.job_ack(jobs[0].claim()).await.expect("ack");
    tx.job_fail(JobFailParams::new(jobs[1].claim(), "no".to_string()))
        .await
        .expect("fail");
    tx.commit().await.expect("commit");
    assert_eq!(totals(e.clone()).await, (1, 1));
    // The writer remembers the claims' queues; its acks now find nothing.
    assert_eq!(
        e.job_ack(vec![jobs[0].claim()]).await.expect("ack"),
        vec![false]
    );
}

/// An in-memory store: the transaction runs on its one database, and what
/// it commits, the application's table included, is there for the engine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tx_on_an_in_memory_store() {
    let e = SqliteEngine::open(SqliteOptions::new(":memory:")).expect("open");
    let mut tx = Transaction::begin(&e).await.expect("begin");
    let conn = tx.driver_tx().expect("open").conn();
    conn.execute_batch("CREATE TABLE orders (id INTEGER PRIMARY KEY, note TEXT); INSERT INTO orders (note) VALUES ('in memory')")
        .expect("own SQL");
    tx.job_enqueue(vec![NewJob::new("q", b"x".to_vec())])
        .await
        .expect("enqueue");
    tx.stream_publish(vec![NewEvent::new("s", b"y".to_vec())])
        .await
        .expect("publish");
    tx.commit().await.expect("commit");
    let jobs = e
        .job_claim(JobClaimParams::new("q", "w", 10))
        .await
        .expect("claim");
    assert_eq!(jobs.len(), 1);
    let events = e
        .stream_read(StreamReadParams::new("s", 0, 10))
        .await
        .expect("read");
    assert_eq!(events.len(), 1);
    let mut tx = Transaction::begin(&e).await.expect("begin");
    let note: String = tx
        .driver_tx()
        .expect("open")
        .conn()
        .query_row("SELECT note FROM orders", [], |r| r.get(0))
        .expect("the table is there");
    assert_eq!(note, "in memory");
    tx.rollback().await.expect("rollback");
}

/// A transaction that finds the write lock held by another connection
/// waits for it off the runtime's one thread (the task that releases it
/// still runs), and begins once it is free; held past the busy timeout,
/// `begin` fails with `Busy`.
#[tokio::test(flavor = "current_thread")]
async fn tx_begin_waits_for_a_lock_held_elsewhere_off_the_runtime() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("held.db");
    // A short busy timeout to see it run out; a long one on a second
    // engine over the same file to see the wait end with the lock (a
    // stall of the machine must not make it run out first).
    let mut opts = SqliteOptions::new(&path);
    opts.busy_timeout = std::time::Duration::from_millis(300);
    let impatient = SqliteEngine::open(opts).expect("open");
    let mut opts = SqliteOptions::new(&path);
    opts.busy_timeout = std::time::Duration::from_secs(60);
    let e = SqliteEngine::open(opts).expect("open");
    let other = rusqlite::Connection::open(&path).expect("conn");
    other.execute_batch("BEGIN IMMEDIATE").expect("lock");
    let err = Transaction::begin(&impatient)
        .await
        .expect_err("held throughout");
    assert_eq!(err.kind(), ErrorKind::Busy, "{err}");
    let engine = e.clone();
    let begin = tokio::spawn(async move {
        let tx = Transaction::begin(&engine).await?;
        tx.job_enqueue(vec![NewJob::new("q", b"x".to_vec())])
            .await?;
        tx.commit().await
    });
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(!begin.is_finished(), "begin waits for the lock");
    other.execute_batch("COMMIT").expect("unlock");
    begin.await.expect("join").expect("begun and committed");
    assert_eq!(e.queue_stats("q").await.expect("stats").ready, 1);
}

/// A batch ack on the application's own transaction with one claim lost
/// is `NotHeld` and writes nothing of itself: the claim still held is not
/// acked either, so a rollback the caller forgets cannot half-settle it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_within_batch_with_a_lost_claim_writes_nothing() {
    let dir = tempfile::tempdir().expect("tmp");
    let e = store_with_orders(&dir);
    e.job_enqueue(vec![
        NewJob::new("q", b"1".to_vec()),
        NewJob::new("q", b"2".to_vec()),
    ])
    .await
    .expect("enqueue");
    let jobs = e
        .job_claim(JobClaimParams::new("q", "w", 10))
        .await
        .expect("claim");
    assert_eq!(jobs.len(), 2);
    let held = jobs[0].claim();
    let mut lost = jobs[1].claim();
    lost.token += 1;
    let engine = e.clone();
    tokio::task::spawn_blocking(move || {
        let mut conn = rusqlite::Connection::open(engine.path()).expect("conn");
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .expect("timeout");
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .expect("begin");
        let err = engine
            .within(&tx)
            .run_now::<alkstore_core::queue::JobAckParams>(vec![held, lost])
            .expect_err("one claim lost");
        assert_eq!(err.kind(), ErrorKind::NotHeld, "{err}");
        tx.commit().expect("commit");
    })
    .await
    .expect("app thread");
    let s = e.queue_stats("q").await.expect("stats");
    assert_eq!(s.processing, 2, "neither job was acked: {s:?}");
}

/// The same calls on a transaction of the application's own connection
/// (`within`): validated against the store's limits (refused input
/// changes nothing), fenced like the engine's transaction.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tx_within_the_applications_own_transaction() {
    let dir = tempfile::tempdir().expect("tmp");
    let e = store_with_orders(&dir);
    e.job_enqueue(vec![NewJob::new("q", b"1".to_vec())])
        .await
        .expect("enqueue");
    let job = e
        .job_claim(JobClaimParams::new("q", "w", 1))
        .await
        .expect("claim")
        .pop()
        .expect("a job");
    let engine = e.clone();
    tokio::task::spawn_blocking(move || {
        let mut conn = rusqlite::Connection::open(engine.path()).expect("conn");
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .expect("timeout");
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .expect("begin");
        let store = engine.within(&tx);
        let err = store
            .run_now::<alkstore_core::queue::JobEnqueueParams>(vec![NewJob::new("", b"x".to_vec())])
            .expect_err("no queue name");
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
        let mut stale = job.claim();
        stale.token += 1;
        let err = store
            .run_now::<alkstore_core::queue::JobAckParams>(stale)
            .expect_err("not this claim");
        assert_eq!(err.kind(), ErrorKind::NotHeld, "{err}");
        store
            .run_now::<alkstore_core::queue::JobAckParams>(job.claim())
            .expect("ack");
        store
            .run_now::<alkstore_core::stream::StreamPublishParams>(vec![NewEvent::new(
                "s",
                b"e".to_vec(),
            )])
            .expect("publish");
        tx.execute("INSERT INTO orders (note) VALUES ('mine')", [])
            .expect("own row");
        tx.commit().expect("commit");
    })
    .await
    .expect("app thread");
    assert_eq!(orders(&e), ["mine"]);
    let s = e.queue_stats("q").await.expect("stats");
    assert_eq!((s.ready, s.processing), (0, 0), "acked");
}

/// A full database (here its `max_page_count`, as a full disk) is a typed
/// `StorageFull` error, nothing of the call is written, and the same call
/// succeeds once there is room.
#[tokio::test]
async fn a_full_database_is_a_storage_full_error() {
    use alkstore_core::Transaction;
    let dir = tempfile::tempdir().expect("tmp");
    let e = SqliteEngine::open(SqliteOptions::new(dir.path().join("full.db"))).expect("open");
    e.job_enqueue(vec![NewJob::new("q", b"kept".to_vec())])
        .await
        .expect("enqueue");
    let big = || -> Vec<NewJob> {
        (0..200)
            .map(|_| NewJob::new("q", vec![b'x'; 8 * 1024]))
            .collect()
    };
    let mut tx = Transaction::begin(&e).await.expect("begin");
    let conn = tx.driver_tx().expect("open").conn();
    let pages: i64 = conn
        .query_row("PRAGMA page_count", [], |r| r.get(0))
        .expect("page count");
    conn.execute_batch(&format!("PRAGMA max_page_count = {pages}"))
        .expect("limit");
    let err = tx.job_enqueue(big()).await.expect_err("no room");
    assert_eq!(err.kind(), ErrorKind::StorageFull, "{err}");
    assert!(err.to_string().contains("disk is full"), "{err}");
    drop(tx);
    let stats = e.queue_stats("q").await.expect("stats");
    assert_eq!(stats.ready, 1, "nothing of the refused call was written");
    let mut tx = Transaction::begin(&e).await.expect("begin");
    tx.driver_tx()
        .expect("open")
        .conn()
        .execute_batch("PRAGMA max_page_count = 1073741823")
        .expect("room");
    tx.job_enqueue(big()).await.expect("room again");
    tx.commit().await.expect("commit");
    let stats = e.queue_stats("q").await.expect("stats");
    assert_eq!(stats.ready, 201);
}
