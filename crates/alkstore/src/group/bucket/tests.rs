//! Tests of a bucket's task driven directly: its lease lapsing while it
//! waits, requeued dead letters it must give back, and transactional
//! batches that commit or roll back the checkpoint with their writes.

use std::collections::BTreeMap;
use std::sync::Mutex;

use alkstore_core::group::{
    GroupClaimParams, GroupDeadListParams, GroupDeadRequeueParams, GroupDeadTakeParams,
    GroupEnsureParams,
};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::*;
use crate::group::options::GroupOpts;
use crate::group::shared::lock;
use crate::Store;

/// What the test handler ran: offsets, in order.
type Ran = Arc<Mutex<Vec<i64>>>;

fn event(offset: i64) -> Event {
    Event {
        offset,
        stream: "s".into(),
        key: Some("k".into()),
        payload: b"x".to_vec(),
        created_at: 0,
    }
}

/// The task of worker "w" handling bucket 0 (epoch 1, checkpoint 0) of
/// group "g" on stream "s" with `handler`; checkpoints only when told
/// to (caught up, stopping), not on a timer.
fn spawn_bucket(
    engine: &crate::AnyEngine,
    handler: Handler,
    fed: mpsc::Receiver<Fed>,
    stop: watch::Receiver<bool>,
    valid_until: watch::Receiver<Instant>,
) -> JoinHandle<HandlerEnd> {
    let shared = Arc::new(Shared {
        engine: engine.clone(),
        group: "g".into(),
        stream: "s".into(),
        worker: "w".into(),
        opts: GroupOpts {
            commit_interval: Duration::from_secs(3600),
            ..GroupOpts::default()
        },
        handler,
        fetch: Mutex::new(BTreeMap::new()),
        added: Notify::new(),
    });
    let lease = BucketLease {
        bucket: 0,
        epoch: 1,
        checkpoint: 0,
        expires_at_ms: 0,
    };
    tokio::spawn(handle_bucket(shared, lease, fed, stop, valid_until))
}

/// A bucket handler task of worker "w" on bucket 0 (epoch 1) over a
/// fresh SQLite store, its handler recording what it ran; the test
/// controls its queue, its stop and its lease's `valid_until`.
struct Rig {
    _dir: tempfile::TempDir,
    ran: Ran,
    handled: Arc<Notify>,
    queue: mpsc::Sender<Fed>,
    _stop: watch::Sender<bool>,
    valid: watch::Sender<Instant>,
    task: JoinHandle<HandlerEnd>,
    engine: crate::AnyEngine,
}

async fn rig() -> Rig {
    let dir = tempfile::tempdir().expect("tmp");
    let url = format!("sqlite://{}", dir.path().join("t.db").display());
    let store = Store::open(&url).await.expect("open");
    let ran: Ran = Arc::default();
    let handled = Arc::new(Notify::new());
    let handler = {
        let (ran, handled) = (ran.clone(), handled.clone());
        Handler::Plain(Arc::new(move |e: Delivery| {
            lock(&ran).push(e.event.offset);
            handled.notify_one();
            Box::pin(std::future::ready(Ok(())))
        }))
    };
    let (valid, valid_rx) = watch::channel(Instant::now() + Duration::from_secs(3600));
    let engine = store.engine().clone();
    let (queue, fed) = mpsc::channel(8);
    let (stop, stop_rx) = watch::channel(false);
    let task = spawn_bucket(&engine, handler, fed, stop_rx, valid_rx);
    Rig {
        _dir: dir,
        ran,
        handled,
        queue,
        _stop: stop,
        valid,
        task,
        engine,
    }
}

impl Rig {
    /// Hand the task event 1 and wait until it ran: the task is then
    /// parked on its queue again (one thread: it ran on until it
    /// waited), its lease valid.
    async fn parked_after_one(&self) {
        self.queue.send(Fed::Event(event(1))).await.expect("send");
        self.handled.notified().await;
        assert_eq!(*lock(&self.ran), [1]);
    }

    /// The lease lapses while the task waits (the process was frozen
    /// past its TTL, or its renewals failed).
    fn lapse(&self) {
        self.valid.send_replace(Instant::now());
    }

