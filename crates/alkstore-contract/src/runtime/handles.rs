//! The handles `Store` hands out for schedules, rate limits, job results
//! and notification channels: each does what the engine call beneath it
//! does, by name, with its input checked the same way.

use std::time::Duration;

use alkstore::schedule::ScheduleOpts;
use alkstore::ErrorKind;

use crate::RuntimeHarness;

/// A schedule handle registers, looks up, pauses, resumes and removes its
/// schedule; a bad spec is refused and writes nothing; a missing one is
/// `NotFound` to pause and `false` to remove.
pub async fn a_schedule_handle_manages_its_schedule<H: RuntimeHarness>(h: &H) {
    let store = h.store();
    let nightly = store.schedule("nightly");
    assert_eq!(nightly.name(), "nightly");
    assert!(nightly.get().await.expect("get").is_none());
    let bad = nightly
        .set("61 * * * *", "reports")
        .await
        .expect_err("minute 61");
    assert_eq!(bad.kind(), ErrorKind::InvalidInput);
    assert!(
        nightly.get().await.expect("get").is_none(),
        "nothing written"
    );

    let opts = ScheduleOpts::default()
        .tz("Europe/Paris")
        .priority(7)
        .max_catch_up(2)
        .json(&serde_json::json!({"kind": "nightly"}))
        .expect("json");
    let set = nightly
        .set_with("0 2 * * *", "reports", opts)
        .await
        .expect("set");
    assert_eq!(
        (set.spec.as_str(), set.queue.as_str(), set.tz.as_deref()),
        ("0 2 * * *", "reports", Some("Europe/Paris"))
    );
    assert_eq!((set.priority, set.max_catch_up, set.paused), (7, 2, false));
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&set.payload).expect("payload"),
        serde_json::json!({"kind": "nightly"})
    );
    assert_eq!(nightly.get().await.expect("get"), Some(set.clone()));
    let listed = store.schedules().await.expect("list");
    assert_eq!(
        listed.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
        ["nightly"]
    );

    assert!(nightly.pause().await.expect("pause").paused);
    assert!(!nightly.resume().await.expect("resume").paused);
    assert!(nightly.remove().await.expect("remove"));
    assert!(!nightly.remove().await.expect("gone"));
    let missing = nightly.pause().await.expect_err("none to pause");
    assert_eq!(missing.kind(), ErrorKind::NotFound);
}

/// A rate-limit handle admits its limit per window and refuses the next
/// call; a zero limit is refused as input.
pub async fn a_rate_handle_admits_its_limit_per_window<H: RuntimeHarness>(h: &H) {
    let store = h.store();
    // A window long enough that the test cannot straddle two.
    let smtp = store.rate("smtp", 3, Duration::from_secs(3_600));
    assert_eq!(smtp.name(), "smtp");
    let mut admitted = Vec::new();
    for _ in 0..4 {
        admitted.push(smtp.acquire().await.expect("acquire").admitted);
    }
    if admitted[..3].iter().all(|a| *a) {
        assert_eq!(admitted, [true, true, true, false]);
    } else {
        // The window turned over between the calls (an hour boundary):
        // the new window admits again, and never more than 3 in a row.
        assert!(admitted.iter().filter(|a| **a).count() >= 3, "{admitted:?}");
    }
    let zero = store
        .rate("smtp", 0, Duration::from_secs(1))
        .acquire()
        .await
        .expect_err("zero limit");
    assert_eq!(zero.kind(), ErrorKind::InvalidInput);
}

