//! Every transactional call on the application's own sqlx transaction
//! (`PgEngine::within_sqlx`, feature `sqlx`): the statements the other
//! paths run, bound and decoded through sqlx.
#![cfg(feature = "sqlx")]

use alkstore_core::queue::{JobFailParams, JobSnoozeParams};
use std::sync::Arc;
use std::time::Duration;

use alkstore_core::group::{GroupCheckpointParams, GroupClaimParams, GroupEnsureParams};
use alkstore_core::lock::LockAcquireParams;
use alkstore_core::prelude::*;
use alkstore_core::schedule::ScheduleSetParams;
use alkstore_core::stream::{
    NewEvent, StreamOffsetCommitParams, StreamOffsetGetParams, StreamReadParams,
};
use alkstore_core::{
    EnqueueOpts, ErrorKind, JobClaimParams, JobRetryParams, ManualClock, NewJob, RetryOutcome, Wake,
};
use alkstore_postgres::sqlx::{self, postgres::PgPoolOptions, PgPool};
use alkstore_postgres::{schema::quote_identifier, testing, PgEngine, PgOptions};

struct Setup {
    engine: PgEngine,
    clock: ManualClock,
    pool: PgPool,
    url: String,
    schema: String,
}

impl Setup {
    async fn new(prefix: &str) -> Setup {
        let url = testing::ensure_database(&testing::database_url(), "alkstore_test")
            .await
            .expect("PostgreSQL at DATABASE_URL (scripts/test starts one)");
        let schema = testing::unique_schema(prefix);
        let clock = ManualClock::starting_now();
        let opts = PgOptions::new(url.clone(), schema.clone()).clock(Arc::new(clock.clone()));
        let engine = PgEngine::open(opts).await.expect("open");
        let pool = PgPoolOptions::new()
            .max_connections(4)
            .connect(&url)
            .await
            .expect("sqlx pool");
        sqlx::query(&format!(
            "CREATE TABLE {} (id BIGSERIAL PRIMARY KEY, note TEXT NOT NULL)",
            Setup::orders(&schema)
        ))
        .execute(&pool)
        .await
        .expect("the application's table");
        Setup {
            engine,
            clock,
            pool,
            url,
            schema,
        }
    }

    fn orders(schema: &str) -> String {
        format!("{}.orders", quote_identifier(schema))
    }

    /// The application's own write, in `conn`'s transaction.
    async fn order(&self, conn: &mut sqlx::PgConnection, note: &str) -> Result<(), sqlx::Error> {
        sqlx::query(&format!(
            "INSERT INTO {} (note) VALUES ($1)",
            Setup::orders(&self.schema)
        ))
        .bind(note)
        .execute(conn)
        .await
        .map(drop)
    }

    async fn orders_committed(&self) -> Vec<String> {
        sqlx::query_scalar(&format!(
            "SELECT note FROM {} ORDER BY id",
            Setup::orders(&self.schema)
        ))
        .fetch_all(&self.pool)
        .await
        .expect("orders")
    }

    /// A job claimed by `worker`.
    async fn claimed(&self, queue: &str, worker: &str) -> alkstore_core::Job {
        self.engine
            .job_enqueue(vec![NewJob::new(queue, b"job".to_vec())])
            .await
            .expect("enqueue");
        self.engine
            .job_claim(JobClaimParams::new(queue, worker, 1))
            .await
            .expect("claim")
            .pop()
            .expect("a job")
    }

    async fn done(self) {
        self.pool.close().await;
        testing::drop_schema(&self.url, &self.schema)
            .await
            .expect("drop");
    }
}

