//! Through PgBouncer in transaction pooling mode (`ALKSTORE_TEST_PGBOUNCER_URL`,
//! which `scripts/test` sets after `scripts/ensure-pgbouncer` starts one):
//! what only a pooler shows. The whole contract suite also runs through it
//! (`ALKSTORE_CONTRACT_THROUGH_PGBOUNCER=1`, see `contract.rs`).
//!
//! Without the variable these tests say so and pass, unless `CI` is set:
//! then they fail.

use std::sync::Arc;
use std::time::Duration;

use alkstore_contract::alkstore::channel::NotifyParams;
use alkstore_contract::alkstore::{JobCtx, Store, Worker, WorkerOpts};
use alkstore_core::prelude::*;
use alkstore_core::{ErrorKind, NewJob};
use alkstore_postgres::{testing, PgEngine, PgOptions, PgPooler};
use tokio_postgres::NoTls;

/// The pooler's URL for the test database, and the direct one.
async fn urls() -> Option<(String, String)> {
    let direct = testing::ensure_database(&testing::database_url(), "alkstore_test")
        .await
        .expect("PostgreSQL at DATABASE_URL (scripts/test starts one)");
    match std::env::var("ALKSTORE_TEST_PGBOUNCER_URL") {
        Ok(b) if !b.is_empty() => Some((testing::with_database(&b, "alkstore_test"), direct)),
        _ => {
            let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false");
            assert!(
                !ci,
                "CI is set but ALKSTORE_TEST_PGBOUNCER_URL is not (scripts/test sets it)"
            );
            eprintln!("skipped: no ALKSTORE_TEST_PGBOUNCER_URL (scripts/ensure-pgbouncer)");
            None
        }
    }
}

/// `text` percent-encoded for a URL parameter.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A store URL names the pooler and a direct LISTEN URL: every primitive
/// works through it, notifications included.
#[cfg_attr(
    alkstore_no_pgbouncer,
    ignore = "skipped: no ALKSTORE_TEST_PGBOUNCER_URL (scripts/test starts PgBouncer and sets it)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_url_through_pgbouncer_works_end_to_end() {
    let Some((bounced, direct)) = urls().await else {
        return;
    };
    let schema = testing::unique_schema("bounce");
    let url = format!(
        "{bounced}?schema={schema}&pooler=transaction&listen_url={}",
        encode(&direct)
    );
    let store = Store::open(&url).await.expect("open through PgBouncer");
    let queue = store.queue("q");
    for i in 0..20 {
        queue.enqueue(&i).await.expect("enqueue");
    }
    let engine = store.engine();
    let claimed = engine
        .job_claim(alkstore_core::JobClaimParams::new("q", "w", 20))
        .await
        .expect("claim");
    assert_eq!(claimed.len(), 20);
    let acked = engine
        .job_ack(claimed.iter().map(|j| j.claim()).collect::<Vec<_>>())
        .await
        .expect("ack");
    assert!(acked.iter().all(|a| *a));
    let mut listener = store.channel("c").listen().await.expect("listen");
    engine
        .notify(NotifyParams::new("c", "hello"))
        .await
        .expect("notify");
    let got = tokio::time::timeout(Duration::from_secs(10), listener.recv())
        .await
        .expect("a notification within 10 s")
        .expect("recv");
    assert_eq!(got.payload, "hello");
    testing::drop_schema(&direct, &schema).await.expect("drop");
}

