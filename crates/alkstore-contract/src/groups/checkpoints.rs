//! Checkpoints: fenced by the lease's epoch, forward only, bounded by the
//! stream's head.

use alkstore_core::group::{
    GroupCheckpointParams, GroupDeadAddParams, GroupDeadListParams, GroupDeadPurgeParams,
    GroupDeadRequeueParams, GroupDeadResolveParams, GroupDeadTakeParams, GroupResizeParams,
};
use alkstore_core::stream::{Event, NewEvent};
use alkstore_core::Writes as _;
use alkstore_core::{Clock, ErrorKind, GroupEngine, StreamEngine};

use super::support::{claim, ensure, release, TTL};
use crate::streams::settle;
use crate::{writer, Harness, Where};

/// Worker "w1", holding bucket 0 of `group` under `epoch`, dead-letters
/// `events` after one failed run each.
async fn bury<E: GroupEngine + alkstore_core::AllOps>(
    e: &E,
    group: &str,
    epoch: i64,
    events: &[Event],
) {
    for ev in events {
        e.group_dead_add(GroupDeadAddParams::new(
            group,
            0,
            "w1",
            epoch,
            ev.clone(),
            "boom",
            1,
        ))
        .await
        .expect("dead");
    }
}

/// Publish `n` keyless events on stream `s`; their offsets.
async fn publish<E: StreamEngine + alkstore_core::AllOps>(e: &E, n: usize) -> Vec<i64> {
    let events = (0..n)
        .map(|i| NewEvent::new("s", i.to_string().into_bytes()))
        .collect::<Vec<_>>();
    let offsets = e.stream_publish(events).await.expect("publish");
    settle(e, "s").await;
    offsets
}

fn cp(bucket: u32, worker: &str, epoch: i64, offset: i64) -> GroupCheckpointParams {
    GroupCheckpointParams::new("g", bucket, worker, epoch, offset)
}

async fn checkpoint_of<E: GroupEngine + alkstore_core::AllOps>(e: &E, bucket: u32) -> i64 {
    e.group_status("g").await.expect("status").buckets[bucket as usize].checkpoint
}

/// A worker whose lease was taken over moves nothing, forward or backward,
/// whatever epoch it names; the new holder moves it under its own epoch,
/// and a later claim starts from the saved checkpoint.
pub async fn a_stale_epoch_cannot_checkpoint<H: Harness>(h: &H, at: Where) {
    let e = h.engine();
    let w = writer(h, at);
    let o = publish(e, 4).await;
    ensure(e, "g", 1).await;
    let first = claim(e, "g", "w1", 1).await;
    assert_eq!(first[0].epoch, 1);
    assert_eq!(
        w.group_checkpoint(cp(0, "w1", 1, o[0])).await.expect("w1"),
        o[0]
    );

    h.clock().advance(TTL * 2);
    let second = claim(e, "g", "w2", 1).await;
    assert_eq!((second[0].epoch, second[0].checkpoint), (2, o[0]));
    for (worker, epoch, offset) in [
        ("w1", 1, o[2]),
        ("w1", 1, 0),
        ("w1", 2, o[2]),
        ("w2", 1, o[2]),
    ] {
        let err = w
            .group_checkpoint(cp(0, worker, epoch, offset))
            .await
            .expect_err("fenced");
        assert_eq!(
            err.kind(),
            ErrorKind::NotHeld,
            "{worker} epoch {epoch}: {err}"
        );
    }
    assert_eq!(checkpoint_of(e, 0).await, o[0], "nothing moved");
    assert_eq!(
        w.group_checkpoint(cp(0, "w2", 2, o[2])).await.expect("w2"),
        o[2]
    );

    assert_eq!(release(e, "g", "w2", &[0]).await, 1);
    let err = w
        .group_checkpoint(cp(0, "w2", 2, o[3]))
        .await
        .expect_err("released");
    assert_eq!(err.kind(), ErrorKind::NotHeld, "{err}");
    let third = claim(e, "g", "w3", 1).await;
    assert_eq!((third[0].epoch, third[0].checkpoint), (3, o[2]));
}