    /// Wait for the task to end; what its handler ran.
    async fn end(self) -> Vec<i64> {
        let end = self.task.await.expect("task");
        assert_eq!(end.handled, 1, "{end:?}");
        let ran = lock(&self.ran).clone();
        ran
    }
}

/// An event queued after the lease's `valid_until` passed is not
/// handled: the task stops, dropping it (the next owner handles it).
#[tokio::test]
async fn a_lapsed_lease_handles_no_queued_event() {
    let rig = rig().await;
    rig.parked_after_one().await;
    rig.lapse();
    rig.queue.send(Fed::Event(event(2))).await.expect("send");
    assert_eq!(rig.end().await, [1]);
}

/// Nor does it run a requeued dead letter handed to it after that; it
/// marks it requeued again (taking it cleared the mark), so the
/// bucket's next holder runs it and the operator's requeue holds.
#[tokio::test]
async fn a_lapsed_lease_runs_no_requeued_dead_letter_and_gives_it_back() {
    let rig = rig().await;
    let e = rig.engine.clone();
    // A real dead letter of bucket 0 under worker "w"'s epoch 1 (the
    // rig's lease), requeued by an operator and taken by the fetcher.
    e.group_ensure(GroupEnsureParams::new("g", "s", 1))
        .await
        .expect("ensure");
    let leases = e
        .group_claim(GroupClaimParams::new("g", "w", Duration::from_secs(60), 1))
        .await
        .expect("claim");
    assert_eq!(leases.len(), 1);
    e.group_dead_add(GroupDeadAddParams::new(
        "g",
        0,
        "w",
        leases[0].epoch,
        event(2),
        "e",
        1,
    ))
    .await
    .expect("dead");
    assert_eq!(
        e.group_dead_requeue(GroupDeadRequeueParams::new("g", vec![2]))
            .await
            .expect("requeue"),
        1
    );
    let mut taken = e
        .group_dead_take(GroupDeadTakeParams::new("g", "w", 10))
        .await
        .expect("take");
    assert_eq!(taken.len(), 1);
    rig.parked_after_one().await;
    rig.lapse();
    rig.queue
        .send(Fed::Redeliver(taken.remove(0)))
        .await
        .expect("send");
    assert_eq!(rig.end().await, [1]);
    let dead = e
        .group_dead_list(GroupDeadListParams::new("g", 0, 10))
        .await
        .expect("list");
    assert_eq!(dead.len(), 1);
    assert!(
        dead[0].requeued,
        "marked again for the next holder: {dead:?}"
    );
}

/// A transactional bucket task of worker "w" on bucket 0 of group "g"
/// over stream "s", holding a real lease (epoch 1), with `n` events of
/// the stream already queued for it when it starts. Its handler
/// publishes each event's offset to stream "out" in the transaction,
/// and notes the bucket's committed checkpoint at each call; on the
/// last event it first runs `at_last`.
struct TxRig {
    _dir: tempfile::TempDir,
    engine: crate::AnyEngine,
    seen: Arc<Mutex<Vec<i64>>>,
    stop: watch::Sender<bool>,
    task: JoinHandle<HandlerEnd>,
    _queue: mpsc::Sender<Fed>,
}

