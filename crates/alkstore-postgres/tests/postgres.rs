//! PostgreSQL-specific behaviour: identifier quoting, connection errors,
//! migrations from older schemas. Opening and reopening a store is the
//! contract's `open` area.

use alkstore_core::lock::LockAcquireParams;
use alkstore_core::prelude::*;
use alkstore_core::queue::JobFailParams;
use alkstore_core::{ErrorKind, ManualClock, NewJob, Transaction};
use alkstore_postgres::{testing, PgEngine, PgOptions};

async fn test_db() -> String {
    testing::ensure_database(&testing::database_url(), "alkstore_test")
        .await
        .expect("PostgreSQL at DATABASE_URL (scripts/test starts one)")
}

#[tokio::test]
async fn hostile_schema_name_creates_exactly_that_schema() {
    let url = test_db().await;
    let evil = format!("x\"; DROP TABLE job; --{}", std::process::id() % 10_000);
    let victim = testing::unique_schema("victim");
    let admin = PgEngine::open(PgOptions::new(url.clone(), victim.clone()))
        .await
        .expect("open victim");
    admin
        .job_enqueue(vec![NewJob::new("q", b"keep me".to_vec())])
        .await
        .expect("enqueue");

    let engine = PgEngine::open(PgOptions::new(url.clone(), evil.clone()))
        .await
        .expect("open hostile");
    engine
        .job_enqueue(vec![NewJob::new("q", b"x".to_vec())])
        .await
        .expect("enqueue");
    // The stream functions and triggers are reached through the quoted name.
    let offsets = engine
        .stream_publish(alkstore_core::stream::NewEvent::new("s", b"e".to_vec()))
        .await
        .expect("publish");
    alkstore_contract::streams::settle(&engine, "s").await;
    let read = engine
        .stream_read(alkstore_core::stream::StreamReadParams::new("s", 0, 10))
        .await
        .expect("read");
    assert_eq!(read.iter().map(|e| e.offset).collect::<Vec<_>>(), offsets);

    let client = admin.client().await.expect("client");
    let tables: Vec<String> = client
        .query(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = $1 AND c.relkind = 'r' ORDER BY 1",
            &[&evil],
        )
        .await
        .expect("catalog")
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(
        tables,
        vec![
            "dead",
            "done",
            "event",
            "group_bucket",
            "group_dead",
            "group_handoff",
            "group_handoff_total",
            "group_member",
            "job",
            "job_result",
            "lock",
            "meta",
            "process",
            "publish_base",
            "queue_depth",
            "queue_pause",
            "queue_throughput",
            "rate_limit",
            "schedule",
            "schedule_fire",
            "stream",
            "stream_offset",
        ],
        "the schema is named exactly as given"
    );
    let stray: i64 = client
        .query_one("SELECT count(*) FROM pg_namespace WHERE nspname = 'x'", &[])
        .await
        .expect("catalog")
        .get(0);
    assert_eq!(stray, 0, "no schema cut at the quote");
    let victim_stats = admin.queue_stats("q").await.expect("victim still readable");
    assert_eq!(
        victim_stats.ready, 1,
        "the other schema's job table is intact"
    );
    drop(client);
    testing::drop_schema(&url, &evil).await.expect("drop");
    testing::drop_schema(&url, &victim).await.expect("drop");
}

#[tokio::test]
async fn unreachable_server_is_a_connect_error() {
    let opts = PgOptions::new(
        "postgres://postgres@127.0.0.1:1/postgres?connect_timeout=2",
        "alkstore",
    );
    let err = PgEngine::open(opts)
        .await
        .expect_err("nothing listens on port 1");
    assert_eq!(err.kind(), ErrorKind::Connect, "{err}");
}

#[tokio::test]
async fn unknown_database_or_user_is_a_connect_error() {
    let url = testing::with_database(&testing::database_url(), "alkstore_no_such_db");
    let err = PgEngine::open(PgOptions::new(url, "alkstore"))
        .await
        .expect_err("no such database");
    assert_eq!(err.kind(), ErrorKind::Connect, "{err}");
}

#[tokio::test]
async fn malformed_conninfo_is_an_invalid_url() {
    let err = PgEngine::open(PgOptions::new("postgres://h:notaport/db", "alkstore"))
        .await
        .expect_err("bad port");
    assert_eq!(err.kind(), ErrorKind::InvalidUrl, "{err}");
}

#[tokio::test]
async fn bad_schema_names_are_rejected_before_connecting() {
    for schema in ["", &"s".repeat(41), "nul\0byte"] {
        let err = PgEngine::open(PgOptions::new("postgres://127.0.0.1:1/x", schema))
            .await
            .expect_err("invalid schema");
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{schema:?}: {err}");
    }
}

#[tokio::test]
async fn concurrent_first_opens_bootstrap_once() {
    let url = test_db().await;
    let schema = testing::unique_schema("race");
    let opens: Vec<_> = (0..6)
        .map(|_| tokio::spawn(PgEngine::open(PgOptions::new(url.clone(), schema.clone()))))
        .collect();
    for o in opens {
        o.await
            .expect("task")
            .expect("every concurrent open succeeds");
    }
    testing::drop_schema(&url, &schema).await.expect("drop");
}

#[tokio::test]
async fn payload_bytes_round_trip_through_bytea_byte_for_byte() {
    let url = test_db().await;
    let schema = testing::unique_schema("bytes");
    let engine = PgEngine::open(PgOptions::new(url.clone(), schema.clone()))
        .await
        .expect("open");
    let bytes: Vec<u8> = (0..=255u8).rev().collect();
    let id = engine
        .job_enqueue(vec![NewJob::new("q", bytes.clone())])
        .await
        .expect("enqueue")[0]
        .id();
    let client = engine.client().await.expect("client");
    let job = format!(
        "{}.job",
        alkstore_postgres::schema::quote_identifier(&schema)
    );
    let stored: Vec<u8> = client
        .query_one(&format!("SELECT payload FROM {job} WHERE id = $1"), &[&id])
        .await
        .expect("row")
        .get(0);
    assert_eq!(stored, bytes);
    drop(client);
    testing::drop_schema(&url, &schema).await.expect("drop");
}

#[tokio::test]
async fn claims_use_the_database_clock() {
    // Without an injected clock, claim deadlines come from the server's
    // now(), never from this host's clock.
    let url = test_db().await;
    let schema = testing::unique_schema("clock");
    let engine = PgEngine::open(PgOptions::new(url.clone(), schema.clone()))
        .await
        .expect("open");
    engine
        .job_enqueue(vec![NewJob::new("q", b"x".to_vec())])
        .await
        .expect("enqueue");
    let job = engine
        .job_claim(alkstore_core::JobClaimParams::new("q", "w", 1))
        .await
        .expect("claim")
        .remove(0);
    let client = engine.client().await.expect("client");
    let db_now: i64 = client
        .query_one("SELECT floor(extract(epoch FROM now()))::bigint", &[])
        .await
        .expect("now")
        .get(0);
    assert!(
        (job.claim_expires_at - (db_now + 300)).abs() <= 2,
        "{} vs db {db_now}",
        job.claim_expires_at
    );
    drop(client);
    testing::drop_schema(&url, &schema).await.expect("drop");
}

/// An unknown connection parameter is refused by name, not as a bare
/// "invalid connection string".
#[tokio::test]
async fn unknown_url_parameters_are_named() {
    let url = test_db().await;
    let sep = if url.contains('?') { '&' } else { '?' };
    let err = PgEngine::open(PgOptions::new(format!("{url}{sep}bogus_option=1"), "x"))
        .await
        .expect_err("unknown option");
    assert_eq!(err.kind(), ErrorKind::InvalidUrl, "{err}");
    assert!(err.to_string().contains("bogus_option"), "{err}");
}

