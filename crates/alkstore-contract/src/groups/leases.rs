//! Bucket leases: ensure, claim, renew, release, expiry.

use std::collections::BTreeMap;

use alkstore_core::group::GroupEnsureParams;
use alkstore_core::{Clock, ErrorKind, GroupEngine};

use super::support::{buckets, claim, ensure, owners, release, renew, TTL};
use crate::Harness;

/// Ensuring a group twice leaves exactly its N unowned buckets, listed once.
pub async fn ensure_is_idempotent<H: Harness>(h: &H) {
    let e = h.engine();
    ensure(e, "g", 8).await;
    ensure(e, "g", 8).await;
    let status = e.group_status("g").await.expect("status");
    assert_eq!(status.stream, "s");
    let rows: Vec<(u32, Option<String>, i64, i64)> = status
        .buckets
        .iter()
        .map(|b| (b.bucket, b.owner.clone(), b.epoch, b.checkpoint))
        .collect();
    assert_eq!(rows, (0..8).map(|b| (b, None, 0, 0)).collect::<Vec<_>>());
    assert_eq!(
        e.group_counts("g").await.expect("counts"),
        [alkstore_core::group::BucketCount {
            buckets: 8,
            rows: 8
        }]
    );
    assert!(e.group_counts("nope").await.expect("counts").is_empty());
    let list = e.group_list().await.expect("list");
    assert_eq!(list.len(), 1);
    assert_eq!(
        (list[0].group.as_str(), list[0].buckets, list[0].live_owners),
        ("g", 8, 0)
    );
}

/// Another N, or another stream, for an existing group is a typed
/// mismatch, and nothing is written.
pub async fn a_different_bucket_count_or_stream_writes_nothing<H: Harness>(h: &H) {
    let e = h.engine();
    ensure(e, "g", 8).await;
    let err = e
        .group_ensure(GroupEnsureParams::new("g", "s", 16))
        .await
        .expect_err("another N");
    assert_eq!(err.kind(), ErrorKind::GroupMismatch, "{err}");
    assert!(err.to_string().contains("8 buckets"), "{err}");
    let err = e
        .group_ensure(GroupEnsureParams::new("g", "other", 8))
        .await
        .expect_err("another stream");
    assert_eq!(err.kind(), ErrorKind::GroupMismatch, "{err}");
    let status = e.group_status("g").await.expect("status");
    assert_eq!((status.stream.as_str(), status.buckets.len()), ("s", 8));
    assert_eq!(
        e.group_counts("g").await.expect("counts"),
        [alkstore_core::group::BucketCount {
            buckets: 8,
            rows: 8
        }]
    );
    assert_eq!(e.group_list().await.expect("list").len(), 1);
}

/// Eight workers claiming at once, over and over: every bucket ends with
/// exactly one owner, and no bucket was handed to two of them.
pub async fn claims_are_exclusive_under_8_concurrent_claimers<H: Harness>(h: &H) {
    let e = h.engine();
    ensure(e, "g", 16).await;
    let mut tasks = Vec::new();
    for w in 0..8 {
        let e = e.clone();
        tasks.push(tokio::spawn(async move {
            let worker = format!("w{w}");
            let mut mine = Vec::new();
            for _ in 0..6 {
                mine.extend(claim(&e, "g", &worker, 2).await);
                tokio::task::yield_now().await;
            }
            (worker, mine)
        }));
    }
    let mut won: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for t in tasks {
        let (worker, leases) = t.await.expect("claimer");
        for l in leases {
            assert_eq!(l.epoch, 1, "a first claim is epoch 1");
            won.entry(l.bucket).or_default().push(worker.clone());
        }
    }
    assert_eq!(
        won.keys().copied().collect::<Vec<_>>(),
        (0..16).collect::<Vec<_>>()
    );
    assert!(
        won.values().all(|w| w.len() == 1),
        "a bucket won twice: {won:?}"
    );
    let owned = owners(e, "g").await;
    for (bucket, winners) in &won {
        assert_eq!(
            owned[*bucket as usize].as_deref(),
            Some(winners[0].as_str())
        );
    }
}