/// Every call, in one sqlx transaction with the application's own row:
/// nothing shows before the commit, everything after it.
#[tokio::test]
async fn every_call_commits_with_the_application_row() {
    let s = Setup::new("sqlx_all").await;
    let e = &s.engine;
    // What the fenced calls need: claims, a lease over readable events, a
    // lock, a schedule to pause, resume and remove.
    let (to_ack, to_retry, to_fail, to_snooze) = (
        s.claimed("ack", "w").await,
        s.claimed("retry", "w").await,
        s.claimed("fail", "w").await,
        s.claimed("snooze", "w").await,
    );
    let published = e
        .stream_publish(vec![
            NewEvent::new("s", b"1".to_vec()),
            NewEvent::new("s", b"2".to_vec()),
        ])
        .await
        .expect("publish");
    alkstore_contract::streams::settle(e, "s").await;
    e.group_ensure(GroupEnsureParams::new("g", "s", 1))
        .await
        .expect("ensure");
    let lease = e
        .group_claim(GroupClaimParams::new("g", "w", Duration::from_secs(10), 1))
        .await
        .expect("lease")
        .pop()
        .expect("bucket 0");
    let grant = e
        .lock_acquire(LockAcquireParams::new("l", "w", Duration::from_secs(10)))
        .await
        .expect("lock")
        .expect("free");
    e.schedule_set(ScheduleSetParams::new("old", "@every 1h", "ticks"))
        .await
        .expect("schedule");
    e.schedule_set(ScheduleSetParams::new("gone", "@every 1h", "ticks"))
        .await
        .expect("schedule");
    let mut hints = e.wake_subscribe();
    e.notify_ready().await.expect("listening");

    let mut tx = s.pool.begin().await.expect("begin");
    s.order(&mut tx, "order 1").await.expect("order");
    let store = e.within_sqlx(&mut tx);
    let one = store
        .job_enqueue(vec![NewJob::new("emails", b"one".to_vec())])
        .await
        .expect("one job");
    let uniform = store
        .job_enqueue(vec![
            NewJob::new("emails", b"a".to_vec()),
            NewJob::new("emails", b"b".to_vec()),
        ])
        .await
        .expect("uniform batch");
    let keyed = store
        .job_enqueue(vec![
            NewJob::new("keyed", b"k".to_vec()).with_opts(EnqueueOpts::default().unique_key("k")),
            NewJob::new("keyed", b"k again".to_vec())
                .with_opts(EnqueueOpts::default().unique_key("k")),
            NewJob::new("keyed", b"plain".to_vec()).with_opts(EnqueueOpts::default().priority(3)),
        ])
        .await
        .expect("keyed batch");
    assert_eq!(keyed[1].id(), keyed[0].id(), "a duplicate names the holder");
    let offsets = store
        .stream_publish(vec![
            NewEvent::new("orders", b"placed".to_vec()).key("order 1"),
            NewEvent::new("orders", b"paid".to_vec()),
        ])
        .await
        .expect("publish");
    store
        .notify(alkstore_core::notify::NotifyParams::new(
            "orders", "order 1",
        ))
        .await
        .expect("notify");
    store.job_ack(to_ack.claim()).await.expect("ack");
    let retried = store
        .job_retry(JobRetryParams::new(to_retry.claim(), "later").delay(Duration::from_secs(60)))
        .await
        .expect("retry");
    assert!(matches!(retried, RetryOutcome::Scheduled(_)), "{retried:?}");
    store
        .job_fail(JobFailParams::new(to_fail.claim(), "broken".to_string()))
        .await
        .expect("fail");
    store
        .job_snooze(JobSnoozeParams::new(
            to_snooze.claim(),
            Duration::from_secs(30),
        ))
        .await
        .expect("snooze");
    let at = store
        .stream_offset_commit(StreamOffsetCommitParams::new("s", "c", published[1]))
        .await
        .expect("offset");
    assert_eq!(at, published[1]);
    let saved = store
        .group_checkpoint(GroupCheckpointParams::new(
            "g",
            lease.bucket,
            "w",
            lease.epoch,
            published[0],
        ))
        .await
        .expect("checkpoint");
    assert_eq!(saved, published[0]);
    store
        .lock_fence(alkstore_core::lock::LockFenceParams::new("l", grant.token))
        .await
        .expect("fence");
    let set = store
        .schedule_set(ScheduleSetParams::new("new", "*/5 * * * *", "ticks"))
        .await
        .expect("schedule set");
    assert_eq!(set.name, "new");
    assert!(store.schedule_pause("old").await.expect("pause").paused);
    assert!(!store.schedule_resume("old").await.expect("resume").paused);
    assert!(store.schedule_pause("old").await.expect("pause").paused);
    assert!(store.schedule_remove("gone").await.expect("remove"));

    // Nothing shows before the commit.
    assert_eq!(e.queue_stats("emails").await.expect("stats").ready, 0);
    assert!(s.orders_committed().await.is_empty());
    tx.commit().await.expect("commit");

    assert_eq!(s.orders_committed().await, ["order 1"]);
    assert_eq!(e.queue_stats("emails").await.expect("stats").ready, 3);
    assert_eq!(one.len() + uniform.len(), 3);
    assert_eq!(e.queue_stats("keyed").await.expect("stats").ready, 2);
    alkstore_contract::streams::settle(e, "orders").await;
    let read = e
        .stream_read(StreamReadParams::new("orders", 0, 10))
        .await
        .expect("read");
    assert_eq!(read.iter().map(|e| e.offset).collect::<Vec<_>>(), offsets);
    assert_eq!(read[0].key.as_deref(), Some("order 1"));
    assert_eq!(e.job_get(to_ack.id).await.expect("get"), None, "acked");
    let retry = e.job_get(to_retry.id).await.expect("get").expect("live");
    assert_eq!(retry.last_error.as_deref(), Some("later"));
    let dead = e.job_get(to_fail.id).await.expect("get").expect("dead");
    assert_eq!(dead.last_error.as_deref(), Some("broken"));
    let snoozed = e.job_get(to_snooze.id).await.expect("get").expect("live");
    assert!(snoozed.claim_expires_at.is_none(), "handed back");
    assert_eq!(
        e.stream_offset_get(StreamOffsetGetParams::new("s", "c"))
            .await
            .expect("offset"),
        Some(published[1])
    );
    assert_eq!(
        e.group_status("g").await.expect("status").buckets[0].checkpoint,
        published[0]
    );
    let schedules: Vec<(String, bool)> = e
        .schedule_list()
        .await
        .expect("schedules")
        .into_iter()
        .map(|s| (s.name, s.paused))
        .collect();
    assert_eq!(
        schedules,
        [("new".to_string(), false), ("old".to_string(), true)]
    );
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        match tokio::time::timeout_at(deadline, hints.recv()).await {
            Ok(Ok(Wake::Message(n))) if n.channel == "orders" => {
                assert_eq!(n.payload, "order 1");
                break;
            }
            Ok(Ok(_)) | Ok(Err(tokio::sync::broadcast::error::RecvError::Lagged(_))) => {}
            other => panic!("the notification never came: {other:?}"),
        }
    }
    s.done().await;
}