/// A version 1 schema (claims proven by attempt) migrates in place: live
/// claims keep working and the new table appears.
#[tokio::test]
async fn version_1_schemas_migrate_keeping_live_claims() {
    use alkstore_core::{Claim, JobClaimParams};
    let url = test_db().await;
    let schema = testing::unique_schema("v1");
    let e = PgEngine::open(PgOptions::new(url.clone(), schema.clone()))
        .await
        .expect("open");
    e.job_enqueue(vec![NewJob::new("q", b"x".to_vec())])
        .await
        .expect("enqueue");
    let job = e
        .job_claim(JobClaimParams::new("q", "w", 1))
        .await
        .expect("claim")
        .remove(0);
    let q = alkstore_postgres::schema::quote_identifier(&schema);
    e.client()
        .await
        .expect("client")
        .batch_execute(&format!(
            "ALTER TABLE {q}.job DROP COLUMN claim_count, DROP COLUMN cancel_requested, \
               DROP COLUMN keep_completed_s, DROP COLUMN errors;
             ALTER TABLE {q}.dead DROP COLUMN claim_count, DROP COLUMN keep_completed_s, DROP COLUMN errors;
             DROP TABLE {q}.done;
             UPDATE {q}.meta SET value = 1 WHERE key = 'schema_version';"
        ))
        .await
        .expect("downgrade");
    drop(e);
    let e = PgEngine::open(PgOptions::new(url.clone(), schema.clone()))
        .await
        .expect("migrate");
    let v1_claim = Claim {
        id: job.id,
        worker: "w".into(),
        token: i64::from(job.attempt),
    };
    assert_eq!(e.job_ack(vec![v1_claim]).await.expect("ack"), vec![true]);
    drop(e);
    let _ = testing::drop_schema(&url, &schema).await;
}

/// Several publishes in one caller transaction carry the transaction's
/// count across calls (distinct, consecutive offsets in call order); a
/// savepoint rolled back drops its events; a pooled connection reused for
/// the next transaction starts its count afresh.
#[tokio::test]
async fn publishes_in_one_transaction_take_consecutive_offsets() {
    use alkstore_core::stream::{NewEvent, StreamReadParams};
    let url = test_db().await;
    let schema = testing::unique_schema("pubtx");
    let engine = PgEngine::open(PgOptions::new(url.clone(), schema.clone()))
        .await
        .expect("open");
    let ev = |p: &str| vec![NewEvent::new("s", p.as_bytes().to_vec())];
    let mut client = engine.client().await.expect("client");
    let tx = client.transaction().await.expect("begin");
    let a = engine
        .within(&*tx)
        .stream_publish(ev("a"))
        .await
        .expect("a");
    let sp = tx.execute("SAVEPOINT dropped", &[]).await;
    sp.expect("savepoint");
    engine
        .within(&*tx)
        .stream_publish(ev("gone"))
        .await
        .expect("gone");
    tx.execute("ROLLBACK TO SAVEPOINT dropped", &[])
        .await
        .expect("rollback to");
    let b = engine
        .within(&*tx)
        .stream_publish(vec![
            NewEvent::new("s", b"b1".to_vec()),
            NewEvent::new("s", b"b2".to_vec()),
        ])
        .await
        .expect("b");
    tx.commit().await.expect("commit");
    assert_eq!(b, [a[0] + 1, a[0] + 2], "the count carries across calls");
    // The same pooled connection, a new transaction: a new base.
    let tx = client.transaction().await.expect("begin");
    let c = engine
        .within(&*tx)
        .stream_publish(ev("c"))
        .await
        .expect("c");
    tx.commit().await.expect("commit");
    assert_eq!(c[0] % (1 << 16), 0, "a new transaction counts from 0");
    assert!(c[0] > b[1]);
    drop(client);
    alkstore_contract::streams::settle(&engine, "s").await;
    let read = engine
        .stream_read(StreamReadParams::new("s", 0, 10))
        .await
        .expect("read");
    let got: Vec<(i64, String)> = read
        .iter()
        .map(|e| (e.offset, String::from_utf8_lossy(&e.payload).into_owned()))
        .collect();
    assert_eq!(
        got,
        [
            (a[0], "a".to_string()),
            (b[0], "b1".to_string()),
            (b[1], "b2".to_string()),
            (c[0], "c".to_string())
        ]
    );
    engine.drop_store().await.expect("drop");
}

/// One transaction publishes at most 65,536 events (the low 16 bits of an
/// offset); the next publish in it fails and the caller's rollback leaves
/// nothing.
#[tokio::test]
async fn one_transaction_publishes_at_most_65536_events() {
    use alkstore_core::stream::{NewEvent, StreamReadParams};
    let url = test_db().await;
    let schema = testing::unique_schema("pubcap");
    let engine = PgEngine::open(PgOptions::new(url.clone(), schema.clone()))
        .await
        .expect("open");
    let batch = |n: usize| -> Vec<NewEvent> {
        (0..n)
            .map(|i| NewEvent::new("s", i.to_string().into_bytes()))
            .collect()
    };
    let mut client = engine.client().await.expect("client");
    let tx = client.transaction().await.expect("begin");
    for _ in 0..6 {
        engine
            .within(&*tx)
            .stream_publish(batch(10_000))
            .await
            .expect("within the cap");
    }
    let last = engine
        .within(&*tx)
        .stream_publish(batch(5_536))
        .await
        .expect("exactly the cap");
    assert_eq!(last.last().map(|o| o % (1 << 16)), Some(65_535));
    let err = engine
        .within(&*tx)
        .stream_publish(batch(1))
        .await
        .expect_err("past the cap");
    assert_eq!(err.kind(), ErrorKind::Database);
    assert!(err.to_string().contains("65536"), "{err}");
    tx.rollback().await.expect("rollback");
    drop(client);
    let read = engine
        .stream_read(StreamReadParams::new("s", 0, 10))
        .await
        .expect("read");
    assert!(read.is_empty());
    engine.drop_store().await.expect("drop");
}

