//! Gap safety: a reader never moves past an event a still-open
//! transaction may yet commit.

use alkstore_core::Writes as _;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use alkstore_core::stream::{NewEvent, StreamOffsetCommitParams};
use alkstore_core::{Engine, StreamEngine};

use super::support::{ev, payloads, publish_one, read_all, settle};
use crate::Harness;

/// One publisher holds its transaction open while another commits later
/// events: a reader sees none of them until the first commits, then all,
/// in offset order, none skipped. (On SQLite the second publisher waits for
/// the file's write lock, so the row holds trivially; it is kept so both
/// engines answer the same question.)
pub async fn open_transactions_hold_back_later_events<H: Harness>(h: &H) {
    let e = h.engine().clone();
    let held = h
        .publish_held(vec![ev("g", "held-1"), ev("g", "held-2")])
        .await
        .expect("held publish");
    let later = {
        let e = e.clone();
        tokio::spawn(async move {
            let mut offsets = Vec::new();
            for i in 0..3 {
                offsets.extend(
                    e.stream_publish(ev("g", &format!("later-{i}")))
                        .await
                        .expect("later publish"),
                );
            }
            offsets
        })
    };
    // A server database lets the later publisher commit while the first
    // transaction is open (publishers never wait on each other); SQLite's
    // single writer queues it behind the file lock.
    let concurrent = e.capabilities().multi_host;
    let wait = Duration::from_millis(if concurrent { 10_000 } else { 300 });
    let deadline = tokio::time::Instant::now() + wait;
    while !later.is_finished() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let committed_meanwhile = later.is_finished();
    assert_eq!(
        committed_meanwhile, concurrent,
        "a later publisher commits while an earlier transaction is open exactly on server engines"
    );
    assert!(
        read_all(&e, "g", 0).await.is_empty(),
        "a reader saw events past an open transaction's"
    );
    let stats = e.stream_stats("g").await.expect("stats");
    assert_eq!(stats.events, 0, "nothing readable yet");
    assert_eq!(
        stats.held_back,
        if committed_meanwhile { 3 } else { 0 },
        "committed events waiting behind the open transaction"
    );
    assert_eq!(
        stats.held_back_by_s.is_some(),
        committed_meanwhile,
        "how long the publisher holding them back has been open: {stats:?}"
    );
    let held_offsets = held.offsets.clone();
    held.finish(true).await.expect("commit the held publish");
    let later = later.await.expect("later publisher");
    settle(&e, "g").await;
    let read = read_all(&e, "g", 0).await;
    assert_eq!(
        payloads(&read),
        ["held-1", "held-2", "later-0", "later-1", "later-2"]
    );
    let offsets: Vec<i64> = read.iter().map(|e| e.offset).collect();
    assert_eq!(offsets[..2], held_offsets[..]);
    assert_eq!(offsets[2..], later[..]);
    assert!(offsets.windows(2).all(|w| w[0] < w[1]), "{offsets:?}");
    assert_eq!(e.stream_stats("g").await.expect("stats").held_back, 0);
}

