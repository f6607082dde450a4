//! Consumer-group workers: buckets spread over live workers, a joiner gets
//! its share, a dead worker's buckets move after the TTL, failing events go
//! to dead letters and the bucket goes on.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use alkstore::group::{GroupEvent, GroupOpts, GroupReport, GroupRunner};
use alkstore::prelude::GroupEngine;
use alkstore::stream::OnError;
use alkstore_core::Engine;
use tokio::sync::Notify;

use super::support::HeldBack;
use crate::RuntimeHarness;

/// Short leases, so the rows see failover and rebalancing in seconds.
fn quick() -> GroupOpts {
    GroupOpts {
        ttl: Duration::from_millis(1500),
        heartbeat: Duration::from_millis(150),
        batch: 50,
        commit_every: 20,
        commit_interval: Duration::from_millis(100),
        poll_interval: Duration::from_millis(200),
        on_error: OnError::Retry {
            attempts: 2,
            backoff: Duration::from_millis(10),
        },
    }
}

/// One handled event: who handled it, under which lease.
#[derive(Debug, Clone)]
struct Handled {
    worker: String,
    bucket: u32,
    epoch: i64,
    offset: i64,
    key: Option<String>,
}

/// Everything every worker of a row handled.
#[derive(Clone, Default)]
struct Log {
    handled: Arc<Mutex<Vec<Handled>>>,
    notify: Arc<Notify>,
}

impl Log {
    /// A handler that records each event, failing those whose payload is
    /// `"poison"`.
    fn handler(
        &self,
        name: &'static str,
    ) -> impl Fn(GroupEvent<Vec<u8>>) -> std::future::Ready<Result<(), std::io::Error>>
           + Send
           + Sync
           + 'static {
        let log = self.clone();
        move |e: GroupEvent<Vec<u8>>| {
            if e.payload() == b"poison" {
                return std::future::ready(Err(std::io::Error::other("poison pill")));
            }
            log.handled.lock().expect("log").push(Handled {
                worker: name.to_string(),
                bucket: e.bucket(),
                epoch: e.epoch(),
                offset: e.offset(),
                key: e.key().map(str::to_owned),
            });
            log.notify.notify_waiters();
            std::future::ready(Ok(()))
        }
    }

    fn all(&self) -> Vec<Handled> {
        self.handled.lock().expect("log").clone()
    }

    /// Resolves once every offset in `offsets` was handled (fails after 30 s).
    async fn until_all(&self, offsets: &BTreeSet<i64>) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let seen: BTreeSet<i64> = self.all().iter().map(|h| h.offset).collect();
            if offsets.is_subset(&seen) {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "timed out: {} of {} events handled",
                offsets.intersection(&seen).count(),
                offsets.len()
            );
            tokio::select! {
                () = self.notify.notified() => {}
                () = tokio::time::sleep(Duration::from_millis(20)) => {}
            }
        }
    }
}

/// Publish `n` events with keys `k0..k{keys}` on stream `orders`; their
/// offsets.
async fn publish(store: &alkstore::Store, from: usize, n: usize, keys: usize) -> Vec<i64> {
    let events =
        (from..from + n).map(|i| (Some(format!("k{}", i % keys)), i.to_string().into_bytes()));
    store
        .stream("orders")
        .publish_batch_raw(events)
        .await
        .expect("publish")
}