/// Rolled back (or dropped), the sqlx transaction leaves nothing: neither
/// the application's row nor the store's writes.
#[tokio::test]
async fn a_rolled_back_transaction_leaves_nothing() {
    let s = Setup::new("sqlx_rb").await;
    for rollback in [true, false] {
        let mut tx = s.pool.begin().await.expect("begin");
        s.order(&mut tx, "order 1").await.expect("order");
        let store = s.engine.within_sqlx(&mut tx);
        store
            .job_enqueue(vec![NewJob::new("emails", b"x".to_vec())])
            .await
            .expect("enqueue");
        store
            .stream_publish(vec![NewEvent::new("orders", b"x".to_vec())])
            .await
            .expect("publish");
        if rollback {
            tx.rollback().await.expect("rollback");
        } else {
            drop(tx);
        }
    }
    // Wait (bounded) until the dropped one's connection rolled back.
    alkstore_contract::streams::settle(&s.engine, "orders").await;
    assert!(s.orders_committed().await.is_empty());
    assert_eq!(
        s.engine.queue_stats("emails").await.expect("stats").ready,
        0
    );
    let read = s
        .engine
        .stream_read(StreamReadParams::new("orders", 0, 10))
        .await
        .expect("read");
    assert!(read.is_empty(), "{read:?}");
    s.done().await;
}

/// A claim lost before the call: `NotHeld`, and the transaction is left
/// aborted: the application's next statement fails, and its COMMIT rolls
/// back (sqlx reports no error: PostgreSQL answers it with ROLLBACK), so
/// its row is gone with everything else.
#[tokio::test]
async fn a_lost_claim_leaves_the_transaction_unable_to_commit() {
    let s = Setup::new("sqlx_lost").await;
    let job = s.claimed("q", "a").await;
    s.clock.advance(Duration::from_secs(3600));
    let again = s
        .engine
        .job_claim(JobClaimParams::new("q", "b", 1))
        .await
        .expect("claim");
    assert_eq!(again.len(), 1, "the expired claim passed on");
    let mut tx = s.pool.begin().await.expect("begin");
    s.order(&mut tx, "order 1").await.expect("order");
    let store = s.engine.within_sqlx(&mut tx);
    store
        .job_enqueue(vec![NewJob::new("emails", b"x".to_vec())])
        .await
        .expect("enqueue");
    let err = store.job_ack(job.claim()).await.expect_err("not held");
    assert_eq!(err.kind(), ErrorKind::NotHeld, "{err}");
    s.order(&mut tx, "order 2")
        .await
        .expect_err("the transaction is aborted");
    tx.commit().await.expect("COMMIT, answered with ROLLBACK");
    assert!(s.orders_committed().await.is_empty());
    assert_eq!(
        s.engine.queue_stats("emails").await.expect("stats").ready,
        0
    );
    s.done().await;
}

/// Refused input writes nothing and leaves the transaction as it was,
/// including what only the database can judge (an offset beyond the
/// head): the rest commits.
#[tokio::test]
async fn refused_input_leaves_the_transaction_usable() {
    let s = Setup::new("sqlx_bad").await;
    let head = s
        .engine
        .stream_publish(NewEvent::new("s", b"1".to_vec()))
        .await
        .expect("publish")[0];
    alkstore_contract::streams::settle(&s.engine, "s").await;
    let mut tx = s.pool.begin().await.expect("begin");
    s.order(&mut tx, "order 1").await.expect("order");
    let store = s.engine.within_sqlx(&mut tx);
    let bad = store
        .job_enqueue(vec![NewJob::new("", b"x".to_vec())])
        .await
        .expect_err("no queue name");
    assert_eq!(bad.kind(), ErrorKind::InvalidInput, "{bad}");
    let beyond = store
        .stream_offset_commit(StreamOffsetCommitParams::new("s", "c", head + 10))
        .await
        .expect_err("beyond the head");
    assert_eq!(beyond.kind(), ErrorKind::InvalidInput, "{beyond}");
    store
        .job_enqueue(vec![NewJob::new("emails", b"x".to_vec())])
        .await
        .expect("a good call after them");
    s.order(&mut tx, "order 2").await.expect("still usable");
    tx.commit().await.expect("commit");
    assert_eq!(s.orders_committed().await, ["order 1", "order 2"]);
    assert_eq!(
        s.engine.queue_stats("emails").await.expect("stats").ready,
        1
    );
    assert_eq!(
        s.engine
            .stream_offset_get(StreamOffsetGetParams::new("s", "c"))
            .await
            .expect("offset"),
        None
    );
    s.done().await;
}
