//! Bucket reads: a group's buckets partition its stream by key.

use alkstore_core::Writes as _;
use std::collections::BTreeSet;

use alkstore_core::group::{
    bucket_of, bucket_of_offset, GroupCheckpointParams, GroupReadParams, GroupStatusParams,
};
use alkstore_core::stream::{Event, NewEvent};
use alkstore_core::{ErrorKind, GroupEngine, StreamEngine};

use super::support::{claim, ensure};
use crate::streams::settle;
use crate::Harness;

/// Every event of `bucket` after `after`, page by page.
async fn read_bucket<E: GroupEngine + alkstore_core::AllOps>(
    e: &E,
    bucket: u32,
    after: i64,
) -> Vec<Event> {
    let mut out: Vec<Event> = Vec::new();
    let mut after = after;
    loop {
        let page = e
            .group_read(GroupReadParams::new("g", bucket, after, 7))
            .await
            .expect("read");
        let Some(last) = page.last() else {
            return out;
        };
        after = last.event.offset;
        assert!(page.iter().all(|be| be.bucket == bucket));
        out.extend(page.into_iter().map(|be| be.event));
    }
}

/// Publish keyed events (10 keys, 4 events each) and 8 keyless ones on
/// stream `s`; their offsets.
async fn publish_mixed<E: StreamEngine + alkstore_core::AllOps>(e: &E) -> Vec<i64> {
    let mut events = Vec::new();
    for i in 0..48 {
        let ev = NewEvent::new("s", i.to_string().into_bytes());
        events.push(if i < 40 {
            ev.key(format!("k{}", i % 10))
        } else {
            ev
        });
    }
    // Another stream's events never show up in the group.
    e.stream_publish(NewEvent::new("other", b"x".to_vec()).key("k1"))
        .await
        .expect("other");
    let offsets = e.stream_publish(events).await.expect("publish");
    settle(e, "s").await;
    offsets
}

/// Reading every bucket gives every event of the stream exactly once, each
/// bucket in offset order; a keyed event sits in PostgreSQL's
/// `hashtextextended` bucket of its key (so one key, one bucket), a keyless
/// one in `offset % N`. A bucket outside `0..N` is refused.
pub async fn buckets_partition_the_stream_by_key<H: Harness>(h: &H) {
    let e = h.engine();
    let offsets = publish_mixed(e).await;
    ensure(e, "g", 4).await;
    let mut seen = BTreeSet::new();
    for bucket in 0..4 {
        let events = read_bucket(e, bucket, 0).await;
        assert!(events.windows(2).all(|w| w[0].offset < w[1].offset));
        for ev in &events {
            assert_eq!(&*ev.stream, "s");
            let expected = match &ev.key {
                Some(k) => bucket_of(k.as_bytes(), 4),
                None => bucket_of_offset(ev.offset, 4),
            };
            assert_eq!(expected, bucket, "event {} key {:?}", ev.offset, ev.key);
            assert!(seen.insert(ev.offset), "event {} read twice", ev.offset);
        }
    }
    assert_eq!(seen, offsets.iter().copied().collect::<BTreeSet<_>>());
    let tail = read_bucket(e, bucket_of(b"k3", 4), offsets[3]).await;
    assert!(tail.iter().all(|ev| ev.offset > offsets[3]));
    // A bucket outside 0..N holds nothing: refused, not an empty page
    // (alone, or among buckets that exist).
    for wanted in [vec![4], vec![1, 4]] {
        let err = e
            .group_read(GroupReadParams::buckets("g", wanted.clone(), 0, 10))
            .await
            .expect_err("no such bucket");
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{wanted:?}: {err}");
        assert!(err.to_string().contains("0..4"), "{err}");
    }
    // Several buckets in one read: their events, in offset order, each
    // with its bucket.
    let two = e
        .group_read(GroupReadParams::buckets("g", vec![1, 3], 0, 1000))
        .await
        .expect("two buckets");
    assert!(two
        .windows(2)
        .all(|w| w[0].event.offset < w[1].event.offset));
    let mut expected: Vec<i64> = Vec::new();
    for b in [1, 3] {
        expected.extend(read_bucket(e, b, 0).await.iter().map(|ev| ev.offset));
    }
    expected.sort_unstable();
    assert_eq!(
        two.iter().map(|be| be.event.offset).collect::<Vec<_>>(),
        expected
    );
    assert!(two.iter().all(|be| [1, 3].contains(&be.bucket)));
    assert!(e
        .group_read(GroupReadParams::new("nope", 0, 0, 10))
        .await
        .expect("no such group")
        .is_empty());
}

/// Status shows each bucket's lag: its events after its checkpoint.
pub async fn status_shows_each_buckets_lag<H: Harness>(h: &H) {
    let e = h.engine();
    publish_mixed(e).await;
    ensure(e, "g", 4).await;
    let lease = claim(e, "g", "w1", 1).await.remove(0);
    let events = read_bucket(e, lease.bucket, 0).await;
    assert!(
        events.len() >= 2,
        "bucket {} has {} events",
        lease.bucket,
        events.len()
    );
    e.group_checkpoint(GroupCheckpointParams::new(
        "g",
        lease.bucket,
        "w1",
        lease.epoch,
        events[1].offset,
    ))
    .await
    .expect("checkpoint");
    let status = e.group_status("g").await.expect("status");
    let mut total = 0;
    for b in &status.buckets {
        let expected = if b.bucket == lease.bucket {
            events.len() - 2
        } else {
            read_bucket(e, b.bucket, 0).await.len()
        };
        assert_eq!(b.lag, expected as u64, "bucket {}", b.bucket);
        total += b.lag;
    }
    assert_eq!(total, 46);
    let owned = &status.buckets[lease.bucket as usize];
    assert_eq!((owned.owner.as_deref(), owned.expired), (Some("w1"), false));
    // Without the lag count: the same buckets, lag 0.
    let quick = e
        .group_status(GroupStatusParams::without_lag("g"))
        .await
        .expect("status");
    let strip = |s: &alkstore_core::group::GroupStatus| -> Vec<_> {
        s.buckets
            .iter()
            .map(|b| (b.bucket, b.owner.clone(), b.epoch, b.checkpoint, b.expired))
            .collect()
    };
    assert_eq!(strip(&quick), strip(&status));
    assert!(quick.buckets.iter().all(|b| b.lag == 0));
}

/// The rows above, for [`contract_suite!`](crate::contract_suite).
#[doc(hidden)]
#[macro_export]
macro_rules! __groups_read {
    ($then:path, $args:tt) => {
        $then! { @rows $args groups::read [
            buckets_partition_the_stream_by_key,
            status_shows_each_buckets_lag,
        ] }
    };
}