/// A checkpoint below the saved one is ignored (the saved one stays and is
/// returned); one beyond the stream's head is refused and writes nothing.
pub async fn checkpoints_never_move_backward_nor_past_the_head<H: Harness>(h: &H, at: Where) {
    let e = h.engine();
    let w = writer(h, at);
    let o = publish(e, 3).await;
    ensure(e, "g", 1).await;
    let epoch = claim(e, "g", "w1", 1).await[0].epoch;
    assert_eq!(
        w.group_checkpoint(cp(0, "w1", epoch, o[1]))
            .await
            .expect("fwd"),
        o[1]
    );
    assert_eq!(
        w.group_checkpoint(cp(0, "w1", epoch, o[0]))
            .await
            .expect("back"),
        o[1]
    );
    assert_eq!(checkpoint_of(e, 0).await, o[1]);
    let err = w
        .group_checkpoint(cp(0, "w1", epoch, o[2] + 1))
        .await
        .expect_err("past the head");
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert!(err.to_string().contains("head"), "{err}");
    assert_eq!(checkpoint_of(e, 0).await, o[1]);
    assert_eq!(
        w.group_checkpoint(cp(0, "w1", epoch, o[2]))
            .await
            .expect("head"),
        o[2]
    );
}

/// A dead letter keeps the event and its error; only the bucket's holder
/// under its epoch may write one, and writing the same event again replaces
/// the record.
pub async fn dead_letters_are_fenced_and_keep_the_event<H: Harness>(h: &H) {
    let e = h.engine();
    let o = publish(e, 2).await;
    ensure(e, "g", 1).await;
    let epoch = claim(e, "g", "w1", 1).await[0].epoch;
    let event = e
        .stream_read(alkstore_core::stream::StreamReadParams::new("s", o[0], 1))
        .await
        .expect("read")
        .remove(0);
    let dead = |worker: &str, epoch: i64, error: &str, attempts: u32| {
        GroupDeadAddParams::new("g", 0, worker, epoch, event.clone(), error, attempts)
    };
    let err = e
        .group_dead_add(dead("w2", epoch, "x", 1))
        .await
        .expect_err("not the holder");
    assert_eq!(err.kind(), ErrorKind::NotHeld, "{err}");
    e.group_dead_add(dead("w1", epoch, "first", 3))
        .await
        .expect("dead");
    e.group_dead_add(dead("w1", epoch, "boom", 5))
        .await
        .expect("again");
    let list = e
        .group_dead_list(GroupDeadListParams::new("g", 0, 10))
        .await
        .expect("list");
    assert_eq!(list.len(), 1);
    let d = &list[0];
    assert_eq!(
        (
            d.offset,
            d.bucket,
            d.stream.as_str(),
            d.payload.as_slice(),
            d.error.as_str(),
            d.attempts
        ),
        (o[1], 0, "s", b"1".as_slice(), "boom", 5)
    );
    assert_eq!(d.failed_at, h.clock().now());
    assert!(e
        .group_dead_list(GroupDeadListParams::new("g", o[1], 10))
        .await
        .expect("after")
        .is_empty());
}