/// Every event of `stream` after `after`, once there are at least `n` (up
/// to 10 s: on PostgreSQL a transaction that ended between a read's
/// snapshot and its look at who publishes holds that one read back).
async fn read_at_least<E: StreamEngine + alkstore_core::AllOps>(
    e: &E,
    stream: &str,
    after: i64,
    n: usize,
) -> Vec<alkstore_core::stream::Event> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let read = read_all(e, stream, after).await;
        if read.len() >= n || tokio::time::Instant::now() > deadline {
            return read;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A transaction that writes but publishes nothing holds back no reader,
/// whether it is in another database of the server or in the store's own
/// (a bulk import, a migration, another app's idle transaction): events
/// committed while it stays open are read, and stats hold none back.
pub async fn foreign_write_transactions_hold_back_nothing<H: Harness>(h: &H) {
    let e = h.engine().clone();
    let mut asked = 0;
    for (same_database, s) in [(false, "other-db"), (true, "same-db")] {
        let Some(held) = h.hold_foreign_write(same_database).await.expect("hold") else {
            continue;
        };
        asked += 1;
        let offset = publish_one(&e, s, "while-held").await;
        let read = read_at_least(&e, s, 0, 1).await;
        assert_eq!(
            payloads(&read),
            ["while-held"],
            "an open transaction that publishes nothing (same database: {same_database}) \
             held the reader back"
        );
        assert_eq!(read[0].offset, offset);
        settle(&e, s).await;
        assert_eq!(e.stream_stats(s).await.expect("stats").events, 1);
        held.finish(false)
            .await
            .expect("end the foreign transaction");
    }
    assert!(asked >= 1, "the harness held no foreign transaction at all");
}

/// A transaction that wrote before it publishes may be older than what
/// readers passed while it published nothing: its events still take
/// offsets past those, so a tailing reader misses none of them.
pub async fn a_late_publisher_lands_past_what_readers_passed<H: Harness>(h: &H) {
    let e = h.engine().clone();
    let s = "late";
    publish_one(&e, s, "first").await;
    let mut after = read_at_least(&e, s, 0, 1)
        .await
        .last()
        .expect("first")
        .offset;
    // On PostgreSQL the row gives the transaction its id now; SQLite's
    // holds the file's write lock, so nothing publishes meanwhile there.
    let tx = crate::tx::support::begin_with_row(h, "late").await;
    let concurrent = e.capabilities().multi_host;
    if concurrent {
        publish_one(&e, s, "meanwhile").await;
        let page = read_at_least(&e, s, after, 1).await;
        assert_eq!(
            payloads(&page),
            ["meanwhile"],
            "an open transaction that had published nothing held the reader back"
        );
        after = page[0].offset;
    }
    let late = tx
        .stream_publish(vec![ev(s, "late-1"), ev(s, "late-2")])
        .await
        .expect("publish");
    let again = tx.stream_publish(ev(s, "late-3")).await.expect("publish");
    if concurrent {
        // What the reader passed stays passed while the late publisher is
        // open: a consumer commits it, and a read finds nothing new.
        let committed = e
            .stream_offset_commit(StreamOffsetCommitParams::new(s, "c", after))
            .await
            .expect("commit what was read while a late publisher is open");
        assert_eq!(committed, after);
        assert!(read_all(&e, s, after).await.is_empty());
        // Now a publisher, it holds back what commits after it.
        publish_one(&e, s, "after-late").await;
        assert!(
            read_all(&e, s, after).await.is_empty(),
            "read past an open publisher"
        );
        let stats = e.stream_stats(s).await.expect("stats");
        assert_eq!(stats.held_back, 1, "{stats:?}");
        assert!(stats.held_back_by_s.is_some(), "{stats:?}");
    }
    tx.commit().await.expect("commit");
    assert!(
        late[0] > after,
        "the late publisher's offset {} is not past what the reader passed ({after})",
        late[0]
    );
    assert_eq!([late[1] + 1], again[..], "one transaction's offsets run on");
    let mut tail = vec!["late-1", "late-2", "late-3"];
    if concurrent {
        tail.push("after-late");
    }
    let page = read_at_least(&e, s, after, tail.len()).await;
    assert_eq!(payloads(&page), tail);
    let mut want = vec!["first"];
    if concurrent {
        want.push("meanwhile");
    }
    want.extend(tail);
    assert_eq!(payloads(&read_all(&e, s, 0).await), want);
}

/// A tiny deterministic generator (xorshift), seeded per run and printed on
/// failure, so a failing interleaving can be told apart from another.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Eight concurrent publishers (some rolling back, some publishing in
/// their own transactions) and a tailing reader: the reader's sequence is
/// exactly the committed set, in offset order, without gaps or duplicates.
pub async fn tailing_reader_sees_every_commit_in_order<H: Harness>(h: &H) {
    let e = h.engine().clone();
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| (u64::from(d.subsec_nanos()) ^ d.as_secs()) | 1)
        .unwrap_or(7);
    let mut publishers = Vec::new();
    for p in 0..8u64 {
        let e = e.clone();
        let mut rng = Rng(seed.wrapping_add(p.wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1);
        let plan: Vec<(u64, u64)> = (0..12).map(|_| (rng.below(4), 1 + rng.below(4))).collect();
        publishers.push((p, plan, e));
    }
    let committed = Arc::new(std::sync::Mutex::new(BTreeSet::new()));
    let reader = {
        let e = e.clone();
        tokio::spawn(async move {
            let mut after = 0;
            let mut seen: Vec<(i64, String)> = Vec::new();
            let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
            loop {
                let page = read_all(&e, "r", after).await;
                for ev in &page {
                    seen.push((ev.offset, String::from_utf8_lossy(&ev.payload).into_owned()));
                }
                if let Some(last) = page.last() {
                    after = last.offset;
                }
                if seen.iter().any(|(_, p)| p == "stop") || tokio::time::Instant::now() > deadline {
                    return seen;
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        })
    };
    let mut tasks = Vec::new();
    for (p, plan, e) in publishers {
        let committed = committed.clone();
        tasks.push(async move {
            for (n, (kind, size)) in plan.into_iter().enumerate() {
                let events: Vec<NewEvent> = (0..size)
                    .map(|i| ev("r", &format!("p{p}-{n}-{i}")))
                    .collect();
                let names = payloads_of(&events);
                match kind {
                    // Rolled back in the caller's transaction: never seen.
                    0 => {
                        h.outbox_publish(events, false).await.expect("rollback");
                    }
                    // Committed in the caller's transaction.
                    1 => {
                        h.outbox_publish(events, true).await.expect("outbox");
                        committed.lock().expect("set").extend(names);
                    }
                    _ => {
                        e.stream_publish(events).await.expect("publish");
                        committed.lock().expect("set").extend(names);
                    }
                }
            }
        });
    }
    futures_util::future::join_all(tasks).await;
    e.stream_publish(ev("r", "stop"))
        .await
        .expect("stop marker");
    let seen = reader.await.expect("reader");
    let offsets: Vec<i64> = seen.iter().map(|(o, _)| *o).collect();
    assert!(
        offsets.windows(2).all(|w| w[0] < w[1]),
        "seed {seed}: the reader saw offsets out of order: {offsets:?}"
    );
    let got: BTreeSet<String> = seen
        .into_iter()
        .map(|(_, p)| p)
        .filter(|p| p != "stop")
        .collect();
    let want = committed.lock().expect("set").clone();
    assert_eq!(
        got, want,
        "seed {seed}: the reader's events are not the committed set"
    );
}

fn payloads_of(events: &[NewEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| String::from_utf8_lossy(&e.payload).into_owned())
        .collect()
}

/// The rows above, for [`contract_suite!`](crate::contract_suite).
#[doc(hidden)]
#[macro_export]
macro_rules! __streams_gaps {
    ($then:path, $args:tt) => {
        $then! { @rows $args streams::gaps [
            open_transactions_hold_back_later_events,
            foreign_write_transactions_hold_back_nothing,
            a_late_publisher_lands_past_what_readers_passed,
            tailing_reader_sees_every_commit_in_order,
        ] }
    };
}