/// Without a listen URL nothing listens: notify/listen is refused with a
/// clear error, and a worker finds another process's job by polling.
#[cfg_attr(
    alkstore_no_pgbouncer,
    ignore = "skipped: no ALKSTORE_TEST_PGBOUNCER_URL (scripts/test starts PgBouncer and sets it)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_listen_url_workers_find_work_by_polling() {
    let Some((bounced, direct)) = urls().await else {
        return;
    };
    let schema = testing::unique_schema("bpoll");
    let pooled = |url: &str| {
        let mut opts = PgOptions::new(url, schema.clone());
        opts.pooler = PgPooler::Transaction;
        opts
    };
    let engine = PgEngine::open(pooled(&bounced)).await.expect("open");
    assert!(!engine.can_listen());
    let err = engine.notify_ready().await.expect_err("nothing can listen");
    assert_eq!(err.kind(), ErrorKind::Connect);
    assert!(err.to_string().contains("listen_url"), "{err}");

    // Another process's engine (its own wake hub): only a poll can find
    // its job.
    let other = PgEngine::open(pooled(&bounced)).await.expect("open other");
    let store = Store::from_engine(alkstore_contract::alkstore::AnyEngine::Postgres(engine));
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<i64>();
    let done_tx = Arc::new(std::sync::Mutex::new(Some(done_tx)));
    let opts = WorkerOpts {
        poll_interval: Duration::from_millis(200),
        ..WorkerOpts::default()
    };
    let worker = Worker::new(store)
        .queue("polled", move |job: JobCtx<i64>| {
            let done_tx = done_tx.clone();
            async move {
                if let Some(tx) = done_tx.lock().expect("lock").take() {
                    let _ = tx.send(*job.payload());
                }
                Ok(())
            }
        })
        .opts(opts);
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(worker.run_until(async move {
        let _ = stop_rx.await;
    }));
    // Let the worker's first claim find the queue empty and go idle.
    tokio::time::sleep(Duration::from_millis(300)).await;
    other
        .job_enqueue(vec![NewJob::new("polled", b"42".to_vec())])
        .await
        .expect("enqueue elsewhere");
    let got = tokio::time::timeout(Duration::from_secs(10), done_rx)
        .await
        .expect("the worker found the job by polling within 10 s")
        .expect("handled");
    assert_eq!(got, 42);
    let _ = stop_tx.send(());
    running.await.expect("join").expect("worker");
    testing::drop_schema(&direct, &schema).await.expect("drop");
}

/// A pooler's server connections may hold named statements that another
/// client left behind (prepared outside a transaction, never closed): the
/// engine's own statements never collide with them.
#[cfg_attr(
    alkstore_no_pgbouncer,
    ignore = "skipped: no ALKSTORE_TEST_PGBOUNCER_URL (scripts/test starts PgBouncer and sets it)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statements_left_behind_by_other_clients_do_not_collide() {
    let Some((bounced, direct)) = urls().await else {
        return;
    };
    // Careless clients: each, inside a transaction (so on one server
    // connection), leaves named statements s1…s30 there, as tokio-postgres
    // names its own, past its commit. Thirty at once (fewer than the
    // pooler's 40 server connections, or they would wait for each other):
    // the pooler hands out its most recently used server connection first,
    // so the engine's next ones are among theirs.
    on_many_servers(&bounced, |i| {
        let prepares: String = (1..=30)
            .map(|n| format!("PREPARE s{n} AS SELECT {i}::int8 + {n};"))
            .collect();
        // Whatever an earlier run left goes first.
        format!("DEALLOCATE ALL; {prepares}")
    })
    .await;
    let schema = testing::unique_schema("bleft");
    let mut opts = PgOptions::new(bounced.clone(), schema.clone());
    opts.pooler = PgPooler::Transaction;
    let engine = PgEngine::open(opts).await.expect("open");
    for round in 0..5 {
        let jobs = (0..10).map(|i| NewJob::new("q", format!("{round}-{i}").into_bytes()));
        engine
            .job_enqueue(jobs.collect::<Vec<_>>())
            .await
            .expect("enqueue");
        let claimed = engine
            .job_claim(alkstore_core::JobClaimParams::new("q", "w", 10))
            .await
            .expect("claim");
        let acked = engine
            .job_ack(claimed.iter().map(|j| j.claim()).collect::<Vec<_>>())
            .await
            .expect("ack");
        assert_eq!(acked.len(), 10);
    }
    // Leave the pooler's server connections as they were found.
    on_many_servers(&bounced, |_| "DEALLOCATE ALL".to_string()).await;
    testing::drop_schema(&direct, &schema).await.expect("drop");
}

/// Run `sql(i)` on 30 of the pooler's server connections at once: each in
/// a transaction held until all have run theirs.
async fn on_many_servers(bounced: &str, sql: impl Fn(usize) -> String) {
    let n = 30;
    let barrier = Arc::new(tokio::sync::Barrier::new(n));
    let mut clients = Vec::new();
    for i in 0..n {
        let (barrier, bounced, sql) = (barrier.clone(), bounced.to_string(), sql(i));
        clients.push(tokio::spawn(async move {
            let (client, conn) = tokio_postgres::connect(&bounced, NoTls)
                .await
                .expect("connect");
            let driver = tokio::spawn(conn);
            client.batch_execute("BEGIN").await.expect("begin");
            client.batch_execute(&sql).await.expect("statements");
            barrier.wait().await;
            client.batch_execute("COMMIT").await.expect("commit");
            drop(client);
            let _ = driver.await;
        }));
    }
    for c in clients {
        c.await.expect("client");
    }
}
