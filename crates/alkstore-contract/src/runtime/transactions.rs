//! Transactional handlers: a worker's, a subscriber's and a group's
//! handler writes business rows through the transaction the runtime opened
//! (the application's own SQL on its native handle); they commit with the
//! job's ack, the consumer's offset or the bucket's checkpoint, or vanish
//! with them.
//!
//! The lost-claim and lost-lease rows take the claim or the lease away
//! while the handler runs. Where the store lets another connection write
//! meanwhile (PostgreSQL), a rival takes it over and the handler waits for
//! that; where the open transaction holds the only write lock (SQLite),
//! nobody can, so the handler outlives its claim or lease instead, and the
//! rival's takeover comes after.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use alkstore::group::{GroupClaimParams, GroupEvent, GroupOpts, GroupReleaseParams, GroupRunner};
use alkstore::stream::{EventCtx, OnError, SubscriberOpts};
use alkstore::Subscriber;
use alkstore::{
    prelude::{GroupEngine, QueueAdmin, QueueEngine},
    queue::JobClaimParams,
    JobCtx, JobError, Worker,
};
use alkstore_core::{BoxError, Engine};

use super::support::quick;
use crate::{Business, RuntimeHarness};

/// Resolves once `business` holds at least `n` committed rows; fails with
/// `what` after 60 s.
async fn until_rows(business: &dyn Business, n: usize, what: &str) -> Vec<(String, i64)> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let rows = business.rows().await.expect("business rows");
        if rows.len() >= n {
            return rows;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: {} of {n} rows",
            rows.len()
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Resolves once `queue` has no live job and `dead` dead ones (60 s).
async fn until_settled(store: &alkstore::Store, queue: &str, dead: u64) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let s = store.queue(queue).stats().await.expect("stats");
        if s.live() == 0 && s.dead == dead {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "queue {queue} never settled: {s:?}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Each committed row's `n` exactly once, and the rows of each key in
/// ascending `n` in the order they were inserted.
fn assert_once_in_order(rows: &[(String, i64)]) -> BTreeSet<i64> {
    let mut seen = BTreeSet::new();
    let mut last: BTreeMap<&str, i64> = BTreeMap::new();
    for (key, n) in rows {
        assert!(seen.insert(*n), "{n} has two rows: {rows:?}");
        if let Some(prev) = last.insert(key.as_str(), *n) {
            assert!(prev < *n, "key {key}: {n} inserted after {prev}");
        }
    }
    seen
}

/// A transactional handler's business row commits with the job's ack:
/// every job is done and has exactly one row, written by the run that
/// completed it.
pub async fn a_tx_handlers_writes_commit_with_its_ack<H: RuntimeHarness>(h: &H) {
    let store = h.store();
    let business = h.business();
    let q = store.queue("orders");
    let mut ids = BTreeSet::new();
    for i in 0..20u32 {
        ids.insert(q.enqueue(&i).await.expect("enqueue").id());
    }
    let b = business.clone();
    let report = Worker::new(store.clone())
        .queue_tx("orders", move |tx, job: JobCtx<u32>| {
            let b = b.clone();
            Box::pin(async move {
                // Jobs finish in any order: a key of its own each.
                b.insert(tx, &format!("job {}", job.id()), job.id()).await?;
                Ok(())
            })
        })
        .concurrency("orders", 4)
        .run_until(until_settled(store, "orders", 0))
        .await
        .expect("run");
    assert_eq!(
        (report.completed, report.lost_claims),
        (20, 0),
        "{report:?}"
    );
    let rows = business.rows().await.expect("rows");
    assert_eq!(rows.len(), 20, "{rows:?}");
    assert_eq!(assert_once_in_order(&rows), ids);
}

/// A handler that fails (an error, a panic) after writing has its writes
/// rolled back and the job retried: each job has one row, from the run
/// that succeeded; a job that fails for good has none.
pub async fn a_failing_tx_handlers_writes_roll_back_and_the_job_retries<H: RuntimeHarness>(h: &H) {
    let store = h.store();
    let business = h.business();
    let q = store.queue_with("flaky", quick());
    for payload in ["flaky", "panicky", "fine", "doomed"] {
        q.enqueue(&payload).await.expect("enqueue");
    }
    let b = business.clone();
    let report = Worker::new(store.clone())
        .queue_tx("flaky", move |tx, job: JobCtx<String>| {
            let b = b.clone();
            Box::pin(async move {
                let (what, attempt) = (job.payload().as_str(), job.attempt());
                b.insert(tx, what, i64::from(attempt)).await?;
                match (what, attempt) {
                    ("flaky", 1) => Err(JobError::retry("try again")),
                    ("panicky", 1) => panic!("handler panics after writing"),
                    ("doomed", _) => Err(JobError::fail("never")),
                    _ => Ok(()),
                }
            })
        })
        .run_until(until_settled(store, "flaky", 1))
        .await
        .expect("run");
    assert_eq!(
        (
            report.completed,
            report.retried,
            report.dead,
            report.panicked
        ),
        (3, 2, 1, 1),
        "{report:?}"
    );
    let rows: BTreeSet<(String, i64)> = business.rows().await.expect("rows").into_iter().collect();
    let want: BTreeSet<(String, i64)> = [("fine", 1), ("flaky", 2), ("panicky", 2)]
        .into_iter()
        .map(|(k, n)| (k.to_string(), n))
        .collect();
    assert_eq!(rows, want, "only the runs that succeeded wrote");
}

/// A handler whose claim is lost before its commit (taken over by a
/// rival, or lapsed while the handler held the write lock) commits
/// nothing: its row vanishes and the job runs again; in the end the job
/// has exactly one row, from a later run.
pub async fn a_tx_handler_that_lost_its_claim_commits_nothing<H: RuntimeHarness>(h: &H) {
    let store = h.store();
    let business = h.business();
    let opts = alkstore::queue::QueueOpts {
        visibility_timeout: Duration::from_secs(1),
        ..quick()
    };
    let id = store
        .queue_with("lost", opts)
        .enqueue(&0u32)
        .await
        .expect("enqueue")
        .id();
    let engine = store.engine().clone();
    let stolen = Arc::new(AtomicBool::new(false));
    let b = business.clone();
    let report = Worker::new(store.clone())
        .queue_tx("lost", move |tx, job: JobCtx<u32>| {
            let (b, engine, stolen) = (b.clone(), engine.clone(), stolen.clone());
            Box::pin(async move {
                if stolen.swap(true, Ordering::SeqCst) {
                    b.insert(tx, "kept", job.id()).await?;
                    return Ok(());
                }
                b.insert(tx, "lost", job.id()).await?;
                // A rival takes the job: an operator's release, then a
                // claim of its own (which it lets lapse).
                let rival = tokio::spawn({
                    let engine = engine.clone();
                    let id = job.id();
                    async move {
                        engine.job_unclaim(id).await.expect("unclaim");
                        engine
                            .job_claim(JobClaimParams::new("lost", "rival", 1))
                            .await
                            .expect("rival claim");
                    }
                });
                if engine.capabilities().multi_host {
                    rival.await.expect("rival");
                } else {
                    // The rival waits for this transaction's write lock;
                    // meanwhile the claim (1 s) lapses.
                    tokio::time::sleep(Duration::from_millis(2_500)).await;
                }
                Ok(())
            })
        })
        .run_until(async {
            until_rows(business.as_ref(), 1, "the job never committed").await;
            until_settled(store, "lost", 0).await;
        })
        .await
        .expect("run");
    assert!(report.lost_claims >= 1, "{report:?}");
    assert_eq!(report.completed, 1, "{report:?}");
    let rows = business.rows().await.expect("rows");
    assert_eq!(
        rows,
        [("kept".to_string(), id)],
        "the lost run's row vanished"
    );
}

/// With `tx_batch`, a claim's jobs run several to a transaction, one
/// commit acking them all with their rows; a job that fails rolls its
/// batch back, goes the normal way (retried here), and the batch's other
/// jobs run again without it: in the end each job has exactly one row.
pub async fn a_tx_batch_commits_its_jobs_together_and_a_failure_reruns_the_rest<
    H: RuntimeHarness,
>(
    h: &H,
) {
    let store = h.store();
    let business = h.business();
    let q = store.queue_with("batched", quick());
    let mut ids = Vec::new();
    for i in 0..30u32 {
        ids.push(q.enqueue(&i).await.expect("enqueue").id());
    }
    let runs: Arc<Mutex<BTreeMap<u32, u32>>> = Arc::default();
    let (b, r) = (business.clone(), runs.clone());
    let report = Worker::new(store.clone())
        .queue_tx("batched", move |tx, job: JobCtx<u32>| {
            let (b, r) = (b.clone(), r.clone());
            Box::pin(async move {
                let i = *job.payload();
                *r.lock().expect("runs").entry(i).or_default() += 1;
                b.insert(tx, &format!("job {i}"), job.id()).await?;
                if i == 15 && job.attempt() == 1 {
                    return Err(JobError::retry("the sixteenth fails once"));
                }
                Ok(())
            })
        })
        // One claim takes all 30 (in id order): batches 0..10, 10..20, 20..30.
        .concurrency("batched", 30)
        .tx_batch("batched", 10)
        .run_until(until_settled(store, "batched", 0))
        .await
        .expect("run");
    assert_eq!(
        (report.completed, report.retried, report.lost_claims),
        (30, 1, 0),
        "{report:?}"
    );
    let rows = business.rows().await.expect("rows");
    assert_eq!(rows.len(), 30, "{rows:?}");
    assert_eq!(
        assert_once_in_order(&rows),
        ids.iter().copied().collect::<BTreeSet<i64>>()
    );
    // 10..15 ran before the failure and again after the rollback; 15 ran
    // on both its attempts; 16..20 ran only after the rollback.
    let runs = runs.lock().expect("runs").clone();
    for i in 0..30u32 {
        let want = if (10..=15).contains(&i) { 2 } else { 1 };
        assert_eq!(runs.get(&i), Some(&want), "runs of job {i}: {runs:?}");
    }
}

/// Publish `n` events (payload = index, keys `k0..k{keys}`) on `stream`.
async fn publish(store: &alkstore::Store, stream: &str, n: usize, keys: usize) -> Vec<i64> {
    let events = (0..n).map(|i| (Some(format!("k{}", i % keys)), i.to_string().into_bytes()));
    store
        .stream(stream)
        .publish_batch_raw(events)
        .await
        .expect("publish")
}

/// A transactional subscriber commits each batch's rows with the offset at
/// its last event, in transactions of up to `commit_every` events; a
/// failure rolls the whole batch back, then the events before the failing
/// one commit together and the failing one runs alone: every event ends
/// with exactly one row and the offset at the last.
pub async fn a_tx_subscriber_commits_its_writes_with_the_offset<H: RuntimeHarness>(h: &H) {
    let store = h.store();
    let business = h.business();
    let offsets = publish(store, "ledger", 100, 1).await;
    let flaky = offsets[44];
    let runs: Arc<Mutex<BTreeMap<i64, u32>>> = Arc::default();
    let opts = SubscriberOpts {
        batch: 500,
        commit_every: 30,
        commit_interval: Duration::from_secs(3600),
        on_error: OnError::Retry {
            attempts: 3,
            backoff: Duration::from_millis(10),
        },
        ..SubscriberOpts::default()
    };
    let (b, r, waiter) = (business.clone(), runs.clone(), business.clone());
    let report = Subscriber::new(store.clone(), "ledger", "books")
        .opts(opts)
        .handler_tx_raw(move |tx, event: EventCtx<Vec<u8>>| {
            let (b, r) = (b.clone(), r.clone());
            Box::pin(async move {
                let run = {
                    let mut runs = r.lock().expect("runs");
                    let run = runs.entry(event.offset()).or_default();
                    *run += 1;
                    *run
                };
                b.insert(tx, "ledger", event.offset()).await?;
                if event.offset() == flaky && run == 1 {
                    return Err::<(), BoxError>("flaky once".into());
                }
                Ok(())
            })
        })
        .run_until(async move {
            until_rows(waiter.as_ref(), 100, "the subscriber stalled").await;
        })
        .await
        .expect("run");
    assert_eq!(report.handled, 100);
    let rows = business.rows().await.expect("rows");
    assert_eq!(rows.len(), 100, "each event once");
    let want: BTreeSet<i64> = offsets.iter().copied().collect();
    assert_eq!(assert_once_in_order(&rows), want);
    let last = offsets.last().copied();
    assert_eq!(
        store
            .stream("ledger")
            .offset("books")
            .await
            .expect("offset"),
        last
    );
    // Transactions of 30: the one holding the flaky event (offsets[30..60])
    // rolled back; offsets[30..44] ran again together, the flaky one alone.
    let runs = runs.lock().expect("runs").clone();
    for (i, offset) in offsets.iter().enumerate() {
        let want = if (30..=44).contains(&i) { 2 } else { 1 };
        assert_eq!(runs.get(offset), Some(&want), "runs of event {i}: {runs:?}");
    }
}

/// A transactional subscriber whose handler keeps failing on an event
/// stops there: the events before it (in its batch too) are committed
/// with their rows and the offset just before it; the failing event and
/// everything after it left nothing.
pub async fn a_tx_subscriber_stops_at_a_failing_event_with_what_came_before_committed<
    H: RuntimeHarness,
>(
    h: &H,
) {
    let store = h.store();
    let business = h.business();
    let offsets = publish(store, "payments", 10, 1).await;
    let poison = offsets[6];
    let b = business.clone();
    let opts = SubscriberOpts {
        commit_every: 4,
        commit_interval: Duration::from_secs(3600),
        on_error: OnError::Retry {
            attempts: 2,
            backoff: Duration::from_millis(10),
        },
        ..SubscriberOpts::default()
    };
    let err = Subscriber::new(store.clone(), "payments", "books")
        .opts(opts)
        .handler_tx_raw(move |tx, event: EventCtx<Vec<u8>>| {
            let b = b.clone();
            Box::pin(async move {
                b.insert(tx, "payment", event.offset()).await?;
                if event.offset() == poison {
                    return Err::<(), BoxError>("poison".into());
                }
                Ok(())
            })
        })
        .run_until(std::future::pending())
        .await
        .expect_err("the poison event stops it");
    match err {
        alkstore::Error::HandlerFailed {
            offset, attempts, ..
        } => assert_eq!((offset, attempts), (poison, 2)),
        other => panic!("expected a handler error, got {other:?}"),
    }
    let rows: Vec<i64> = business
        .rows()
        .await
        .expect("rows")
        .into_iter()
        .map(|(_, n)| n)
        .collect();
    assert_eq!(
        rows,
        offsets[..6],
        "the events before the poison, once each"
    );
    assert_eq!(
        store
            .stream("payments")
            .offset("books")
            .await
            .expect("offset"),
        Some(offsets[5])
    );
}

/// Two transactional subscribers of one consumer run at once over the
/// same events (a second instance, a paused one that resumes): each
/// transaction commits the offset expecting the one its subscriber last
/// saw saved, so of two transactions over the same events only the first
/// to commit keeps its rows; the other is refused and rolled back, and its
/// subscriber reads on from the offset saved now. Every event ends with
/// exactly one row, and the offset at the last.
pub async fn two_tx_subscribers_of_one_consumer_commit_each_event_once<H: RuntimeHarness>(h: &H) {
    let store = h.store();
    let business = h.business();
    let n = 60;
    let offsets = publish(store, "shared", n, 1).await;
    let opts = SubscriberOpts {
        batch: 500,
        commit_every: 5,
        commit_interval: Duration::from_secs(3600),
        ..SubscriberOpts::default()
    };
    let subscriber = || {
        let (b, waiter) = (business.clone(), business.clone());
        Subscriber::new(store.clone(), "shared", "books")
            .opts(opts.clone())
            .handler_tx_raw(move |tx, event: EventCtx<Vec<u8>>| {
                let b = b.clone();
                Box::pin(async move {
                    b.insert(tx, "shared", event.offset()).await?;
                    // Keep the transaction open a moment, so the two
                    // subscribers' transactions overlap.
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    Ok::<(), BoxError>(())
                })
            })
            .run_until(async move {
                until_rows(waiter.as_ref(), n, "the subscribers stalled").await;
            })
    };
    let (a, b) = tokio::join!(subscriber(), subscriber());
    a.expect("the first subscriber");
    b.expect("the second subscriber");
    let rows = business.rows().await.expect("rows");
    assert_eq!(rows.len(), n, "each event once: {rows:?}");
    let want: BTreeSet<i64> = offsets.iter().copied().collect();
    assert_eq!(assert_once_in_order(&rows), want);
    assert_eq!(
        store
            .stream("shared")
            .offset("books")
            .await
            .expect("offset"),
        offsets.last().copied()
    );
}

/// Short leases, so the group rows see a lost lease in seconds; batches
/// of up to 50 events a transaction.
fn group_opts() -> GroupOpts {
    GroupOpts {
        ttl: Duration::from_millis(1500),
        heartbeat: Duration::from_millis(150),
        batch: 100,
        commit_every: 50,
        commit_interval: Duration::from_secs(3600),
        poll_interval: Duration::from_millis(200),
        on_error: OnError::Retry {
            attempts: 2,
            backoff: Duration::from_millis(10),
        },
    }
}

/// A transactional worker of group `g` on `orders` with `buckets` and
/// `opts`, running `handler` on a task of its own until the returned
/// sender fires (or is dropped).
fn spawn_tx_group<F, E>(
    store: &alkstore::Store,
    buckets: u32,
    opts: GroupOpts,
    handler: F,
) -> (
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<alkstore::Result<alkstore::group::GroupReport>>,
)
where
    F: for<'t> Fn(&'t mut alkstore::Tx, GroupEvent<Vec<u8>>) -> alkstore::TxFuture<'t, (), E>
        + Send
        + Sync
        + 'static,
    E: Into<BoxError> + 'static,
{
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let run = GroupRunner::new(store.clone(), "g", "orders")
        .buckets(buckets)
        .opts(opts)
        .handler_tx_raw(handler)
        .run_until(async move {
            let _ = stop_rx.await;
        });
    (stop_tx, tokio::spawn(run))
}

/// A transactional group handler's rows commit with its bucket's
/// checkpoint, in batches: each event (published before and while the
/// worker runs) has exactly one row, each key's rows are in offset order,
/// and each bucket's checkpoint is at its last event.
pub async fn a_tx_group_commits_its_writes_with_the_checkpoint<H: RuntimeHarness>(h: &H) {
    let store = h.store().clone();
    let business = h.business();
    let mut offsets: BTreeSet<i64> = publish(&store, "orders", 200, 7)
        .await
        .into_iter()
        .collect();
    let b = business.clone();
    let (stop_tx, run) = spawn_tx_group(
        &store,
        4,
        group_opts(),
        move |tx, e: GroupEvent<Vec<u8>>| {
            let b = b.clone();
            Box::pin(async move {
                let key = e.key().map(str::to_owned).unwrap_or_default();
                b.insert(tx, &key, e.offset()).await
            })
        },
    );
    until_rows(business.as_ref(), 200, "the backlog was not handled").await;
    offsets.extend(publish(&store, "orders", 100, 7).await);
    until_rows(business.as_ref(), 300, "the live events were not handled").await;
    let _ = stop_tx.send(());
    let report = run.await.expect("task").expect("run");
    assert_eq!((report.handled, report.lost), (300, 0), "{report:?}");
    let rows = business.rows().await.expect("rows");
    assert_eq!(rows.len(), 300, "each event once");
    assert_eq!(assert_once_in_order(&rows), offsets);
    let status = store.group("g").status().await.expect("status");
    for b in &status.buckets {
        assert_eq!(
            b.lag, 0,
            "bucket {} checkpointed at its last event",
            b.bucket
        );
    }
}

/// A transactional group handler whose lease is lost before its commit (a
/// rival took the bucket, or the lease lapsed while the handler held the
/// write lock) commits nothing: its row vanishes, and the bucket's events
/// run again under a later lease, each ending with exactly one row.
pub async fn a_tx_group_handler_that_lost_its_lease_commits_nothing<H: RuntimeHarness>(h: &H) {
    let store = h.store().clone();
    let business = h.business();
    let offsets: BTreeSet<i64> = publish(&store, "orders", 10, 3).await.into_iter().collect();
    let engine = store.engine().clone();
    let stolen = Arc::new(AtomicBool::new(false));
    let b = business.clone();
    // One event a transaction: the lost lease is found at the commit, not
    // by a later event of the batch.
    let opts = GroupOpts {
        commit_every: 1,
        ..group_opts()
    };
    let (stop_tx, run) = spawn_tx_group(&store, 1, opts, move |tx, e: GroupEvent<Vec<u8>>| {
        let (b, engine, stolen) = (b.clone(), engine.clone(), stolen.clone());
        Box::pin(async move {
            if stolen.swap(true, Ordering::SeqCst) {
                return b.insert(tx, "kept", e.offset()).await;
            }
            b.insert(tx, "lost", e.offset()).await?;
            // A rival takes the bucket: this worker's lease is
            // released, and the rival claims it (and lets it
            // lapse).
            let rival = tokio::spawn({
                let (engine, worker) = (engine.clone(), e.worker().to_string());
                async move {
                    engine
                        .group_release(GroupReleaseParams::new("g", worker, vec![0]))
                        .await
                        .expect("release");
                    engine
                        .group_claim(GroupClaimParams::new(
                            "g",
                            "rival",
                            Duration::from_secs(1),
                            1,
                        ))
                        .await
                        .expect("rival claim");
                }
            });
            if engine.capabilities().multi_host {
                rival.await.expect("rival");
            } else {
                // The rival waits for this transaction's write
                // lock; meanwhile the lease (1.5 s) lapses.
                tokio::time::sleep(Duration::from_millis(2_000)).await;
            }
            Ok(())
        })
    });
    let rows = until_rows(business.as_ref(), 10, "the events never committed").await;
    let _ = stop_tx.send(());
    let report = run.await.expect("task").expect("run");
    assert!(report.lost >= 1, "{report:?}");
    assert!(
        rows.iter().all(|(key, _)| key == "kept"),
        "the lost run's row vanished: {rows:?}"
    );
    assert_eq!(assert_once_in_order(&rows), offsets);
}

/// The rows above, for [`contract_suite!`](crate::contract_suite): list each
/// `pub async fn …<H: RuntimeHarness>` here, next to where it is written.
#[doc(hidden)]
#[macro_export]
macro_rules! __runtime_transactions {
    ($then:path, $args:tt) => {
        $then! { @rows $args runtime::transactions [
            a_tx_handlers_writes_commit_with_its_ack,
            a_failing_tx_handlers_writes_roll_back_and_the_job_retries,
            a_tx_handler_that_lost_its_claim_commits_nothing,
            a_tx_batch_commits_its_jobs_together_and_a_failure_reruns_the_rest,
            a_tx_subscriber_commits_its_writes_with_the_offset,
            a_tx_subscriber_stops_at_a_failing_event_with_what_came_before_committed,
            two_tx_subscribers_of_one_consumer_commit_each_event_once,
            a_tx_group_commits_its_writes_with_the_checkpoint,
            a_tx_group_handler_that_lost_its_lease_commits_nothing,
        ] }
    };
}