/// Wait until `worker`'s bucket count in the group satisfies `ok`.
async fn until_owned(
    store: &alkstore::Store,
    what: &str,
    ok: impl Fn(&BTreeMap<String, usize>) -> bool,
) -> BTreeMap<String, usize> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let mut owned: BTreeMap<String, usize> = BTreeMap::new();
        if let Ok(status) = store.group("g").status().await {
            for b in status.buckets {
                if let (Some(owner), false) = (b.owner, b.expired) {
                    *owned.entry(owner).or_default() += 1;
                }
            }
        }
        if ok(&owned) {
            return owned;
        }
        assert!(tokio::time::Instant::now() < deadline, "{what}: {owned:?}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// A worker of group `g` on `orders` with `buckets` and `opts`, running
/// `handler` on a task of its own until the returned sender fires (or is
/// dropped).
fn spawn_worker<F, Fut, E>(
    store: &alkstore::Store,
    buckets: u32,
    opts: GroupOpts,
    handler: F,
) -> (
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<alkstore::Result<GroupReport>>,
)
where
    F: Fn(GroupEvent<Vec<u8>>) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<(), E>> + Send + 'static,
    E: Into<alkstore_core::BoxError> + Send + 'static,
{
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let run = GroupRunner::new(store.clone(), "g", "orders")
        .buckets(buckets)
        .opts(opts)
        .handler_raw(handler)
        .run_until(async move {
            let _ = stop_rx.await;
        });
    (stop_tx, tokio::spawn(run))
}

/// Each key's offsets, per run of one worker on one bucket lease, must
/// grow: order within a key holds inside every owner's run.
fn assert_key_order(handled: &[Handled]) {
    let mut last: BTreeMap<(String, u32, i64, Option<String>), i64> = BTreeMap::new();
    for h in handled {
        let run = (h.worker.clone(), h.bucket, h.epoch, h.key.clone());
        if let Some(prev) = last.insert(run, h.offset) {
            assert!(
                prev < h.offset,
                "{h:?} after offset {prev} of the same key and lease"
            );
        }
    }
}

/// One worker alone takes every bucket, handles every event (published
/// before and while it runs) exactly once in key order, and on shutdown
/// checkpoints each bucket at its last event and gives them all back.
pub async fn a_group_worker_handles_every_event_in_key_order<H: RuntimeHarness>(h: &H) {
    let store = h.store().clone();
    let mut offsets: BTreeSet<i64> = publish(&store, 0, 100, 7).await.into_iter().collect();
    let log = Log::default();
    let (stop_tx, run) = spawn_worker(&store, 4, quick(), log.handler("a"));
    offsets.extend(publish(&store, 100, 100, 7).await);
    log.until_all(&offsets).await;
    let _ = stop_tx.send(());
    let report: GroupReport = run.await.expect("task").expect("run");
    assert_eq!(report.handled, 200);
    assert_eq!(
        (report.claimed, report.lost, report.dead_lettered),
        (4, 0, 0)
    );
    let handled = log.all();
    assert_eq!(handled.len(), 200, "each event once in a clean run");
    assert_key_order(&handled);
    let status = store.group("g").status().await.expect("status");
    for b in &status.buckets {
        assert_eq!(b.owner, None, "released on shutdown");
        let last = handled
            .iter()
            .filter(|x| x.bucket == b.bucket)
            .map(|x| x.offset)
            .max()
            .unwrap_or(0);
        assert_eq!((b.checkpoint, b.lag), (last, 0), "bucket {}", b.bucket);
    }
}

/// A worker that starts while the stream's newest events are held back (an
/// older transaction still open: PostgreSQL) handles them soon after that
/// transaction ends, though nothing hints it then: the hold-up ends in a
/// rollback, the events' own hints went out before the worker started, and
/// the safety poll is an hour. (On SQLite the later publish waits for the
/// held transaction's write lock, so the row holds trivially.)
pub async fn a_group_worker_reads_events_held_back_when_it_began<H: RuntimeHarness>(h: &H) {
    let store = h.store().clone();
    let held = HeldBack::begin(h, "orders", {
        let store = store.clone();
        async move { publish(&store, 0, 6, 3).await }
    })
    .await;
    let log = Log::default();
    let (stop_tx, run) = spawn_worker(
        &store,
        2,
        GroupOpts {
            poll_interval: Duration::from_secs(3600),
            ..quick()
        },
        log.handler("a"),
    );
    if store.engine().capabilities().multi_host {
        // (On SQLite taking buckets waits for the held transaction's lock.)
        until_owned(&store, "the worker takes both buckets", |o| {
            o.values().sum::<usize>() == 2
        })
        .await;
    }
    let offsets: BTreeSet<i64> = held.release().await.into_iter().collect();
    log.until_all(&offsets).await;
    let _ = stop_tx.send(());
    let report: GroupReport = run.await.expect("task").expect("run");
    assert_eq!(report.handled, 6);
    assert_eq!(log.all().len(), 6, "each event once");
}

/// A second worker joining gets its share without anyone dying (the first
/// releases its surplus); when one stops without leaving (its process
/// gone), its buckets move to the other once the leases lapse. Every event
/// is handled at least once, and no bucket lease (bucket, epoch) is ever
/// used by two workers.
pub async fn group_buckets_rebalance_on_join_and_fail_over_on_death<H: RuntimeHarness>(h: &H) {
    let store = h.store().clone();
    let mut offsets: BTreeSet<i64> = publish(&store, 0, 200, 11).await.into_iter().collect();
    let log = Log::default();
    let a = tokio::spawn(
        GroupRunner::new(store.clone(), "g", "orders")
            .buckets(4)
            .opts(quick())
            .worker_id("a")
            .handler_raw(log.handler("a"))
            .run_until(std::future::pending::<()>()),
    );
    until_owned(&store, "a takes all four", |o| o.get("a") == Some(&4)).await;
    let (stop_b, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let b = tokio::spawn(
        GroupRunner::new(store.clone(), "g", "orders")
            .buckets(4)
            .opts(quick())
            .worker_id("b")
            .handler_raw(log.handler("b"))
            .run_until(async move {
                let _ = stop_rx.await;
            }),
    );
    until_owned(&store, "b gets its share", |o| {
        o.get("a") == Some(&2) && o.get("b") == Some(&2)
    })
    .await;
    offsets.extend(publish(&store, 200, 100, 11).await);
    log.until_all(&offsets).await;

    // a dies: its coordinator is gone, nobody renews or releases for it.
    a.abort();
    let died = tokio::time::Instant::now();
    until_owned(&store, "b takes over", |o| {
        o.get("b") == Some(&4) && o.len() == 1
    })
    .await;
    let moved = died.elapsed();
    let opts = quick();
    assert!(
        moved <= opts.ttl + opts.heartbeat * 3,
        "failover took {moved:?} (ttl {:?}, heartbeat {:?})",
        opts.ttl,
        opts.heartbeat
    );
    offsets.extend(publish(&store, 300, 100, 11).await);
    log.until_all(&offsets).await;
    let _ = stop_b.send(());
    b.await.expect("task").expect("b");

    let handled = log.all();
    assert_key_order(&handled);
    let mut lease_users: BTreeMap<(u32, i64), BTreeSet<String>> = BTreeMap::new();
    for x in &handled {
        lease_users
            .entry((x.bucket, x.epoch))
            .or_default()
            .insert(x.worker.clone());
    }
    assert!(
        lease_users.values().all(|w| w.len() == 1),
        "a lease used by two workers: {lease_users:?}"
    );
}

/// An event whose handler keeps failing goes, after the policy's runs, to
/// the group's dead letters with its error, and the bucket goes on with the
/// events after it.
pub async fn failing_group_events_are_dead_lettered_and_the_bucket_goes_on<H: RuntimeHarness>(
    h: &H,
) {
    let store = h.store().clone();
    let stream = store.stream("orders");
    let before = stream
        .publish_raw(Some("k"), b"first".to_vec())
        .await
        .expect("publish");
    let poison = stream
        .publish_raw(Some("k"), b"poison".to_vec())
        .await
        .expect("publish");
    let after = stream
        .publish_raw(Some("k"), b"after".to_vec())
        .await
        .expect("publish");
    let log = Log::default();
    let (stop_tx, run) = spawn_worker(&store, 2, quick(), log.handler("a"));
    log.until_all(&[before, after].into_iter().collect()).await;
    let _ = stop_tx.send(());
    let report = run.await.expect("task").expect("run");
    assert_eq!((report.handled, report.dead_lettered), (2, 1));
    let order: Vec<i64> = log.all().iter().map(|x| x.offset).collect();
    assert_eq!(order, [before, after]);
    let dead = store.group("g").dead_letters(0, 10).await.expect("dead");
    assert_eq!(dead.len(), 1);
    assert_eq!(
        (dead[0].offset, dead[0].payload.as_slice(), dead[0].attempts),
        (poison, b"poison".as_slice(), 2)
    );
    assert!(dead[0].error.contains("poison pill"), "{}", dead[0].error);
    let status = store.group("g").status().await.expect("status");
    let bucket = alkstore::group::bucket_of(b"k", 2) as usize;
    assert_eq!(
        status.buckets[bucket].checkpoint, after,
        "past the dead letter"
    );
}

/// A dead letter requeued once its cause is fixed runs again on the
/// bucket's holder, and is deleted when it succeeds.
pub async fn requeued_group_dead_letters_run_again<H: RuntimeHarness>(h: &H) {
    let store = h.store().clone();
    let poison = store
        .stream("orders")
        .publish_raw(Some("k"), b"poison".to_vec())
        .await
        .expect("publish");
    let fixed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let ran = Log::default();
    let handler = {
        let (fixed, ran) = (fixed.clone(), ran.clone());
        move |e: GroupEvent<Vec<u8>>| {
            let ok = fixed.load(std::sync::atomic::Ordering::SeqCst);
            if ok {
                ran.handled.lock().expect("log").push(Handled {
                    worker: "a".into(),
                    bucket: e.bucket(),
                    epoch: e.epoch(),
                    offset: e.offset(),
                    key: e.key().map(str::to_owned),
                });
                ran.notify.notify_waiters();
            }
            std::future::ready(if ok {
                Ok(())
            } else {
                Err(std::io::Error::other("not yet"))
            })
        }
    };
    let (stop_tx, run) = spawn_worker(&store, 2, quick(), handler);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while store
        .group("g")
        .dead_letters(0, 10)
        .await
        .map_or(0, |d| d.len())
        == 0
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "never dead-lettered"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    fixed.store(true, std::sync::atomic::Ordering::SeqCst);
    let requeued = store
        .engine()
        .group_dead_requeue(alkstore::group::GroupDeadRequeueParams::new(
            "g",
            vec![poison],
        ))
        .await
        .expect("requeue");
    assert_eq!(requeued, 1);
    ran.until_all(&[poison].into_iter().collect()).await;
    while !store
        .group("g")
        .dead_letters(0, 10)
        .await
        .expect("dead")
        .is_empty()
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the dead letter stayed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let _ = stop_tx.send(());
    run.await.expect("task").expect("run");
}

/// Bad options are refused before anything is written: a heartbeat not
/// below the TTL, a TTL over the cap, a batch of 0 or above the page cap
/// (every read would be refused, the worker's buckets stalled), a poll
/// interval or retry count of 0, an empty worker id, a bucket count of 0,
/// and another N for an existing group.
pub async fn bad_group_options_are_refused<H: RuntimeHarness>(h: &H) {
    let store = h.store().clone();
    let log = Log::default();
    // (options, with an empty worker id, what the error names)
    let bad: [(GroupOpts, bool, &str); 7] = [
        (
            GroupOpts {
                heartbeat: Duration::from_secs(30),
                ..GroupOpts::default()
            },
            false,
            "heartbeat",
        ),
        (
            GroupOpts {
                ttl: Duration::from_secs(2 * 86_400),
                ..GroupOpts::default()
            },
            false,
            "ttl",
        ),
        (
            GroupOpts {
                batch: 0,
                ..GroupOpts::default()
            },
            false,
            "batch",
        ),
        (
            GroupOpts {
                batch: 20_000,
                ..GroupOpts::default()
            },
            false,
            "batch",
        ),
        (
            GroupOpts {
                poll_interval: Duration::ZERO,
                ..GroupOpts::default()
            },
            false,
            "poll_interval",
        ),
        (
            GroupOpts {
                on_error: OnError::Retry {
                    attempts: 0,
                    backoff: Duration::ZERO,
                },
                ..GroupOpts::default()
            },
            false,
            "attempts",
        ),
        (GroupOpts::default(), true, "worker id"),
    ];
    for (opts, empty_worker, what) in bad {
        let mut runner = GroupRunner::new(store.clone(), "g", "orders").opts(opts);
        if empty_worker {
            runner = runner.worker_id("");
        }
        let err = runner
            .handler_raw(log.handler("a"))
            .run_until(std::future::ready(()))
            .await
            .expect_err(what);
        assert!(err.to_string().contains(what), "{what}: {err}");
        assert!(
            store.group("g").status().await.is_err(),
            "{what}: nothing created"
        );
    }
    let err = GroupRunner::new(store.clone(), "g", "orders")
        .buckets(0)
        .handler_raw(log.handler("a"))
        .run_until(std::future::ready(()))
        .await
        .expect_err("no buckets");
    assert!(err.to_string().contains("bucket count"), "{err}");
    assert!(store.group("g").status().await.is_err(), "nothing created");
    GroupRunner::new(store.clone(), "g", "orders")
        .buckets(4)
        .handler_raw(log.handler("a"))
        .run_until(std::future::ready(()))
        .await
        .expect("a clean start and stop");
    let err = GroupRunner::new(store.clone(), "g", "orders")
        .buckets(8)
        .handler_raw(log.handler("a"))
        .run_until(std::future::ready(()))
        .await
        .expect_err("another N");
    assert!(err.to_string().contains("4 buckets"), "{err}");
}

/// What the typed row publishes.
#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct Item {
    n: i64,
}

/// A typed handler gets each payload decoded, with its bucket and lease; a
/// payload that does not decode is the handler's failure: after the
/// policy's runs it goes to the dead letters, and the bucket goes on.
pub async fn group_handlers_get_decoded_payloads_and_undecodable_ones_are_dead_lettered<
    H: RuntimeHarness,
>(
    h: &H,
) {
    let store = h.store().clone();
    let stream = store.stream("orders");
    let first = stream
        .publish(Some("k"), &Item { n: 1 })
        .await
        .expect("publish");
    let bad = stream
        .publish_raw(Some("k"), b"not json".to_vec())
        .await
        .expect("publish");
    let last = stream
        .publish(Some("k"), &Item { n: 3 })
        .await
        .expect("publish");
    let got = Arc::new(Mutex::new(Vec::new()));
    let notify = Arc::new(Notify::new());
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let run = GroupRunner::new(store.clone(), "g", "orders")
        .buckets(2)
        .opts(quick())
        .handler({
            let (got, notify) = (got.clone(), notify.clone());
            move |e: GroupEvent<Item>| {
                let bucket = alkstore::group::bucket_of(b"k", 2);
                assert_eq!(
                    (e.bucket(), e.key(), e.stream()),
                    (bucket, Some("k"), "orders")
                );
                assert!(e.epoch() > 0);
                got.lock()
                    .expect("got")
                    .push((e.offset(), e.into_payload()));
                notify.notify_waiters();
                std::future::ready(Ok::<(), std::io::Error>(()))
            }
        })
        .run_until(async move {
            let _ = stop_rx.await;
        });
    let run = tokio::spawn(run);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while got.lock().expect("got").len() < 2 {
        assert!(tokio::time::Instant::now() < deadline, "not all handled");
        tokio::select! {
            () = notify.notified() => {}
            () = tokio::time::sleep(Duration::from_millis(20)) => {}
        }
    }
    let _ = stop_tx.send(());
    let report = run.await.expect("task").expect("run");
    assert_eq!((report.handled, report.dead_lettered), (2, 1));
    assert_eq!(
        *got.lock().expect("got"),
        [(first, Item { n: 1 }), (last, Item { n: 3 })]
    );
    let dead = store.group("g").dead_letters(0, 10).await.expect("dead");
    assert_eq!(dead.len(), 1);
    assert_eq!((dead[0].offset, dead[0].attempts), (bad, 2));
    assert!(
        dead[0].error.contains("does not decode"),
        "{}",
        dead[0].error
    );
}

/// The rows above, for [`contract_suite!`](crate::contract_suite).
#[doc(hidden)]
#[macro_export]
macro_rules! __runtime_groups {
    ($then:path, $args:tt) => {
        $then! { @rows $args runtime::groups [
            a_group_worker_handles_every_event_in_key_order,
            a_group_worker_reads_events_held_back_when_it_began,
            group_buckets_rebalance_on_join_and_fail_over_on_death,
            failing_group_events_are_dead_lettered_and_the_bucket_goes_on,
            bad_group_options_are_refused,
            requeued_group_dead_letters_run_again,
            group_handlers_get_decoded_payloads_and_undecodable_ones_are_dead_lettered,
        ] }
    };
}