/// The results handle reads a saved result and wakes a waiter when one is
/// saved; a job without one reads `None`, and a wait for it times out.
pub async fn the_results_handle_reads_and_awaits_results<H: RuntimeHarness>(h: &H) {
    use alkstore::prelude::ResultEngine;
    use alkstore::results::ResultSaveParams;
    let store = h.store();
    let results = store.results();
    assert!(results.get(41).await.expect("get").is_none());
    assert!(results
        .wait(41, Duration::from_millis(50))
        .await
        .expect("wait")
        .is_none());
    let waiter = {
        let results = results.clone();
        tokio::spawn(async move { results.wait(42, Duration::from_secs(30)).await })
    };
    // Most likely saved while the waiter waits (it listens, then looks).
    tokio::time::sleep(Duration::from_millis(50)).await;
    store
        .engine()
        .result_save(ResultSaveParams::new(42, b"done".to_vec()))
        .await
        .expect("save");
    let got = waiter.await.expect("task").expect("wait").expect("saved");
    assert_eq!((got.job_id, got.value.as_slice()), (42, b"done".as_slice()));
    assert_eq!(results.get(42).await.expect("get"), Some(got));
}

/// A channel handle's listener gets what the handle sends, in order; an
/// empty channel name is refused.
pub async fn a_channel_handle_sends_to_its_listeners<H: RuntimeHarness>(h: &H) {
    let store = h.store();
    let orders = store.channel("orders");
    assert_eq!(orders.name(), "orders");
    let mut listener = orders.listen().await.expect("listen");
    orders.notify("1 placed").await.expect("notify");
    orders.notify("2 placed").await.expect("notify");
    for want in ["1 placed", "2 placed"] {
        let n = tokio::time::timeout(Duration::from_secs(10), listener.recv())
            .await
            .expect("in time")
            .expect("recv");
        assert_eq!((n.channel.as_str(), n.payload.as_str()), ("orders", want));
    }
    let bad = store.channel("").notify("x").await.expect_err("empty name");
    assert_eq!(bad.kind(), ErrorKind::InvalidInput);
}

/// The lock `name`, taken (it must be free).
async fn acquired(store: &alkstore::Store, name: &str) -> alkstore::lock::LockGuard {
    store
        .lock(name)
        .try_acquire()
        .await
        .expect("acquire")
        .expect("free")
}