async fn tx_rig(
    n: usize,
    at_last: impl Fn() + Send + Sync + 'static,
    valid_rx: watch::Receiver<Instant>,
) -> (TxRig, Vec<i64>) {
    let dir = tempfile::tempdir().expect("tmp");
    let url = format!("sqlite://{}", dir.path().join("t.db").display());
    let store = Store::open(&url).await.expect("open");
    let engine = store.engine().clone();
    let offsets = store
        .stream("s")
        .publish_batch_raw((0..n).map(|i| (Some("k".to_string()), i.to_string().into_bytes())))
        .await
        .expect("publish");
    engine
        .group_ensure(GroupEnsureParams::new("g", "s", 1))
        .await
        .expect("ensure");
    let leases = engine
        .group_claim(GroupClaimParams::new(
            "g",
            "w",
            Duration::from_secs(3600),
            1,
        ))
        .await
        .expect("claim");
    assert_eq!(leases.iter().map(|l| l.epoch).collect::<Vec<_>>(), [1]);
    let seen: Arc<Mutex<Vec<i64>>> = Arc::default();
    let last = *offsets.last().expect("published");
    let handler = {
        let (engine, seen, at_last) = (engine.clone(), seen.clone(), Arc::new(at_last));
        Handler::Tx(Arc::new(move |tx: &mut Tx, e: Delivery| {
            let (engine, seen, at_last) = (engine.clone(), seen.clone(), at_last.clone());
            Box::pin(async move {
                let status = engine.group_status("g").await?;
                lock(&seen).push(status.buckets[0].checkpoint);
                let out = alkstore_core::stream::NewEvent::new(
                    "out",
                    e.event.offset.to_string().into_bytes(),
                );
                tx.stream_publish(vec![out]).await?;
                if e.event.offset == last {
                    at_last();
                }
                Ok(())
            })
        }))
    };
    let (queue, fed) = mpsc::channel(n.max(1));
    let stream = store.stream("s");
    for e in stream.read(0, 1_000).await.expect("read") {
        queue.send(Fed::Event(e)).await.expect("queue");
    }
    let (stop, stop_rx) = watch::channel(false);
    let task = spawn_bucket(&engine, handler, fed, stop_rx, valid_rx);
    (
        TxRig {
            _dir: dir,
            engine,
            seen,
            stop,
            task,
            _queue: queue,
        },
        offsets,
    )
}

impl TxRig {
    /// Wait for the task to end; its end, the committed checkpoint,
    /// and the offsets on "out".
    async fn finish(self) -> (HandlerEnd, i64, Vec<i64>) {
        use alkstore_core::StreamEngine;
        let end = self.task.await.expect("task");
        drop(self.stop);
        let checkpoint = self.engine.group_status("g").await.expect("status").buckets[0].checkpoint;
        let out = self
            .engine
            .stream_read(alkstore_core::stream::StreamReadParams::new("out", 0, 100))
            .await
            .expect("read out")
            .iter()
            .map(|e| String::from_utf8_lossy(&e.payload).parse().expect("offset"))
            .collect();
        (end, checkpoint, out)
    }
}

/// Events already queued when the bucket's task starts run in one
/// transaction: every call sees the checkpoint as it was before the
/// batch, and one commit moves it to the last event with every write.
#[tokio::test]
async fn queued_events_run_in_one_transaction_that_commits_the_checkpoint() {
    let (_valid, valid_rx) = watch::channel(Instant::now() + Duration::from_secs(3600));
    let (rig, offsets) = tx_rig(5, || {}, valid_rx).await;
    // Stop once the batch committed: the task then checkpoints (a
    // no-op) and ends.
    let deadline = Instant::now() + Duration::from_secs(30);
    while lock(&rig.seen).len() < 5 {
        assert!(Instant::now() < deadline, "the batch never ran");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    loop {
        let status = rig.engine.group_status("g").await.expect("status");
        if status.buckets[0].checkpoint == offsets[4] {
            break;
        }
        assert!(Instant::now() < deadline, "the batch never committed");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    rig.stop.send_replace(true);
    let seen = lock(&rig.seen).clone();
    let (end, checkpoint, out) = rig.finish().await;
    assert_eq!(seen, [0; 5], "every call inside the one transaction");
    assert_eq!((end.handled, end.lost), (5, false));
    assert_eq!(checkpoint, offsets[4]);
    assert_eq!(out, offsets, "every write committed with it");
}

/// A lease that lapses (by this host's clock) while the batch runs,
/// found at the commit: the transaction rolls back, the checkpoint and
/// the handler's writes with it, and the task ends as fenced.
#[tokio::test]
async fn a_lease_that_lapses_before_the_commit_commits_nothing() {
    let (valid, valid_rx) = watch::channel(Instant::now() + Duration::from_secs(3600));
    let valid = Arc::new(valid);
    let lapse = {
        let valid = valid.clone();
        move || {
            valid.send_replace(Instant::now());
        }
    };
    let (rig, _) = tx_rig(5, lapse, valid_rx).await;
    let (end, checkpoint, out) = rig.finish().await;
    assert_eq!((end.handled, end.lost), (0, true), "{end:?}");
    assert_eq!(checkpoint, 0, "the checkpoint rolled back");
    assert!(out.is_empty(), "the handler's writes rolled back: {out:?}");
}