/// `reclaim` leaves a lean job table alone and vacuums one whose dead
/// tuples pass the threshold (60,000 jobs enqueued and acked here), after
/// which the dead tuples are gone. Autovacuum is off for this table: were
/// it to clear the dead tuples between the count and `reclaim`, there would
/// be nothing left to reclaim. The test waits until the statistics pass the
/// threshold: claims, acks and enqueues run on different connections, each
/// flushing its counts on its own schedule, so the live count can lag the
/// dead one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reclaim_vacuums_the_job_table_once_dead_rows_pile_up() {
    use alkstore_core::Engine;
    let url = test_db().await;
    let schema = testing::unique_schema("reclaim");
    let engine = PgEngine::open(PgOptions::new(url.clone(), schema.clone()))
        .await
        .expect("open");
    assert_eq!(
        engine.reclaim().await.expect("reclaim"),
        0,
        "nothing to reclaim"
    );
    let (client, job) = job_table_without_autovacuum(&engine, &schema).await;
    leave_dead_rows(&engine).await;
    // A busy backend flushes its counts about once a second, an idle one
    // within ten.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    // Reclaim's threshold: 50,000 dead tuples, and twice the live ones.
    while {
        let (live, dead) = tuple_counts(&client, &job).await;
        dead < 50_000 || dead < 2 * live
    } {
        assert!(
            std::time::Instant::now() < deadline,
            "dead tuples never counted"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    // The counts are flushed per backend, so the engine's connection may
    // read them a moment behind the test's: it must vacuum within the
    // deadline, not necessarily at the first call.
    reclaim_until_cleared(&engine, &client, &job, deadline).await;
    drop(client);
    testing::drop_schema(&url, &schema).await.expect("drop");
}

/// By default an enqueue or publish outside a transaction waits for the
/// WAL flush; with `relaxed_writes` its connection commits with
/// `synchronous_commit = off`. Both write and read back the same.
#[tokio::test]
async fn relaxed_writes_skip_the_flush_wait_only_when_asked() {
    use alkstore_core::stream::{NewEvent, StreamReadParams};
    let url = test_db().await;
    for (relaxed, want) in [(false, "on"), (true, "off")] {
        let schema = testing::unique_schema("relaxed_writes");
        let mut opts = PgOptions::new(url.clone(), schema.clone());
        opts.relaxed_writes = relaxed;
        let engine = PgEngine::open(opts).await.expect("open");
        let client = engine.write_client().await.expect("client");
        let got: String = client
            .query_one("SHOW synchronous_commit", &[])
            .await
            .expect("show")
            .get(0);
        assert_eq!(got, want, "relaxed_writes = {relaxed}");
        drop(client);
        engine
            .job_enqueue(NewJob::new("q", b"{}".to_vec()))
            .await
            .expect("enqueue");
        let offsets = engine
            .stream_publish(NewEvent::new("s", b"e".to_vec()))
            .await
            .expect("publish");
        let read = engine
            .stream_read(StreamReadParams::new("s", 0, 10))
            .await
            .expect("read");
        assert_eq!(read.iter().map(|e| e.offset).collect::<Vec<_>>(), offsets);
        assert_eq!(engine.queue_stats("q").await.expect("stats").ready, 1);
        testing::drop_schema(&url, &schema).await.expect("drop");
    }
}

/// One pool serves both commit modes: a connection handed to a relaxed
/// write commits with `synchronous_commit = off`, the same connection
/// handed to a durable call next waits for the flush again, and back.
#[tokio::test]
async fn one_connection_switches_between_commit_modes() {
    let url = test_db().await;
    let schema = testing::unique_schema("commit_modes");
    let mut opts = PgOptions::new(url.clone(), schema.clone());
    opts.relaxed_writes = true;
    opts.pool_size = 1;
    let engine = PgEngine::open(opts).await.expect("open");
    let mut pids = Vec::new();
    for relaxed in [true, false, false, true, true, false] {
        let client = if relaxed {
            engine.write_client().await
        } else {
            engine.client().await
        }
        .expect("client");
        let row = client
            .query_one(
                "SELECT current_setting('synchronous_commit'), pg_backend_pid()",
                &[],
            )
            .await
            .expect("show");
        let mode: String = row.get(0);
        pids.push(row.get::<_, i32>(1));
        assert_eq!(
            mode,
            if relaxed { "off" } else { "on" },
            "relaxed = {relaxed}"
        );
    }
    pids.dedup();
    assert_eq!(pids.len(), 1, "one connection served every call: {pids:?}");
    testing::drop_schema(&url, &schema).await.expect("drop");
}

/// A server out of connection slots refuses with SQLSTATE 53300; the
/// error says so and names the settings to change (here a role whose
/// CONNECTION LIMIT is 0, refused the same way as a full server).
#[tokio::test]
async fn a_refused_connection_names_the_setting_to_change() {
    let url = test_db().await;
    let role = format!("alk_nolimit_{}", std::process::id());
    let (admin, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    let driver = tokio::spawn(conn);
    admin
        .batch_execute(&format!(
            "DROP ROLE IF EXISTS {role}; CREATE ROLE {role} LOGIN CONNECTION LIMIT 0"
        ))
        .await
        .expect("role");
    let mut cfg: tokio_postgres::Config = url.parse().expect("url");
    cfg.user(&role);
    let limited = format!(
        "host=127.0.0.1 port={} dbname={} user={role}",
        cfg.get_ports().first().copied().unwrap_or(5432),
        cfg.get_dbname().unwrap_or("postgres")
    );
    let err = PgEngine::open(PgOptions::new(limited, testing::unique_schema("refused")))
        .await
        .expect_err("a role with no connection slots");
    admin
        .batch_execute(&format!("DROP ROLE IF EXISTS {role}"))
        .await
        .expect("drop role");
    drop(admin);
    let _ = driver.await;
    assert_eq!(err.kind(), alkstore_core::ErrorKind::Connect, "{err}");
    let text = err.to_string();
    assert!(text.contains("SQLSTATE 53300"), "{text}");
    assert!(
        text.contains("pool_size") && text.contains("max_connections"),
        "{text}"
    );
}

/// While an open transaction holds the xmin horizon, a vacuum of the job
/// table can remove nothing: `reclaim` runs one, then waits until the
/// horizon moves instead of scanning the whole table on every call; once
/// the transaction ends, the next call vacuums and clears the table.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reclaim_waits_while_an_old_transaction_holds_the_horizon() {
    use alkstore_core::Engine;
    // A database of its own: the held transaction pins the horizon of
    // every table in its database, other tests' included.
    let url = testing::ensure_database(&testing::database_url(), "alkstore_test_held")
        .await
        .expect("PostgreSQL at DATABASE_URL (scripts/test starts one)");
    let schema = testing::unique_schema("reclaim_held");
    let engine = PgEngine::open(PgOptions::new(url.clone(), schema.clone()))
        .await
        .expect("open");
    let (client, job) = job_table_without_autovacuum(&engine, &schema).await;
    // An idle transaction with an id, opened before the rows die.
    let (holder, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    let holder_driver = tokio::spawn(conn);
    holder
        .batch_execute("BEGIN; SELECT pg_current_xact_id()")
        .await
        .expect("hold the horizon");
    leave_dead_rows(&engine).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while engine.reclaim().await.expect("reclaim") != 1 {
        assert!(std::time::Instant::now() < deadline, "never vacuumed");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert!(
        tuple_counts(&client, &job).await.1 >= 50_000,
        "the held horizon kept the dead rows"
    );
    let vacuums = || async {
        let row = client
            .query_one(
                "SELECT pg_stat_get_vacuum_count($1::text::regclass)",
                &[&job],
            )
            .await
            .expect("vacuum count");
        row.get::<_, i64>(0)
    };
    let before = vacuums().await;
    for _ in 0..5 {
        engine.reclaim().await.expect("reclaim");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    // Another test's transaction older than the holder may end meanwhile
    // and move the horizon once.
    let during = vacuums().await - before;
    assert!(
        during <= 1,
        "{during} vacuums while the horizon stayed held"
    );
    holder.batch_execute("ROLLBACK").await.expect("release");
    drop(holder);
    let _ = holder_driver.await;
    reclaim_until_cleared(
        &engine,
        &client,
        &job,
        deadline + std::time::Duration::from_secs(30),
    )
    .await;
    drop(client);
    testing::drop_schema(&url, &schema).await.expect("drop");
}

/// A connection, and the quoted name of `schema`'s job table with
/// autovacuum off (so only `reclaim` vacuums it).
async fn job_table_without_autovacuum(
    engine: &PgEngine,
    schema: &str,
) -> (deadpool_postgres::Object, String) {
    let client = engine.client().await.expect("client");
    let job = format!(
        "{}.job",
        alkstore_postgres::schema::quote_identifier(schema)
    );
    client
        .batch_execute(&format!(
            "ALTER TABLE {job} SET (autovacuum_enabled = false)"
        ))
        .await
        .expect("autovacuum off");
    (client, job)
}

/// Call `reclaim` until a call vacuums and the dead tuples are gone, by
/// `deadline` (a vacuum while another transaction holds the horizon
/// clears nothing; the next one, once it moved, does).
async fn reclaim_until_cleared(
    engine: &PgEngine,
    client: &tokio_postgres::Client,
    job: &str,
    deadline: std::time::Instant,
) {
    use alkstore_core::Engine;
    loop {
        if engine.reclaim().await.expect("reclaim") == 1
            && tuple_counts(client, job).await.1 < 50_000
        {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never vacuumed the dead rows away"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

/// Enqueue, claim and ack 60,000 jobs of queue `q`: 60,000 dead rows in
/// the job table (more than `reclaim`'s threshold).
async fn leave_dead_rows(engine: &PgEngine) {
    use alkstore_core::JobClaimParams;
    for _ in 0..12 {
        let jobs: Vec<NewJob> = (0..5_000)
            .map(|_| NewJob::new("q", b"{}".to_vec()))
            .collect();
        engine.job_enqueue(jobs).await.expect("enqueue");
        let got = engine
            .job_claim(JobClaimParams::new("q", "w", 5_000))
            .await
            .expect("claim");
        let acked = engine
            .job_ack(got.iter().map(|j| j.claim()).collect::<Vec<_>>())
            .await
            .expect("ack");
        assert!(acked.iter().all(|a| *a), "every claim acked");
    }
}

/// The table's live and dead tuples, as the statistics count them.
async fn tuple_counts(client: &tokio_postgres::Client, table: &str) -> (i64, i64) {
    let row = client
        .query_one(
            "SELECT pg_stat_get_live_tuples($1::text::regclass), \
                    pg_stat_get_dead_tuples($1::text::regclass)",
            &[&table],
        )
        .await
        .expect("stats");
    (row.get(0), row.get(1))
}

/// Wait up to 10 s for wake hints naming each of `queues`, in any order.
async fn woken(
    rx: &mut tokio::sync::broadcast::Receiver<alkstore_core::Wake>,
    queues: &[&str],
) -> bool {
    woken_by(rx, queues, |w| match w {
        alkstore_core::Wake::Queue(q) => Some(q),
        _ => None,
    })
    .await
}

/// Wait (up to 10 s) for a wake naming each of `names`, as `name_of` reads
/// a wake's name.
async fn woken_by(
    rx: &mut tokio::sync::broadcast::Receiver<alkstore_core::Wake>,
    names: &[&str],
    name_of: fn(&alkstore_core::Wake) -> Option<&str>,
) -> bool {
    let mut missing: std::collections::HashSet<&str> = names.iter().copied().collect();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while !missing.is_empty() {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Ok(w)) => {
                if let Some(name) = name_of(&w) {
                    missing.remove(name);
                }
            }
            Ok(Err(tokio::sync::broadcast::error::RecvError::Lagged(_))) => {}
            Ok(Err(_)) | Err(_) => return false,
        }
    }
    true
}

/// Every statement that inserts jobs wakes their queues' workers in other
/// processes (here another engine on the schema, through its LISTEN
/// connection): a one-job enqueue, a uniform batch, a batch over two queues,
/// a batch with unique keys, a dead-letter requeue and the outbox.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_insert_path_wakes_other_processes() {
    use alkstore_core::{DeadSelect, EnqueueOpts, JobClaimParams, Wake};
    let url = test_db().await;
    let schema = testing::unique_schema("wakes");
    let writer = PgEngine::open(PgOptions::new(url.clone(), schema.clone()))
        .await
        .expect("open");
    let other = PgEngine::open(PgOptions::new(url.clone(), schema.clone()))
        .await
        .expect("second engine");
    let mut rx = other.wake_subscribe();
    // The listener announces itself once it is listening.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while !matches!(
        tokio::time::timeout_at(deadline, rx.recv()).await,
        Ok(Ok(Wake::All))
    ) {
        assert!(tokio::time::Instant::now() < deadline, "never listening");
    }
    let job = |q: &str| NewJob::new(q, b"x".to_vec());
    writer.job_enqueue(vec![job("one")]).await.expect("one");
    assert!(woken(&mut rx, &["one"]).await, "one-job enqueue");
    writer
        .job_enqueue(vec![job("uniform"), job("uniform")])
        .await
        .expect("uniform");
    assert!(woken(&mut rx, &["uniform"]).await, "uniform batch");
    writer
        .job_enqueue(vec![
            job("mixed-a"),
            job("mixed-b").with_opts(EnqueueOpts::default().priority(2)),
        ])
        .await
        .expect("mixed");
    assert!(
        woken(&mut rx, &["mixed-a", "mixed-b"]).await,
        "batch over two queues"
    );
    writer
        .job_enqueue(vec![
            job("keyed").with_opts(EnqueueOpts::default().unique_key("k")),
            job("keyed"),
        ])
        .await
        .expect("keyed");
    assert!(woken(&mut rx, &["keyed"]).await, "batch with unique keys");
    let claimed = writer
        .job_claim(JobClaimParams::new("one", "w", 1))
        .await
        .expect("claim")
        .remove(0);
    assert!(writer
        .job_fail(JobFailParams::new(claimed.claim(), "x"))
        .await
        .expect("fail"));
    while rx.try_recv().is_ok() {}
    assert_eq!(
        writer
            .dead_requeue(DeadSelect::ids(vec![claimed.id]))
            .await
            .expect("requeue"),
        1
    );
    assert!(woken(&mut rx, &["one"]).await, "dead-letter requeue");
    let client = writer.client().await.expect("client");
    writer
        .within(&**client)
        .job_enqueue(job("outbox"))
        .await
        .expect("outbox");
    assert!(woken(&mut rx, &["outbox"]).await, "outbox");
    let tx = alkstore_core::Transaction::begin(&writer)
        .await
        .expect("begin");
    tx.job_enqueue(vec![job("in-tx")])
        .await
        .expect("tx enqueue");
    tx.commit().await.expect("commit");
    assert!(woken(&mut rx, &["in-tx"]).await, "the engine's transaction");
    // The statements notify by themselves (schema 11 dropped the trigger
    // that did it, which would now notify twice).
    let job_table = format!(
        "{}.job",
        alkstore_postgres::schema::quote_identifier(&schema)
    );
    let triggers: i64 = client
        .query_one(
            "SELECT count(*) FROM pg_trigger WHERE tgrelid = $1::text::regclass AND NOT tgisinternal",
            &[&job_table],
        )
        .await
        .expect("triggers")
        .get(0);
    assert_eq!(triggers, 0, "the job table still has a trigger");
    // A one-job enqueue that could not be claimed at once (a due job is
    // ahead of it) is pending, and wakes; one claimed at once does not
    // need to.
    let pending = writer
        .job_enqueue_claimed(alkstore_core::JobEnqueueClaimedParams::new(
            job("keyed"),
            "w",
        ))
        .await
        .expect("enqueue claimed");
    assert!(pending.claimed.is_none(), "a due job was ahead of it");
    assert!(woken(&mut rx, &["keyed"]).await, "enqueue, claimed if free");
    drop(client);
    drop((writer, other));
    testing::drop_schema(&url, &schema).await.expect("drop");
}

/// Wait for a wake of each of `streams`, up to 10 s.
async fn stream_woken(
    rx: &mut tokio::sync::broadcast::Receiver<alkstore_core::Wake>,
    streams: &[&str],
) -> bool {
    woken_by(rx, streams, |w| match w {
        alkstore_core::Wake::Stream(s) => Some(s),
        _ => None,
    })
    .await
}

/// Wait until `rx`'s engine is listening (its listener hints everything).
async fn until_listening(rx: &mut tokio::sync::broadcast::Receiver<alkstore_core::Wake>) {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while !matches!(
        tokio::time::timeout_at(deadline, rx.recv()).await,
        Ok(Ok(alkstore_core::Wake::All))
    ) {
        assert!(tokio::time::Instant::now() < deadline, "never listening");
    }
}

/// Every way of publishing wakes the streams' subscribers in other
/// processes: an autocommit publish (after its commit, from the engine's
/// announcing task), one in the engine's transaction and one through the
/// application's connection (at commit, from the statement), and SQL that
/// still calls the four-argument `publish` function of schema 11 (as a
/// process of that version does). The schema's name holds a quote and a
/// backslash, which that function's channel literal must survive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_publish_path_wakes_other_processes() {
    use alkstore_core::stream::NewEvent;
    let url = test_db().await;
    let schema = format!("{}'\\x", testing::unique_schema("pubwakes"));
    let writer = PgEngine::open(PgOptions::new(url.clone(), schema.clone()))
        .await
        .expect("open");
    let other = PgEngine::open(PgOptions::new(url.clone(), schema.clone()))
        .await
        .expect("second engine");
    let mut rx = other.wake_subscribe();
    until_listening(&mut rx).await;
    let event = |s: &str| NewEvent::new(s, b"e".to_vec());
    writer
        .stream_publish(vec![event("auto-a"), event("auto-b"), event("auto-a")])
        .await
        .expect("publish");
    assert!(
        stream_woken(&mut rx, &["auto-a", "auto-b"]).await,
        "autocommit publish"
    );
    let tx = alkstore_core::Transaction::begin(&writer)
        .await
        .expect("begin");
    tx.stream_publish(vec![event("in-tx")])
        .await
        .expect("tx publish");
    tx.commit().await.expect("commit");
    assert!(
        stream_woken(&mut rx, &["in-tx"]).await,
        "the engine's transaction"
    );
    let client = writer.client().await.expect("client");
    writer
        .within(&**client)
        .stream_publish(vec![event("outbox")])
        .await
        .expect("outbox");
    assert!(stream_woken(&mut rx, &["outbox"]).await, "outbox");
    client
        .execute(
            &format!(
                "SELECT {}.publish(ARRAY['old-sql'], ARRAY[NULL::text], ARRAY['\\x00'::bytea], NULL)",
                alkstore_postgres::schema::quote_identifier(&schema)
            ),
            &[],
        )
        .await
        .expect("four-argument publish");
    assert!(
        stream_woken(&mut rx, &["old-sql"]).await,
        "the four-argument function"
    );
    let event_table = format!(
        "{}.event",
        alkstore_postgres::schema::quote_identifier(&schema)
    );
    let triggers: i64 = client
        .query_one(
            "SELECT count(*) FROM pg_trigger WHERE tgrelid = $1::text::regclass AND NOT tgisinternal",
            &[&event_table],
        )
        .await
        .expect("triggers")
        .get(0);
    assert_eq!(triggers, 0, "the event table still has a trigger");
    drop(client);
    drop((writer, other));
    testing::drop_schema(&url, &schema).await.expect("drop");
}

/// A process that enqueues and exits right away (a script, `alk enqueue`)
/// still wakes other processes' workers when it flushes first: the
/// announcing task would otherwise end with its runtime, its wake-up unsent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flush_sends_wake_ups_before_the_runtime_ends() {
    let url = test_db().await;
    let schema = testing::unique_schema("flush");
    let other = PgEngine::open(PgOptions::new(url.clone(), schema.clone()))
        .await
        .expect("open");
    let mut rx = other.wake_subscribe();
    until_listening(&mut rx).await;
    let (u, s) = (url.clone(), schema.clone());
    // The short-lived process: a runtime of its own, gone after the call.
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let writer = PgEngine::open(PgOptions::new(u, s)).await.expect("writer");
            writer
                .job_enqueue(vec![NewJob::new("script", b"x".to_vec())])
                .await
                .expect("enqueue");
            alkstore_core::Engine::flush(&writer).await;
        });
        drop(rt);
    })
    .join()
    .expect("the script's thread");
    assert!(woken(&mut rx, &["script"]).await, "the flushed wake-up");
    drop(other);
    testing::drop_schema(&url, &schema).await.expect("drop");
}