/// A lease lapses by the store's clock only: until then nobody else gets
/// the bucket; after, another worker claims it (epoch + 1) and the old
/// holder's renewal no longer lists it, while it keeps the rest.
pub async fn renew_reports_lost_buckets_and_expiry_is_the_stores_clock<H: Harness>(h: &H) {
    let e = h.engine();
    ensure(e, "g", 4).await;
    let mine = claim(e, "g", "w1", 4).await;
    assert_eq!(buckets(&mine), [0, 1, 2, 3]);
    let ttl_ms = i64::try_from(TTL.as_millis()).expect("ttl");
    assert!(mine
        .iter()
        .all(|l| l.expires_at_ms == h.clock().now_ms() + ttl_ms));
    assert!(
        claim(e, "g", "w2", 4).await.is_empty(),
        "nothing expired yet"
    );

    h.clock().advance(TTL / 2);
    let r = renew(e, "g", "w1").await;
    assert_eq!(
        (buckets(&r.held), r.live_workers, r.buckets),
        (vec![0, 1, 2, 3], 1, 4)
    );
    h.clock().advance(TTL / 2);
    assert!(
        claim(e, "g", "w2", 4).await.is_empty(),
        "renewed, not expired"
    );

    h.clock().advance(TTL);
    let taken = claim(e, "g", "w2", 2).await;
    assert_eq!(buckets(&taken), [0, 1]);
    assert!(taken.iter().all(|l| l.epoch == 2), "{taken:?}");
    assert_eq!(
        renew(e, "g", "w2").await.live_workers,
        1,
        "w1's membership lapsed too"
    );
    let r = renew(e, "g", "w1").await;
    assert_eq!(buckets(&r.held), [2, 3], "w1 learns it lost 0 and 1");
    assert_eq!(r.live_workers, 2);
}

/// Release gives back only the caller's buckets; they are claimable at
/// once, under a new epoch.
pub async fn release_touches_only_the_callers_rows<H: Harness>(h: &H) {
    let e = h.engine();
    ensure(e, "g", 4).await;
    assert_eq!(buckets(&claim(e, "g", "w1", 2).await), [0, 1]);
    assert_eq!(buckets(&claim(e, "g", "w2", 2).await), [2, 3]);
    assert_eq!(release(e, "g", "w1", &[0, 2, 3]).await, 1);
    assert_eq!(
        owners(e, "g").await,
        [
            None,
            Some("w1".into()),
            Some("w2".into()),
            Some("w2".into())
        ]
    );
    let again = claim(e, "g", "w3", 4).await;
    assert_eq!(buckets(&again), [0]);
    assert_eq!(again[0].epoch, 2);
}

/// Renewing is a worker's heartbeat: it counts among the live workers even
/// before it holds a bucket (so the others make room for it), until its
/// membership lapses by the store's clock or it leaves. Leaving releases
/// every bucket it holds at once.
pub async fn live_workers_count_members_until_they_lapse_or_leave<H: Harness>(h: &H) {
    let e = h.engine();
    ensure(e, "g", 4).await;
    assert_eq!(buckets(&claim(e, "g", "w1", 4).await), [0, 1, 2, 3]);
    assert_eq!(renew(e, "g", "w1").await.live_workers, 1);
    let joiner = renew(e, "g", "w2").await;
    assert!(joiner.held.is_empty());
    assert_eq!(joiner.live_workers, 2, "a worker without buckets counts");
    assert_eq!(renew(e, "g", "w1").await.live_workers, 2);
    let listed = e.group_list().await.expect("list").remove(0);
    assert_eq!((listed.live_owners, listed.live_workers), (1, 2));

    h.clock().advance(TTL / 2);
    assert_eq!(renew(e, "g", "w1").await.live_workers, 2);
    h.clock().advance(TTL / 2);
    assert_eq!(renew(e, "g", "w1").await.live_workers, 1, "w2 lapsed");

    let leaving = e
        .group_leave(alkstore_core::group::GroupLeaveParams::new("g", "w1"))
        .await
        .expect("leave");
    assert_eq!(leaving, 4);
    assert_eq!(owners(e, "g").await, [None, None, None, None]);
    assert_eq!(renew(e, "g", "w3").await.live_workers, 1, "w1 left");
    assert_eq!(claim(e, "g", "w3", 4).await.len(), 4, "claimable at once");
}

