//! Tests of the writer: group commit, failures inside a group, long
//! groups off the runtime, and the watcher's wait for a group's end.

use std::time::{Duration, Instant};

use alkstore_core::{ErrorKind, SystemClock};

use super::*;

/// A command alone in its group runs without a savepoint; when it
/// fails after writing, the group's transaction is rolled back, so
/// nothing of it stays, its caller gets its own error, and the next
/// group commits as usual.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_sole_command_leaves_nothing_behind() {
    let dir = tempfile::tempdir().expect("tmp");
    let conn = Connection::open(dir.path().join("w.db")).expect("open");
    conn.execute_batch("CREATE TABLE t (x INTEGER)")
        .expect("table");
    let w = Writer::new(
        conn,
        Arc::new(SystemClock),
        Duration::from_secs(1),
        Arc::default(),
    );
    let err = w
        .write("test", |st| -> Result<()> {
            st.conn
                .execute("INSERT INTO t VALUES (1)", [])
                .map_err(|e| Error::database("test", e))?;
            Err(Error::invalid("x", "refused after writing"))
        })
        .await
        .expect_err("the command failed");
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    w.write("test", |st| {
        st.conn
            .execute("INSERT INTO t VALUES (2)", [])
            .map(|_| ())
            .map_err(|e| Error::database("test", e))
    })
    .await
    .expect("the next group commits");
    let rows: Vec<i64> = {
        let st = w.state.lock().expect("state");
        let mut s = st.conn.prepare("SELECT x FROM t").expect("select");
        let rows = s.query_map([], |r| r.get(0)).expect("rows");
        rows.collect::<rusqlite::Result<_>>().expect("collect")
    };
    assert_eq!(rows, vec![2], "only the second command's row stays");
}

/// One-statement commands share a group without savepoints: the one
/// whose statement fails (a multi-row insert that breaks a constraint
/// on its second row) gets its error, nothing of it stays, and its
/// neighbours commit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::await_holding_lock)]
async fn a_failing_one_statement_command_leaves_its_group_whole() {
    let dir = tempfile::tempdir().expect("tmp");
    let conn = Connection::open(dir.path().join("w.db")).expect("open");
    conn.execute_batch("CREATE TABLE t (x INTEGER UNIQUE)")
        .expect("table");
    let w = Writer::new(
        conn,
        Arc::new(SystemClock),
        Duration::from_secs(1),
        Arc::default(),
    );
    let held = w.state.lock().expect("state");
    let mut tasks = Vec::new();
    // Queued one after another, in this order (spawned at once, the
    // tasks could queue theirs in any order).
    for rows in ["(1)", "(2), (1)", "(3)"] {
        let w2 = w.clone();
        tasks.push(tokio::spawn(async move {
            w2.write_one_statement("test", move |st| {
                st.conn
                    .execute(&format!("INSERT INTO t VALUES {rows}"), [])
                    .map(|_| ())
                    .map_err(|e| Error::database("test", e))
            })
            .await
        }));
        while w.queue().commands.len() < tasks.len() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    drop(held);
    w.lead();
    let results: Vec<bool> = {
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.expect("task").is_ok());
        }
        out
    };
    assert_eq!(results, vec![true, false, true]);
    let rows: Vec<i64> = {
        let st = w.state.lock().expect("state");
        let mut s = st
            .conn
            .prepare("SELECT x FROM t ORDER BY x")
            .expect("select");
        let rows = s.query_map([], |r| r.get(0)).expect("rows");
        rows.collect::<rusqlite::Result<_>>().expect("collect")
    };
    assert_eq!(
        rows,
        vec![1, 3],
        "the failed statement left no row (not even 2)"
    );
}

/// A command that panics fails its group: it reports the panic, every
/// other command of the group gets a retryable `Conflict` (nothing of
/// the group was written), and the writer goes on with the next group.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
// Holding the writer across the waits is the point: commands must queue.
#[allow(clippy::await_holding_lock)]
async fn a_panicking_command_fails_its_group_with_typed_errors() {
    let dir = tempfile::tempdir().expect("tmp");
    let conn = Connection::open(dir.path().join("w.db")).expect("open");
    conn.execute_batch("CREATE TABLE t (x INTEGER)")
        .expect("table");
    let w = Writer::new(
        conn,
        Arc::new(SystemClock),
        Duration::from_secs(1),
        Arc::default(),
    );
    let insert = |st: &mut WriterState| {
        st.conn
            .execute("INSERT INTO t VALUES (1)", [])
            .map(|_| ())
            .map_err(|e| Error::database("test", e))
    };
    // Hold the connection so the three commands queue into one group.
    let held = w.state.lock().expect("state");
    let tasks = [false, true, false].map(|panics| {
        let w = w.clone();
        tokio::spawn(async move {
            w.write("test", move |st| {
                if panics {
                    panic!("boom");
                }
                insert(st)
            })
            .await
        })
    });
    while w.queue().commands.len() < 3 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    drop(held);
    w.lead();
    let mut kinds = Vec::new();
    for t in tasks {
        let err = t.await.expect("task").expect_err("the group failed");
        kinds.push((err.kind(), err.to_string().contains("panicked")));
    }
    assert_eq!(kinds[1], (ErrorKind::Database, true), "{kinds:?}");
    assert_eq!(kinds[0].0, ErrorKind::Conflict, "{kinds:?}");
    assert_eq!(kinds[2].0, ErrorKind::Conflict, "{kinds:?}");
    let rows = count_rows(&w);
    assert_eq!(rows, 0, "nothing of the group was written");
    w.write("test", insert).await.expect("the writer goes on");
}