// The application's own transaction (issue 30): what the contract rows
// cannot see from outside the engine.

/// An engine on a fresh schema; `pool_size` 1 leaves one connection, so
/// the next user of the pool gets the connection a transaction used.
async fn tx_engine(
    prefix: &str,
    clock: Option<&ManualClock>,
    pool_size: usize,
) -> (PgEngine, String, String) {
    let url = test_db().await;
    let schema = testing::unique_schema(prefix);
    let mut opts = PgOptions::new(url.clone(), schema.clone());
    opts.pool_size = pool_size;
    if let Some(clock) = clock {
        opts = opts.clock(std::sync::Arc::new(clock.clone()));
    }
    let engine = PgEngine::open(opts).await.expect("open");
    (engine, url, schema)
}

/// The transaction's backend and whether it is inside a transaction that
/// wrote (an xid is assigned).
async fn backend_state(client: &tokio_postgres::Client) -> (i32, Option<String>) {
    let row = client
        .query_one(
            "SELECT pg_backend_pid(), txid_current_if_assigned()::text",
            &[],
        )
        .await
        .expect("backend state");
    (row.get(0), row.get(1))
}

/// A transaction dropped without commit or rollback rolls back, and its
/// connection goes back to the pool outside any transaction (the pool's
/// fast recycling would hand it out as it is).
#[tokio::test]
async fn a_dropped_transaction_rolls_back_and_its_connection_returns_clean() {
    let (engine, url, schema) = tx_engine("txdrop", None, 1).await;
    let mut tx = Transaction::begin(&engine).await.expect("begin");
    let id = tx
        .job_enqueue(vec![NewJob::new("q", b"x".to_vec())])
        .await
        .expect("enqueue")[0]
        .id();
    let client = tx.driver_tx().expect("open").client();
    let (pid, xid) = backend_state(client).await;
    assert!(xid.is_some(), "the enqueue wrote inside the transaction");
    drop(tx);
    // The pool's only connection: handed out once the rollback
    // task returned it (the wait is the pool's, bounded at 30 s).
    let client = engine.client().await.expect("the connection came back");
    let (again, xid) = backend_state(&client).await;
    assert_eq!(again, pid, "the same connection, not a replacement");
    assert_eq!(xid, None, "no longer inside the dropped transaction");
    drop(client);
    assert_eq!(engine.job_get(id).await.expect("get"), None, "rolled back");
    // The connection serves the next transaction as a fresh one.
    let tx = Transaction::begin(&engine).await.expect("begin again");
    tx.job_enqueue(vec![NewJob::new("q", b"y".to_vec())])
        .await
        .expect("enqueue");
    tx.commit().await.expect("commit");
    assert_eq!(engine.queue_stats("q").await.expect("stats").ready, 1);
    testing::drop_schema(&url, &schema).await.expect("drop");
}