/// Every change of a bucket's holder is recorded with its cause — a first
/// lease, a rebalance (released), a leave, a lapse (failover) — and who
/// held it; counted by cause for good; a week of handoffs kept.
pub async fn handoffs_record_first_rebalance_leave_and_lapse<H: Harness>(h: &H) {
    use alkstore_core::group::{
        GroupHandoffsParams, GroupLeaveParams, HandoffCause as C, HANDOFF_RETENTION,
    };
    let e = h.engine();
    ensure(e, "ho", 2).await;
    let history = || e.group_handoffs(GroupHandoffsParams::new("ho", 100));
    assert_eq!(history().await.expect("handoffs"), Default::default());
    let t0 = h.clock().now_ms();
    assert_eq!(buckets(&claim(e, "ho", "a", 2).await), vec![0, 1]);
    // b takes bucket 1 after a gives it back (a rebalance).
    assert_eq!(release(e, "ho", "a", &[1]).await, 1);
    assert_eq!(buckets(&claim(e, "ho", "b", 1).await), vec![1]);
    // b leaves; c takes bucket 1 (a leave).
    e.group_leave(GroupLeaveParams::new("ho", "b"))
        .await
        .expect("leave");
    assert_eq!(buckets(&claim(e, "ho", "c", 1).await), vec![1]);
    // a stops renewing: d takes bucket 0 once a's lease lapses (a failover).
    h.clock().advance(TTL + std::time::Duration::from_millis(1));
    let d = claim(e, "ho", "d", 2).await;
    assert_eq!(buckets(&d), vec![0, 1], "c's lease lapsed too");
    let got = history().await.expect("handoffs");
    let seen: Vec<(u32, Option<&str>, &str, C)> = got
        .recent
        .iter()
        .map(|x| {
            (
                x.bucket,
                x.from_worker.as_deref(),
                x.to_worker.as_str(),
                x.cause,
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            (1, Some("c"), "d", C::Lapse),
            (0, Some("a"), "d", C::Lapse),
            (1, Some("b"), "c", C::Leave),
            (1, Some("a"), "b", C::Rebalance),
            (1, None, "a", C::First),
            (0, None, "a", C::First),
        ],
        "newest first (same-time rows by insertion, newest first)"
    );
    assert!(got.recent.iter().all(|x| x.at_ms >= t0));
    assert_eq!(got.recent[0].epoch, d[1].epoch);
    assert_eq!(
        got.totals,
        vec![
            (C::First, 2),
            (C::Lapse, 2),
            (C::Leave, 1),
            (C::Rebalance, 1)
        ]
    );
    // A week on, the handoffs are pruned at the next claim; the totals stay.
    h.clock().advance(HANDOFF_RETENTION + TTL);
    assert_eq!(claim(e, "ho", "e", 1).await.len(), 1);
    let later = history().await.expect("handoffs");
    assert_eq!(later.recent.len(), 1, "{later:?}");
    assert_eq!(later.recent[0].cause, C::Lapse);
    assert_eq!(later.totals.iter().map(|(_, n)| n).sum::<u64>(), 7);
    let err = e
        .group_handoffs(GroupHandoffsParams::new("ho", 0))
        .await
        .expect_err("refused");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
}

/// The rows above, for [`contract_suite!`](crate::contract_suite).
#[doc(hidden)]
#[macro_export]
macro_rules! __groups_leases {
    ($then:path, $args:tt) => {
        $then! { @rows $args groups::leases [
            ensure_is_idempotent,
            a_different_bucket_count_or_stream_writes_nothing,
            claims_are_exclusive_under_8_concurrent_claimers,
            renew_reports_lost_buckets_and_expiry_is_the_stores_clock,
            release_touches_only_the_callers_rows,
            live_workers_count_members_until_they_lapse_or_leave,
            handoffs_record_first_rebalance_leave_and_lapse,
        ] }
    };
}