/// A long group (a command declares [`OFF_RUNTIME_ROWS`] rows) runs on
/// the writer's own thread, so the runtime's one thread keeps running
/// other tasks meanwhile; a shorter write runs on the caller's thread;
/// and the writer's thread ends with the engine.
#[tokio::test(flavor = "current_thread")]
async fn long_groups_leave_the_runtime_free() {
    let dir = tempfile::tempdir().expect("tmp");
    let conn = Connection::open(dir.path().join("w.db")).expect("open");
    conn.execute_batch("CREATE TABLE t (x INTEGER)")
        .expect("table");
    let w = Writer::new(
        conn,
        Arc::new(SystemClock),
        Duration::from_secs(1),
        Arc::default(),
    );
    let here = std::thread::current().id();
    let short = w
        .write("test", |_| Ok(std::thread::current().id()))
        .await
        .expect("short write");
    assert_eq!(short, here, "a short write runs on the caller's thread");
    let below = w
        .write_rows("test", OFF_RUNTIME_ROWS - 1, |_| {
            Ok(std::thread::current().id())
        })
        .await
        .expect("write below the threshold");
    assert_eq!(below, here, "below the threshold: the caller's thread");

    let ticks = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let ticker = tokio::spawn({
        let ticks = ticks.clone();
        async move {
            loop {
                tokio::time::sleep(Duration::from_millis(5)).await;
                ticks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
    });
    let ticks_during = ticks.clone();
    let (thread, ticked) = w
        .write_rows("test", OFF_RUNTIME_ROWS, move |st| {
            st.conn
                .execute("INSERT INTO t VALUES (1)", [])
                .map_err(|e| Error::database("test", e))?;
            // A long group: the runtime's thread must stay free.
            let before = ticks_during.load(std::sync::atomic::Ordering::Relaxed);
            std::thread::sleep(Duration::from_millis(200));
            let after = ticks_during.load(std::sync::atomic::Ordering::Relaxed);
            Ok((std::thread::current(), after - before))
        })
        .await
        .expect("long write");
    ticker.abort();
    assert_ne!(thread.id(), here, "the long group ran off the runtime");
    assert_eq!(thread.name(), Some("alkstore-writer"));
    assert!(
        ticked >= 5,
        "the runtime ran tasks meanwhile: {ticked} ticks"
    );
    let rows = count_rows(&w);
    assert_eq!(rows, 1, "the long group committed");

    // The thread holds the writer only while leading: once the engine's
    // last handle is gone, the writer goes and the thread ends.
    let weak = Arc::downgrade(&w);
    drop(w);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while weak.strong_count() > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the writer was dropped"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    while !thread_ended(&thread) {
        assert!(
            std::time::Instant::now() < deadline,
            "the writer thread ended"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Rows in the tests' table `t`.
fn count_rows(w: &Writer) -> i64 {
    let st = w.state.lock().expect("state");
    st.conn
        .query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
        .expect("count")
}

/// Whether no thread of this process has `thread`'s name any more
/// (checked through /proc, where names are cut at 15 bytes; elsewhere
/// assumed ended).
fn thread_ended(thread: &std::thread::Thread) -> bool {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return true;
    };
    let name = thread.name().unwrap_or_default();
    !tasks.flatten().any(|t| {
        std::fs::read_to_string(t.path().join("comm")).is_ok_and(|comm| comm.trim() == name)
    })
}

/// The watcher waits for a running group's end, woken when it ends;
/// without a group it does not wait; a group that does not end is
/// waited for no longer than the limit.
#[test]
fn the_watcher_waits_for_the_running_group_to_end() {
    let activity = Arc::new(GroupActivity::default());
    let started = Instant::now();
    activity.wait_for_end(Duration::from_secs(5));
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "waited without a group"
    );

    activity.begin();
    let ender = {
        let activity = activity.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            activity.end();
        })
    };
    let started = Instant::now();
    activity.wait_for_end(Duration::from_secs(5));
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(40),
        "did not wait: {waited:?}"
    );
    assert!(
        waited < Duration::from_secs(4),
        "was not woken at the end: {waited:?}"
    );
    ender.join().expect("ender");
    assert_eq!(activity.begun(), 1);

    activity.begin();
    let started = Instant::now();
    activity.wait_for_end(Duration::from_millis(30));
    assert!(started.elapsed() >= Duration::from_millis(30));
}