/// Outside a tokio runtime nothing can send ROLLBACK: the connection leaves
/// the pool and closes, and the server rolls the transaction back.
#[test]
fn a_transaction_dropped_outside_a_runtime_closes_its_connection() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (engine, url, schema, tx, id, pid) = rt.block_on(async {
        let (engine, url, schema) = tx_engine("txdrop_rt", None, 1).await;
        let mut tx = Transaction::begin(&engine).await.expect("begin");
        let id = tx
            .job_enqueue(vec![NewJob::new("q", b"x".to_vec())])
            .await
            .expect("enqueue")[0]
            .id();
        let (pid, _) = backend_state(tx.driver_tx().expect("open").client()).await;
        (engine, url, schema, tx, id, pid)
    });
    // No runtime on this thread here.
    drop(tx);
    rt.block_on(async {
        let client = engine.client().await.expect("a new connection");
        let (again, xid) = backend_state(&client).await;
        assert_ne!(
            again, pid,
            "the dropped transaction's connection left the pool"
        );
        assert_eq!(xid, None);
        // Its backend ends once the server sees the socket closed.
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let alive: i64 = client
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity WHERE pid = $1",
                    &[&pid],
                )
                .await
                .expect("activity")
                .get(0);
            if alive == 0 {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "backend {pid} lingers"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        drop(client);
        assert_eq!(engine.job_get(id).await.expect("get"), None, "rolled back");
        testing::drop_schema(&url, &schema).await.expect("drop");
    });
}