/// Requeued dead letters are taken once, by the holder of their bucket
/// only (taking clears the mark); resolving one is fenced like a
/// checkpoint; recording it dead again clears the mark.
pub async fn requeued_dead_letters_are_taken_once_by_the_buckets_holder<H: Harness>(h: &H) {
    let e = h.engine();
    let o = publish(e, 3).await;
    ensure(e, "g", 1).await;
    let epoch = claim(e, "g", "w1", 1).await[0].epoch;
    let events = e
        .stream_read(alkstore_core::stream::StreamReadParams::new("s", 0, 10))
        .await
        .expect("read");
    bury(e, "g", epoch, &events[..2]).await;
    let list = |e: &H::Engine| {
        let e = e.clone();
        async move {
            e.group_dead_list(GroupDeadListParams::new("g", 0, 10))
                .await
                .expect("list")
                .iter()
                .map(|d| (d.offset, d.requeued))
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(list(e).await, [(o[0], false), (o[1], false)]);
    let requeue = |offsets: Vec<i64>| GroupDeadRequeueParams::new("g", offsets);
    assert_eq!(
        e.group_dead_requeue(requeue(vec![o[1], o[2]]))
            .await
            .expect("requeue"),
        1
    );
    assert_eq!(list(e).await, [(o[0], false), (o[1], true)]);
    let take = |worker: &str| GroupDeadTakeParams::new("g", worker, 10);
    assert!(
        e.group_dead_take(take("w2")).await.expect("w2").is_empty(),
        "not w2's bucket"
    );
    let taken = e.group_dead_take(take("w1")).await.expect("w1");
    assert_eq!(taken.iter().map(|d| d.offset).collect::<Vec<_>>(), [o[1]]);
    assert_eq!(taken[0].event().payload, events[1].payload);
    assert!(
        e.group_dead_take(take("w1"))
            .await
            .expect("again")
            .is_empty(),
        "taken once"
    );
    assert_eq!(
        e.group_dead_requeue(requeue(Vec::new()))
            .await
            .expect("all"),
        2
    );

    let resolve =
        |worker: &str, epoch: i64| GroupDeadResolveParams::new("g", 0, worker, epoch, o[0]);
    let err = e
        .group_dead_resolve(resolve("w2", epoch))
        .await
        .expect_err("not held");
    assert_eq!(err.kind(), ErrorKind::NotHeld, "{err}");
    e.group_dead_resolve(resolve("w1", epoch))
        .await
        .expect("resolve");
    assert_eq!(list(e).await, [(o[1], true)]);
    e.group_dead_add(GroupDeadAddParams::new(
        "g",
        0,
        "w1",
        epoch,
        events[1].clone(),
        "again",
        2,
    ))
    .await
    .expect("dead again");
    assert_eq!(
        list(e).await,
        [(o[1], false)],
        "dead again: no longer requeued"
    );
}

/// Purging deletes the chosen dead letters of the group (or all of them,
/// requeued or not) and nothing else: not another group's, not the events,
/// not the checkpoints; the group listing counts what is left.
pub async fn purged_dead_letters_are_gone_and_counted_no_more<H: Harness>(h: &H) {
    let e = h.engine();
    let o = publish(e, 3).await;
    let events = e
        .stream_read(alkstore_core::stream::StreamReadParams::new("s", 0, 10))
        .await
        .expect("read");
    for group in ["g", "other"] {
        ensure(e, group, 1).await;
        let epoch = claim(e, group, "w1", 1).await[0].epoch;
        bury(e, group, epoch, &events).await;
    }
    let dead_of = |e: &H::Engine| {
        let e = e.clone();
        async move {
            e.group_list()
                .await
                .expect("groups")
                .into_iter()
                .map(|g| (g.group, g.dead))
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(dead_of(e).await, [("g".into(), 3), ("other".into(), 3)]);
    let checkpoint = checkpoint_of(e, 0).await;
    let purge = |offsets: Vec<i64>| GroupDeadPurgeParams::new("g", offsets);
    assert_eq!(
        e.group_dead_purge(purge(vec![o[1], o[2] + 100]))
            .await
            .expect("purge one"),
        1
    );
    let left = e
        .group_dead_list(GroupDeadListParams::new("g", 0, 10))
        .await
        .expect("list");
    assert_eq!(
        left.iter().map(|d| d.offset).collect::<Vec<_>>(),
        [o[0], o[2]]
    );
    e.group_dead_requeue(GroupDeadRequeueParams::new("g", vec![o[0]]))
        .await
        .expect("requeue");
    assert_eq!(
        e.group_dead_purge(purge(Vec::new()))
            .await
            .expect("purge all"),
        2,
        "requeued or not"
    );
    assert_eq!(dead_of(e).await, [("g".into(), 0), ("other".into(), 3)]);
    assert_eq!(
        e.group_dead_purge(purge(Vec::new())).await.expect("none"),
        0
    );
    assert_eq!(checkpoint_of(e, 0).await, checkpoint, "checkpoints stay");
    let err = e
        .group_dead_purge(GroupDeadPurgeParams::new("", Vec::new()))
        .await
        .expect_err("no name");
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert_eq!(
        e.stream_read(alkstore_core::stream::StreamReadParams::new("s", 0, 10))
            .await
            .expect("read")
            .len(),
        3,
        "the events stay"
    );
}

/// Resizing is refused while any lease is live; once the workers are gone
/// every new bucket starts from the lowest old checkpoint (nothing
/// skipped), and epochs carry on, so no fencing token from before the
/// resize is current again.
pub async fn resize_rewinds_to_the_lowest_checkpoint_once_no_lease_is_live<H: Harness>(h: &H) {
    let e = h.engine();
    let o = publish(e, 6).await;
    ensure(e, "g", 2).await;
    let leases = claim(e, "g", "w1", 2).await;
    for (lease, offset) in leases.iter().zip([o[4], o[2]]) {
        e.group_checkpoint(cp(lease.bucket, "w1", lease.epoch, offset))
            .await
            .expect("checkpoint");
    }
    let err = e
        .group_resize(GroupResizeParams::new("g", 4))
        .await
        .expect_err("live leases");
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    assert_eq!(e.group_status("g").await.expect("status").buckets.len(), 2);

    h.clock().advance(TTL * 2);
    let resized = e
        .group_resize(GroupResizeParams::new("g", 4))
        .await
        .expect("resize");
    assert_eq!((resized.from, resized.to, resized.rewound_to), (2, 4, o[2]));
    assert_eq!(
        e.group_counts("g").await.expect("counts"),
        [alkstore_core::group::BucketCount {
            buckets: 4,
            rows: 4
        }]
    );
    let status = e.group_status("g").await.expect("status");
    let rows: Vec<(u32, Option<String>, i64, i64)> = status
        .buckets
        .iter()
        .map(|b| (b.bucket, b.owner.clone(), b.epoch, b.checkpoint))
        .collect();
    assert_eq!(rows, (0..4).map(|b| (b, None, 1, o[2])).collect::<Vec<_>>());
    let err = e
        .group_checkpoint(cp(0, "w1", 1, o[5]))
        .await
        .expect_err("a pre-resize lease");
    assert_eq!(err.kind(), ErrorKind::NotHeld, "{err}");
    assert!(claim(e, "g", "w2", 4).await.iter().all(|l| l.epoch == 2));
    let err = e
        .group_ensure(alkstore_core::group::GroupEnsureParams::new("g", "s", 2))
        .await
        .expect_err("the old N");
    assert_eq!(err.kind(), ErrorKind::GroupMismatch, "{err}");
    let err = e
        .group_resize(GroupResizeParams::new("nope", 4))
        .await
        .expect_err("unknown");
    assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
    let err = e
        .group_resize(GroupResizeParams::new("g", 0))
        .await
        .expect_err("N = 0");
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
}

/// The rows above, for [`contract_suite!`](crate::contract_suite).
#[doc(hidden)]
#[macro_export]
macro_rules! __groups_checkpoints {
    ($then:path, $args:tt) => {
        $then! { @rows $args groups::checkpoints [
            dead_letters_are_fenced_and_keep_the_event,
            resize_rewinds_to_the_lowest_checkpoint_once_no_lease_is_live,
            requeued_dead_letters_are_taken_once_by_the_buckets_holder,
            purged_dead_letters_are_gone_and_counted_no_more,
        ] }
        $then! { @places $args groups::checkpoints [
            a_stale_epoch_cannot_checkpoint,
            checkpoints_never_move_backward_nor_past_the_head,
        ] }
    };
}