/// The stream's first events once at least `n` are readable, or what is
/// readable after 30 s. Readers see a commit once every older writer has
/// ended (gap safety; on PostgreSQL, any on the server): wait for it.
async fn read_at_least(stream: &alkstore::Stream, n: usize) -> Vec<alkstore::stream::Event> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let events = stream.read(0, 10).await.expect("read");
        if events.len() >= n || tokio::time::Instant::now() >= deadline {
            return events;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A stream handle publishes serde values as JSON (one, or a batch) and
/// raw bytes (`_raw`); events decode back to the value, and bytes that
/// are not the type's JSON are a `Payload` error.
pub async fn a_stream_handle_publishes_typed_values_and_raw_bytes<H: RuntimeHarness>(h: &H) {
    use alkstore::prelude::EventExt;
    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Order {
        id: i64,
        item: String,
    }
    let stream = h.store().stream("typed");
    let one = Order {
        id: 1,
        item: "book".into(),
    };
    let a = stream.publish(Some("c-1"), &one).await.expect("publish");
    let batch = stream
        .publish_batch([(
            None,
            Order {
                id: 2,
                item: "pen".into(),
            },
        )])
        .await
        .expect("batch");
    let raw = stream
        .publish_raw(None, b"not json".to_vec())
        .await
        .expect("raw");
    assert!(a < batch[0] && batch[0] < raw, "{a} {batch:?} {raw}");
    let events = read_at_least(&stream, 3).await;
    assert_eq!(events.len(), 3, "{events:?}");
    assert_eq!(events[0].key.as_deref(), Some("c-1"));
    assert_eq!(events[0].decode::<Order>().expect("decode"), one);
    assert_eq!(events[1].decode::<Order>().expect("decode").id, 2);
    assert_eq!(events[2].payload, b"not json");
    let err = events[2].decode::<Order>().expect_err("raw bytes");
    assert_eq!(err.kind(), ErrorKind::Payload, "{err}");
}

/// A queue handle looks up, cancels, pauses and resumes its own queue and
/// manages its dead letters; a job of another queue is not its to see or
/// cancel.
pub async fn a_queue_handle_administers_its_own_queue_only<H: RuntimeHarness>(h: &H) {
    let store = h.store();
    let (mine, other) = (store.queue("adm-mine"), store.queue("adm-other"));
    let a = mine.enqueue(&1).await.expect("enqueue").id();
    let b = other.enqueue(&2).await.expect("enqueue").id();
    assert_eq!(mine.get(a).await.expect("get").map(|j| j.id), Some(a));
    assert!(mine.get(b).await.expect("get").is_none(), "another queue's");
    assert_eq!(
        mine.cancel(b).await.expect("cancel"),
        alkstore::queue::CancelOutcome::NotFound
    );
    assert_eq!(other.stats().await.expect("stats").ready, 1, "left alone");
    assert_eq!(
        mine.cancel(a).await.expect("cancel"),
        alkstore::queue::CancelOutcome::Cancelled
    );
    assert_eq!(mine.dead_count().await.expect("count"), 1);
    let dead = mine.dead_letters(None, 10).await.expect("dead");
    assert_eq!(dead.iter().map(|j| j.id).collect::<Vec<_>>(), [a]);
    assert!(mine
        .dead_letters(Some(a), 10)
        .await
        .expect("page")
        .is_empty());
    assert_eq!(mine.requeue_dead(None).await.expect("requeue"), 1);
    assert_eq!(mine.stats().await.expect("stats").ready, 1);

    assert!(mine.pause().await.expect("pause"));
    assert!(!mine.pause().await.expect("again"), "already paused");
    assert!(mine.is_paused().await.expect("paused"));
    assert!(
        mine.claim("w", 10).await.expect("claim").is_empty(),
        "paused"
    );
    assert!(mine.resume().await.expect("resume"));
    assert!(!mine.is_paused().await.expect("paused"));
    let jobs = mine.claim("w", 10).await.expect("claim");
    assert_eq!(jobs.len(), 1);
    assert!(mine.fail(jobs[0].claim(), "give up").await.expect("fail"));
    assert_eq!(
        mine.purge_dead(Some(vec![b])).await.expect("purge"),
        0,
        "not its dead letter"
    );
    assert_eq!(
        mine.purge_dead(Some(vec![jobs[0].id]))
            .await
            .expect("purge"),
        1
    );
    assert_eq!(mine.dead_count().await.expect("count"), 0);
}

/// The store lists its queues, streams and groups, as it lists schedules
/// and processes.
pub async fn the_store_lists_its_queues_streams_and_groups<H: RuntimeHarness>(h: &H) {
    use alkstore::prelude::GroupEngine;
    let store = h.store();
    store.queue("list-q").enqueue(&1).await.expect("enqueue");
    store
        .stream("list-s")
        .publish_raw(None, b"e".to_vec())
        .await
        .expect("publish");
    store
        .engine()
        .group_ensure(alkstore::group::GroupEnsureParams::new(
            "list-g", "list-s", 4,
        ))
        .await
        .expect("group");
    let queues = store.queues().await.expect("queues");
    assert!(queues.contains(&"list-q".to_string()), "{queues:?}");
    let streams = store.streams().await.expect("streams");
    assert!(streams.iter().any(|s| s.stream == "list-s"), "{streams:?}");
    let groups = store.groups().await.expect("groups");
    let g = groups
        .iter()
        .find(|g| g.group == "list-g")
        .expect("the group");
    assert_eq!((g.stream.as_str(), g.buckets), ("list-s", 4));
}

/// The transaction hands out the store's handles, with the same write
/// methods: a queue's enqueue, a stream's publish, a schedule's set, a
/// lock's fence and the application's own row commit together, or (rolled
/// back) leave nothing.
pub async fn a_transactions_handles_commit_together_or_not_at_all<H: RuntimeHarness>(h: &H) {
    let store = h.store();
    let name = "tx-handles";
    let guard = acquired(store, name).await;
    let business = h.business();
    for (n, commit) in [(1, false), (2, true)] {
        let mut tx = store.begin().await.expect("begin");
        business
            .insert(&mut tx, name, n)
            .await
            .expect("the application's row");
        let job = tx
            .queue(name)
            .enqueue(&serde_json::json!({ "n": n }))
            .await
            .expect("enqueue");
        assert!(job.id() > 0, "an id from the transaction");
        tx.stream(name)
            .publish_raw(Some("k"), format!("{n}").into_bytes())
            .await
            .expect("publish");
        tx.schedule(name)
            .set("@every 1h", name)
            .await
            .expect("schedule");
        tx.lock(name).fence(guard.token()).await.expect("held");
        if commit {
            tx.commit().await.expect("commit");
        } else {
            tx.rollback().await.expect("rollback");
        }
    }
    assert_eq!(
        business.rows().await.expect("rows"),
        vec![(name.to_string(), 2)],
        "only the committed row"
    );
    let stats = store.queue(name).stats().await.expect("stats");
    assert_eq!(stats.ready, 1, "only the committed job: {stats:?}");
    assert!(
        store.schedule(name).get().await.expect("get").is_some(),
        "the committed schedule"
    );
    let events = read_at_least(&store.stream(name), 1).await;
    let payloads: Vec<&[u8]> = events.iter().map(|e| e.payload.as_slice()).collect();
    assert_eq!(payloads, [b"2".as_slice()], "only the committed event");
    assert_eq!(
        guard.release().await.expect("release"),
        alkstore::lock::LockReleased::Released
    );
}

/// A fence with a token the lock no longer has is `NotHeld` on the
/// transaction's lock handle, and the transaction then refuses to commit:
/// the job enqueued through its queue handle before goes with it.
pub async fn a_lost_lock_fence_on_a_transactions_handle_rolls_everything_back<H: RuntimeHarness>(
    h: &H,
) {
    let store = h.store();
    let name = "tx-handles-lost";
    let guard = acquired(store, name).await;
    let tx = store.begin().await.expect("begin");
    tx.queue(name).enqueue(&1).await.expect("enqueue");
    let err = tx
        .lock(name)
        .fence(guard.token() + 1)
        .await
        .expect_err("not this token");
    assert_eq!(err.kind(), ErrorKind::NotHeld, "{err}");
    let refused = tx.commit().await.expect_err("poisoned");
    assert_eq!(refused.kind(), ErrorKind::RolledBack, "{refused}");
    let stats = store.queue(name).stats().await.expect("stats");
    assert_eq!(stats.ready, 0, "the enqueue rolled back: {stats:?}");
    // The same fence outside a transaction: a check, no hold.
    store.lock(name).fence(guard.token()).await.expect("held");
    let err = store
        .lock(name)
        .fence(guard.token() + 1)
        .await
        .expect_err("not this token");
    assert_eq!(err.kind(), ErrorKind::NotHeld, "{err}");
    let token = guard.token();
    assert_eq!(
        guard.release().await.expect("release"),
        alkstore::lock::LockReleased::Released
    );
    let err = store.lock(name).fence(token).await.expect_err("released");
    assert_eq!(err.kind(), ErrorKind::NotHeld, "{err}");
}

/// The rows above, for [`contract_suite!`](crate::contract_suite): list each
/// `pub async fn …<H: RuntimeHarness>` here, next to where it is written.
#[doc(hidden)]
#[macro_export]
macro_rules! __runtime_handles {
    ($then:path, $args:tt) => {
        $then! { @rows $args runtime::handles [
            a_schedule_handle_manages_its_schedule,
            a_rate_handle_admits_its_limit_per_window,
            the_results_handle_reads_and_awaits_results,
            a_channel_handle_sends_to_its_listeners,
            a_transactions_handles_commit_together_or_not_at_all,
            a_queue_handle_administers_its_own_queue_only,
            a_stream_handle_publishes_typed_values_and_raw_bytes,
            the_store_lists_its_queues_streams_and_groups,
            a_lost_lock_fence_on_a_transactions_handle_rolls_everything_back,
        ] }
    };
}