/// A statement of the application's own that fails aborts the transaction:
/// the commit then reports it and rolls back (PostgreSQL would have
/// answered COMMIT with a silent ROLLBACK), and the connection is reusable.
#[tokio::test]
async fn a_failed_statement_of_the_application_makes_the_commit_roll_back() {
    let (engine, url, schema) = tx_engine("txappfail", None, 1).await;
    let mut tx = Transaction::begin(&engine).await.expect("begin");
    let id = tx
        .job_enqueue(vec![NewJob::new("q", b"x".to_vec())])
        .await
        .expect("enqueue")[0]
        .id();
    let client = tx.driver_tx().expect("open").client();
    client
        .batch_execute("SELECT * FROM no_such_table_at_all")
        .await
        .expect_err("the application's own statement fails");
    let err = tx.commit().await.expect_err("cannot commit");
    assert_eq!(err.kind(), ErrorKind::RolledBack, "{err}");
    assert!(err.to_string().contains("aborted"), "{err}");
    assert_eq!(engine.job_get(id).await.expect("get"), None);
    let client = engine.client().await.expect("connection");
    assert_eq!(
        backend_state(&client).await.1,
        None,
        "out of the transaction"
    );
    drop(client);
    testing::drop_schema(&url, &schema).await.expect("drop");
}

/// Wait (bounded) until a backend of this test's database waits on a row
/// lock held by `holder_pid`.
async fn wait_until_blocked_by(client: &tokio_postgres::Client, holder_pid: i32) {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let waiting: i64 = client
            .query_one(
                "SELECT count(*) FROM pg_stat_activity \
                 WHERE $1 = ANY(pg_blocking_pids(pid))",
                &[&holder_pid],
            )
            .await
            .expect("activity")
            .get(0);
        if waiting > 0 {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "nobody ever waited on the transaction"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// A lock fenced by an open transaction cannot be taken over, even once it
/// lapsed: the takeover waits on the lock's row until the transaction
/// commits, then re-checks it and takes the lock; the fenced writes landed
/// before the takeover.
#[tokio::test]
async fn a_lock_takeover_waits_for_the_fencing_transaction() {
    let clock = ManualClock::starting_now();
    let (engine, url, schema) = tx_engine("txfence", Some(&clock), 16).await;
    let ttl = std::time::Duration::from_secs(10);
    let grant = engine
        .lock_acquire(LockAcquireParams::new("leader", "a", ttl))
        .await
        .expect("acquire")
        .expect("free");
    let mut tx = Transaction::begin(&engine).await.expect("begin");
    tx.lock_fence(alkstore_core::lock::LockFenceParams::new(
        "leader",
        grant.token,
    ))
    .await
    .expect("fence");
    let id = tx
        .job_enqueue(vec![NewJob::new("fenced", b"x".to_vec())])
        .await
        .expect("enqueue")[0]
        .id();
    let holder: i32 = backend_state(tx.driver_tx().expect("open").client())
        .await
        .0;
    // The lock lapses while the transaction is open.
    clock.advance(ttl * 2);
    let taker = engine.clone();
    let mut takeover = tokio::spawn(async move {
        taker
            .lock_acquire(LockAcquireParams::new("leader", "b", ttl))
            .await
    });
    let observer = engine.client().await.expect("client");
    wait_until_blocked_by(&observer, holder).await;
    assert!(
        tokio::time::timeout(std::time::Duration::from_millis(100), &mut takeover)
            .await
            .is_err(),
        "the takeover finished while the fencing transaction was open"
    );
    tx.commit().await.expect("commit");
    let taken = takeover
        .await
        .expect("task")
        .expect("acquire")
        .expect("the lapsed lock is taken once the transaction ended");
    assert_eq!(taken.owner, "b");
    assert_eq!(taken.token, grant.token + 1);
    assert!(
        engine.job_get(id).await.expect("get").is_some(),
        "the fenced write landed"
    );
    // The old holder's token no longer fences anything.
    let late = Transaction::begin(&engine).await.expect("begin");
    let err = late
        .lock_fence(alkstore_core::lock::LockFenceParams::new(
            "leader",
            grant.token,
        ))
        .await
        .expect_err("passed on");
    assert_eq!(err.kind(), ErrorKind::NotHeld, "{err}");
    late.rollback().await.expect("rollback");
    drop(observer);
    testing::drop_schema(&url, &schema).await.expect("drop");
}

/// A bucket whose checkpoint an open transaction wrote is not taken over
/// while it is open, even once its lease lapsed (claims skip the locked
/// row); after the commit the next owner starts from that checkpoint.
#[tokio::test]
async fn a_group_lease_is_not_taken_over_while_its_checkpoint_is_open() {
    use alkstore_core::group::{GroupCheckpointParams, GroupClaimParams, GroupEnsureParams};
    let clock = ManualClock::starting_now();
    let (engine, url, schema) = tx_engine("txlease", Some(&clock), 16).await;
    engine
        .group_ensure(GroupEnsureParams::new("g", "s", 1))
        .await
        .expect("ensure");
    let offset = engine
        .stream_publish(alkstore_core::stream::NewEvent::new("s", b"e".to_vec()))
        .await
        .expect("publish")[0];
    alkstore_contract::streams::settle(&engine, "s").await;
    let ttl = std::time::Duration::from_secs(10);
    let lease = engine
        .group_claim(GroupClaimParams::new("g", "a", ttl, 1))
        .await
        .expect("claim")
        .remove(0);
    let tx = Transaction::begin(&engine).await.expect("begin");
    tx.group_checkpoint(GroupCheckpointParams::new("g", 0, "a", lease.epoch, offset))
        .await
        .expect("checkpoint");
    clock.advance(ttl * 2);
    let taken = engine
        .group_claim(GroupClaimParams::new("g", "b", ttl, 1))
        .await
        .expect("claim while open");
    assert!(taken.is_empty(), "took a bucket mid-checkpoint: {taken:?}");
    tx.commit().await.expect("commit");
    let taken = engine
        .group_claim(GroupClaimParams::new("g", "b", ttl, 1))
        .await
        .expect("claim after")
        .remove(0);
    assert_eq!(taken.epoch, lease.epoch + 1);
    assert_eq!(
        taken.checkpoint, offset,
        "starts after the committed checkpoint"
    );
    testing::drop_schema(&url, &schema).await.expect("drop");
}

/// A job acked in an open transaction is neither rescued nor claimed
/// again while it is open, even once its claim expired; the commit then
/// completes it.
#[tokio::test]
async fn an_acked_job_is_not_rescued_while_its_transaction_is_open() {
    use alkstore_core::JobClaimParams;
    let clock = ManualClock::starting_now();
    let (engine, url, schema) = tx_engine("txack", Some(&clock), 16).await;
    let id = engine
        .job_enqueue(vec![NewJob::new("q", b"x".to_vec())])
        .await
        .expect("enqueue")[0]
        .id();
    let job = engine
        .job_claim(JobClaimParams::new("q", "a", 1))
        .await
        .expect("claim")
        .remove(0);
    let tx = Transaction::begin(&engine).await.expect("begin");
    tx.job_ack(job.claim()).await.expect("ack");
    clock.advance(std::time::Duration::from_secs(3600));
    let again = engine
        .job_claim(JobClaimParams::new("q", "b", 1))
        .await
        .expect("claim while open");
    assert!(again.is_empty(), "handed out mid-ack: {again:?}");
    tx.commit().await.expect("commit");
    assert_eq!(engine.job_get(id).await.expect("get"), None, "done");
    testing::drop_schema(&url, &schema).await.expect("drop");
}

/// Jobs acked, retried or failed in an open transaction lock no row of
/// the throughput table (nor the table): they are counted after the
/// commit, on the transaction's connection. Counted in the settle
/// statements, the counter row of the transaction's shard stayed locked
/// until the commit, holding up every other ack of the queue on that
/// shard, and two transactions settling jobs of two queues in opposite
/// orders could deadlock.
#[tokio::test]
async fn a_transactions_settles_lock_no_throughput_row_and_count_at_commit() {
    use alkstore_core::{JobClaimParams, JobRetryParams, QueueThroughputParams};
    let clock = ManualClock::starting_now();
    let (engine, url, schema) = tx_engine("txcount", Some(&clock), 16).await;
    let jobs: Vec<NewJob> = (0..3).map(|_| NewJob::new("q", b"x".to_vec())).collect();
    engine.job_enqueue(jobs).await.expect("enqueue");
    let held = engine
        .job_claim(JobClaimParams::new("q", "a", 3))
        .await
        .expect("claim");
    let mut tx = Transaction::begin(&engine).await.expect("begin");
    tx.job_ack(held[0].claim()).await.expect("ack");
    let retry = JobRetryParams::new(held[1].claim(), "again");
    tx.job_retry(retry).await.expect("retry");
    tx.job_fail(JobFailParams::new(held[2].claim(), "fatal".to_string()))
        .await
        .expect("fail");
    let (pid, _) = backend_state(tx.driver_tx().expect("open").client()).await;
    let observer = engine.client().await.expect("client");
    let table = format!(
        "{}.queue_throughput",
        alkstore_postgres::schema::quote_identifier(&schema)
    );
    let locks: i64 = observer
        .query_one(
            "SELECT count(*) FROM pg_locks WHERE pid = $1 AND relation = $2::text::regclass",
            &[&pid, &table],
        )
        .await
        .expect("locks")
        .get(0);
    assert_eq!(locks, 0, "the open transaction locks the throughput table");
    let totals = |e: PgEngine| async move {
        e.queue_throughput(QueueThroughputParams::queue(
            "q",
            std::time::Duration::from_secs(60),
        ))
        .await
        .expect("throughput")
        .totals
        .iter()
        .map(|t| (t.completed, t.failed))
        .collect::<Vec<_>>()
    };
    assert_eq!(totals(engine.clone()).await, [], "nothing counted yet");
    tx.commit().await.expect("commit");
    assert_eq!(
        totals(engine.clone()).await,
        [(1, 2)],
        "counted at the commit"
    );
    drop(observer);
    testing::drop_schema(&url, &schema).await.expect("drop");
}

/// Times inside a transaction are each statement's, not the transaction's
/// start (`now()`): a claim that expires while the transaction is open is
/// refused by its ack, as the autocommit ack would refuse it.
#[tokio::test]
async fn a_claim_that_expires_during_the_transaction_is_refused() {
    use alkstore_core::{JobClaimParams, QueueOpts};
    let (engine, url, schema) = tx_engine("txclock", None, 16).await;
    let opts = QueueOpts {
        visibility_timeout: std::time::Duration::from_secs(2),
        ..QueueOpts::default()
    };
    engine
        .job_enqueue(vec![NewJob::new("q", b"x".to_vec()).with_queue_opts(opts)])
        .await
        .expect("enqueue");
    let job = engine
        .job_claim(JobClaimParams::new("q", "a", 1))
        .await
        .expect("claim")
        .remove(0);
    let mut tx = Transaction::begin(&engine).await.expect("begin");
    let client = tx.driver_tx().expect("open").client();
    // Wait (bounded) until the database's clock passes the claim's expiry.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let now: i64 = client
            .query_one(
                "SELECT floor(extract(epoch FROM clock_timestamp()))::bigint",
                &[],
            )
            .await
            .expect("clock")
            .get(0);
        if now > job.claim_expires_at {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the clock stands still"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let err = tx.job_ack(job.claim()).await.expect_err("expired");
    assert_eq!(err.kind(), ErrorKind::NotHeld, "{err}");
    let err = tx.commit().await.expect_err("poisoned");
    assert_eq!(err.kind(), ErrorKind::RolledBack, "{err}");
    testing::drop_schema(&url, &schema).await.expect("drop");
}

/// On the application's own tokio-postgres transaction (`within`), a call
/// that finds its claim lost leaves the transaction aborted: the
/// application's next statement fails and its COMMIT rolls back, so its
/// writes cannot land without the ack. Refused input does not.
#[tokio::test]
async fn a_lost_claim_leaves_the_application_transaction_unable_to_commit() {
    use alkstore_core::stream::StreamOffsetCommitParams;
    use alkstore_core::JobClaimParams;
    let clock = ManualClock::starting_now();
    let (engine, url, schema) = tx_engine("txwithin", Some(&clock), 16).await;
    engine
        .job_enqueue(vec![NewJob::new("q", b"x".to_vec())])
        .await
        .expect("enqueue");
    let job = engine
        .job_claim(JobClaimParams::new("q", "a", 1))
        .await
        .expect("claim")
        .remove(0);
    clock.advance(std::time::Duration::from_secs(3600));
    assert_eq!(
        engine
            .job_claim(JobClaimParams::new("q", "b", 1))
            .await
            .expect("claim")
            .len(),
        1,
        "the expired claim passed on"
    );
    let (mut client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .expect("the application's connection");
    let driver = tokio::spawn(conn);
    let table = format!(
        "{}.orders",
        alkstore_postgres::schema::quote_identifier(&schema)
    );
    client
        .batch_execute(&format!("CREATE TABLE {table} (note TEXT)"))
        .await
        .expect("table");
    let insert = format!("INSERT INTO {table} VALUES ($1)");
    let tx = client.transaction().await.expect("begin");
    tx.execute(&insert, &[&"before"]).await.expect("insert");
    let store = engine.within(&tx);
    let refused = store
        .stream_offset_commit(StreamOffsetCommitParams::new("s", "c", 10))
        .await
        .expect_err("beyond the head");
    assert_eq!(refused.kind(), ErrorKind::InvalidInput, "{refused}");
    tx.execute(&insert, &[&"after refused input"])
        .await
        .expect("refused input leaves the transaction usable");
    let err = store.job_ack(job.claim()).await.expect_err("not held");
    assert_eq!(err.kind(), ErrorKind::NotHeld, "{err}");
    tx.execute(&insert, &[&"after"])
        .await
        .expect_err("the transaction is aborted");
    tx.commit().await.expect("COMMIT, answered with ROLLBACK");
    let rows: i64 = client
        .query_one(&format!("SELECT count(*) FROM {table}"), &[])
        .await
        .expect("count")
        .get(0);
    assert_eq!(rows, 0, "nothing of the transaction committed");
    drop(client);
    let _ = driver.await;
    testing::drop_schema(&url, &schema).await.expect("drop");
}

/// When the statement writing a group of concurrent enqueues (or
/// publishes) fails, every call in the group gets the error, none waits
/// forever, and calls after it are written again once the cause is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_group_fails_each_of_its_calls() {
    use alkstore_core::stream::NewEvent;
    let url = test_db().await;
    let schema = testing::unique_schema("groupfail");
    let engine = PgEngine::open(PgOptions::new(url.clone(), schema.clone()))
        .await
        .expect("open");
    engine.drop_store().await.expect("drop the tables");
    let mut calls = Vec::new();
    for i in 0..16 {
        let e = engine.clone();
        calls.push(tokio::spawn(async move {
            let job = e
                .job_enqueue(vec![NewJob::new("q", format!("{i}").into_bytes())])
                .await;
            let event = e
                .stream_publish(vec![NewEvent::new("s", format!("{i}").into_bytes())])
                .await;
            (job.is_err(), event.is_err())
        }));
    }
    for c in calls {
        let (job_failed, event_failed) =
            tokio::time::timeout(std::time::Duration::from_secs(30), c)
                .await
                .expect("no call waits forever")
                .expect("task");
        assert!(job_failed && event_failed, "every call saw the failure");
    }
    // The schema is back: the next calls are written.
    let again = PgEngine::open(PgOptions::new(url.clone(), schema.clone()))
        .await
        .expect("reopen creates the schema again");
    drop(again);
    let ids = engine
        .job_enqueue(vec![NewJob::new("q", b"after".to_vec())])
        .await
        .expect("enqueue after the failure");
    assert_eq!(ids.len(), 1);
    drop(engine);
    testing::drop_schema(&url, &schema).await.expect("drop");
}

/// A session the server ends (a restart, a failover, a terminated backend)
/// is a connection error, never a database one, and the next calls
/// reconnect.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminated_session_is_a_connect_error_and_calls_reconnect() {
    let url = test_db().await;
    let app = format!("alk_term_{}", std::process::id());
    let schema = testing::unique_schema("term");
    let mut opts = PgOptions::new(format!("{url}?application_name={app}"), schema.clone());
    opts.relaxed_commits = false;
    let engine = PgEngine::open(opts).await.expect("open");
    let one = || vec![NewJob::new("q", b"x".to_vec())];
    let (admin, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    let driver = tokio::spawn(conn);
    let mut seen = Vec::new();
    for _ in 0..5 {
        // Several sessions in use, so some are ended mid-call.
        let calls = futures_util::future::join_all((0..4).map(|_| engine.job_enqueue(one())));
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 1] = [&app];
        let ended = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
            &params,
        );
        let (results, ended) = tokio::join!(calls, ended);
        ended.expect("terminate");
        seen.extend(
            results
                .into_iter()
                .filter_map(|r| r.err())
                .map(|e| e.kind()),
        );
        let after = engine.job_enqueue(one()).await.err().map(|e| e.kind());
        seen.extend(after);
    }
    assert!(
        seen.iter().all(|k| *k == ErrorKind::Connect),
        "every failure a connection error: {seen:?}"
    );
    let mut last = engine.job_enqueue(one()).await;
    for _ in 0..3 {
        if last.is_ok() {
            break;
        }
        last = engine.job_enqueue(one()).await;
    }
    last.expect("a call after the sessions ended reconnects");
    drop(admin);
    let _ = driver.await;
    testing::drop_schema(&url, &schema).await.expect("drop");
}

/// A subscriber rides out the store being out of reach for a while (its
/// sessions ended by the server, new ones refused, as in a restart or a
/// failover): it follows again from the saved offset and handles every
/// event, instead of stopping with a connection error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_rides_out_the_store_being_out_of_reach() {
    use alkstore_contract::alkstore::stream::{EventCtx, SubscriberOpts};
    use alkstore_contract::alkstore::Subscriber;
    use std::collections::BTreeSet;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;
    // A database of its own: it is closed to new connections for a while.
    let db = "alkstore_test_unreachable";
    let (gate, store) = Gate::store(db, "unreach").await;
    let stream = store.stream("s");
    let events = 300;
    for i in 0..events {
        stream
            .publish_raw(None, format!("{i}").into_bytes())
            .await
            .expect("publish");
    }
    let seen = Arc::new(Mutex::new(BTreeSet::new()));
    let seen_by_handler = seen.clone();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    // Small pages, saved often: the store is called all along.
    let opts = SubscriberOpts {
        batch: 10,
        commit_every: 10,
        ..SubscriberOpts::default()
    };
    let subscriber = Subscriber::new(store.clone(), "s", "c")
        .opts(opts)
        .handler_raw(move |e: EventCtx<Vec<u8>>| {
            let seen = seen_by_handler.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(2)).await;
                seen.lock().expect("lock").insert(e.offset());
                Ok::<(), std::io::Error>(())
            }
        })
        .run_until(async move {
            let _ = stopped.await;
        });
    let running = tokio::spawn(subscriber);
    tokio::time::sleep(Duration::from_millis(100)).await;
    gate.close().await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    gate.open().await;
    let all = async {
        while seen.lock().expect("lock").len() < events {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let handled_all = tokio::time::timeout(Duration::from_secs(30), all).await;
    let _ = stop.send(());
    let report = running.await.expect("join");
    let report = report.expect("the subscriber rode out the unreachable store");
    handled_all.expect("every event handled within 30 s");
    assert!(report.handled >= events as u64, "{report:?}");
    gate.finish().await;
}

/// A group worker that starts while the store is out of reach (a
/// database restarting or failing over) joins once it is back, and
/// handles the stream, instead of stopping on its first connection error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_worker_joins_once_the_store_is_back() {
    use alkstore_contract::alkstore::group::{GroupEvent, GroupRunner};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;
    let db = "alkstore_test_unreachable_group";
    let (gate, store) = Gate::store(db, "unreachg").await;
    let events = 50;
    for i in 0..events {
        store
            .stream("s")
            .publish_raw(Some(&format!("k{i}")), b"e".to_vec())
            .await
            .expect("publish");
    }
    gate.close().await;
    let handled = Arc::new(AtomicUsize::new(0));
    let counted = handled.clone();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(
        GroupRunner::new(store.clone(), "g", "s")
            .buckets(4)
            .handler_raw(move |_e: GroupEvent<Vec<u8>>| {
                counted.fetch_add(1, Ordering::SeqCst);
                std::future::ready(Ok::<(), std::io::Error>(()))
            })
            .run_until(async move {
                let _ = stopped.await;
            }),
    );
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(
        !running.is_finished(),
        "the worker stopped while the store was out of reach"
    );
    gate.open().await;
    let all = async {
        while handled.load(Ordering::SeqCst) < events {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let handled_all = tokio::time::timeout(Duration::from_secs(30), all).await;
    let _ = stop.send(());
    running
        .await
        .expect("join")
        .expect("the worker joined once the store was back");
    handled_all.expect("every event handled within 30 s");
    gate.finish().await;
}

/// Opens and closes a test database to new connections, from a connection
/// to the server's default database; and the store in it, in a schema of
/// its own.
struct Gate {
    db: &'static str,
    admin: tokio_postgres::Client,
    driver: tokio::task::JoinHandle<Result<(), tokio_postgres::Error>>,
    url: String,
    schema: String,
}

impl Gate {
    /// A store in database `db` (created if missing, and opened whatever
    /// an interrupted run left it as), and the gate of `db`.
    async fn store(
        db: &'static str,
        schema_prefix: &str,
    ) -> (Gate, alkstore_contract::alkstore::Store) {
        use alkstore_contract::alkstore::{AnyEngine, Store};
        let url = testing::ensure_database(&testing::database_url(), db)
            .await
            .expect("database");
        let (admin, conn) =
            tokio_postgres::connect(&testing::database_url(), tokio_postgres::NoTls)
                .await
                .expect("connect");
        let gate = Gate {
            db,
            admin,
            driver: tokio::spawn(conn),
            url,
            schema: testing::unique_schema(schema_prefix),
        };
        gate.open().await;
        let engine = PgEngine::open(PgOptions::new(gate.url.clone(), gate.schema.clone()))
            .await
            .expect("open");
        (gate, Store::from_engine(AnyEngine::Postgres(engine)))
    }

    /// Refuse new connections and end the open ones (as a restart does).
    async fn close(&self) {
        let db = self.db;
        self.admin
            .batch_execute(&format!(
                "ALTER DATABASE {db} ALLOW_CONNECTIONS false; \
                 SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{db}'"
            ))
            .await
            .expect("close the database");
    }

    async fn open(&self) {
        self.admin
            .batch_execute(&format!(
                "ALTER DATABASE {} ALLOW_CONNECTIONS true",
                self.db
            ))
            .await
            .expect("open the database");
    }

    /// Drop the store's schema and disconnect.
    async fn finish(self) {
        testing::drop_schema(&self.url, &self.schema)
            .await
            .expect("drop");
        drop(self.admin);
        let _ = self.driver.await;
    }
}
