//! The handles for holders that keep their own claims, leases and tokens
//! (a remote worker or member, an operator's tool): jobs by id with a
//! long-poll claim, a stream's long-poll read and compare-and-set commit,
//! a lock's bare grant, and a consumer group's member driven by hand.

use std::time::Duration;

use alkstore::lock::{LockReleased, LockRenewed};
use alkstore::queue::{
    CancelOutcome, DeadListParams, DeadSelect, JobFailParams, JobListParams, JobState,
};
use alkstore::ErrorKind;

use crate::RuntimeHarness;

/// A claim that waits gets the job enqueued while it waits; the job is
/// then settled by id and token (heartbeat, result, ack; fail), found in
/// the dead letters across queues, requeued, cancelled and purged.
pub async fn jobs_by_id_are_claimed_waiting_settled_and_administered<H: RuntimeHarness>(h: &H) {
    let store = h.store().clone();
    let jobs = store.jobs();
    let nothing = jobs
        .claim_waiting("remote", "w", 2, Duration::from_millis(50))
        .await
        .expect("claim");
    assert!(nothing.is_empty(), "an empty queue gives nothing");
    let waiting = {
        let jobs = jobs.clone();
        tokio::spawn(async move {
            jobs.claim_waiting("remote", "w", 2, Duration::from_secs(20))
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    let first = store.queue("remote").enqueue(&1).await.expect("enqueue");
    let got = waiting.await.expect("task").expect("claim");
    assert_eq!(got.iter().map(|j| j.id).collect::<Vec<_>>(), [first.id()]);
    let claim = got[0].claim();
    assert!(jobs.heartbeat(claim.clone()).await.expect("beat").is_some());
    jobs.save_result(first.id(), b"\"done\"".to_vec())
        .await
        .expect("save");
    assert_eq!(jobs.ack(vec![claim.clone()]).await.expect("ack"), [true]);
    assert_eq!(jobs.ack(vec![claim]).await.expect("ack"), [false]);
    let result = store.results().get(first.id()).await.expect("result");
    assert_eq!(result.map(|r| r.value), Some(b"\"done\"".to_vec()));

    let second = store.queue("remote").enqueue(&2).await.expect("enqueue");
    let got = jobs
        .claim_waiting("remote", "w", 1, Duration::ZERO)
        .await
        .expect("claim");
    assert_eq!(got.len(), 1);
    let failed = jobs
        .fail(JobFailParams::new(got[0].claim(), "bad input"))
        .await
        .expect("fail");
    assert!(failed);
    let dead = jobs
        .dead(DeadListParams::new(10).queue("remote"))
        .await
        .expect("dead");
    assert_eq!(dead.iter().map(|j| j.id).collect::<Vec<_>>(), [second.id()]);
    assert_eq!(
        jobs.dead_count(DeadSelect::queue("remote"))
            .await
            .expect("count"),
        1
    );
    let requeued = jobs
        .requeue_dead(DeadSelect::ids(vec![second.id()]))
        .await
        .expect("requeue");
    assert_eq!(requeued, 1);
    let back = jobs.get(second.id()).await.expect("get").expect("there");
    assert_eq!(back.state, JobState::Pending);
    let listed = jobs
        .list(JobListParams::new(10).queue("remote"))
        .await
        .expect("list");
    assert_eq!(
        listed.iter().map(|j| j.id).collect::<Vec<_>>(),
        [second.id()]
    );
    assert_eq!(
        jobs.cancel(second.id()).await.expect("cancel"),
        CancelOutcome::Cancelled
    );
    let purged = jobs
        .purge_dead(DeadSelect::queue("remote"))
        .await
        .expect("purge");
    assert_eq!(purged, 1);
    assert!(jobs.get(second.id()).await.expect("get").is_none());
}

/// A read that waits gets the event published while it waits; a read
/// back pages newest first; a compare-and-set commit moves the offset only
/// from the one it names (`NotHeld` otherwise, the offset unchanged); a
/// trim deletes below an offset.
pub async fn a_stream_read_waits_pages_back_and_commits_compare_and_set<H: RuntimeHarness>(h: &H) {
    let stream = h.store().stream("remote");
    let none = stream
        .read_waiting(0, 10, Duration::from_millis(50))
        .await
        .expect("read");
    assert!(none.is_empty());
    let waiting = {
        let stream = stream.clone();
        tokio::spawn(async move { stream.read_waiting(0, 10, Duration::from_secs(20)).await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    let o1 = stream.publish(None, &1).await.expect("publish");
    let got = waiting.await.expect("task").expect("read");
    assert_eq!(got.iter().map(|e| e.offset).collect::<Vec<_>>(), [o1]);
    let more = stream
        .publish_batch([(None, 2), (None, 3)])
        .await
        .expect("publish");
    let (o2, o3) = (more[0], more[1]);
    // Events become visible to readers once older transactions end
    // (PostgreSQL): read until both are there, bounded.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let back = loop {
        let back = stream.read_back(0, i64::MAX, 2).await.expect("read back");
        if back.first().map(|e| e.offset) == Some(o3) || tokio::time::Instant::now() > deadline {
            break back;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(back.iter().map(|e| e.offset).collect::<Vec<_>>(), [o3, o2]);

    assert_eq!(stream.commit("c", o1).await.expect("commit"), o1);
    assert_eq!(stream.commit_expecting("c", o2, o1).await.expect("cas"), o2);
    let moved = stream
        .commit_expecting("c", o3, o1)
        .await
        .expect_err("moved since");
    assert_eq!(moved.kind(), ErrorKind::NotHeld, "{moved}");
    assert_eq!(stream.offset("c").await.expect("offset"), Some(o2));

    assert_eq!(stream.trim(Some(o2), None).await.expect("trim"), 1);
    let left = stream.read(0, 10).await.expect("read");
    assert_eq!(left.iter().map(|e| e.offset).collect::<Vec<_>>(), [o2, o3]);
}

/// A bare grant is the caller's to renew and release by its token: another
/// owner is refused while it holds, a wrong token renews nothing, and once
/// released the other owner gets it, with a higher token.
pub async fn a_lock_grant_is_renewed_and_released_by_its_token<H: RuntimeHarness>(h: &H) {
    let store = h.store();
    let mine = store.lock("remote").owner("a").ttl(Duration::from_secs(30));
    let theirs = store.lock("remote").owner("b").ttl(Duration::from_secs(30));
    let grant = mine.grant().await.expect("grant").expect("free");
    assert_eq!((grant.name.as_str(), grant.owner.as_str()), ("remote", "a"));
    assert!(theirs.grant().await.expect("grant").is_none(), "held");
    match mine.renew(grant.token).await.expect("renew") {
        LockRenewed::Held(g) => assert_eq!(g.token, grant.token),
        LockRenewed::NotHeld => panic!("the holder renews"),
    }
    assert!(matches!(
        mine.renew(grant.token + 1).await.expect("renew"),
        LockRenewed::NotHeld
    ));
    let listed = store.locks().await.expect("locks");
    assert!(listed.iter().any(|l| l.name == "remote"), "{listed:?}");
    assert!(matches!(
        theirs.release(grant.token).await.expect("release"),
        LockReleased::NotHeld
    ));
    assert!(matches!(
        mine.release(grant.token).await.expect("release"),
        LockReleased::Released
    ));
    let next = theirs.grant().await.expect("grant").expect("free now");
    assert!(next.token > grant.token);
}

/// A member driven by hand: the group is made (and a second layout
/// refused), the member renews, claims every free bucket, reads the held
/// buckets' events, checkpoints under its epoch (a stale epoch is
/// `NotHeld`), gives a bucket to a second member, and leaves.
pub async fn a_group_member_driven_by_hand_claims_reads_checkpoints_and_leaves<
    H: RuntimeHarness,
>(
    h: &H,
) {
    let store = h.store();
    let group = store.group("remote");
    group.ensure("remote-orders", 4).await.expect("ensure");
    group.ensure("remote-orders", 4).await.expect("same again");
    let other = group
        .ensure("remote-orders", 8)
        .await
        .expect_err("another bucket count");
    assert_eq!(other.kind(), ErrorKind::GroupMismatch, "{other}");
    let offsets = store
        .stream("remote-orders")
        .publish_batch((0..8).map(|i| (Some(format!("k{i}")), i)))
        .await
        .expect("publish");
    let ttl = Duration::from_secs(30);
    let a = group.member("a");
    let renewal = a.renew(ttl).await.expect("renew");
    assert_eq!((renewal.buckets, renewal.held.len()), (4, 0));
    let leases = a.claim(ttl, 4).await.expect("claim");
    assert_eq!(leases.len(), 4);
    let buckets: Vec<u32> = leases.iter().map(|l| l.bucket).collect();
    // Events become visible to readers once older transactions end
    // (PostgreSQL): read until all are there, bounded.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let events = loop {
        let got = a.read(buckets.clone(), 0, 100).await.expect("read");
        if got.len() == offsets.len() || tokio::time::Instant::now() > deadline {
            break got;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let mut read: Vec<i64> = events.iter().map(|e| e.event.offset).collect();
    read.sort_unstable();
    assert_eq!(read, offsets);
    let first = &events[0];
    let lease = leases
        .iter()
        .find(|l| l.bucket == first.bucket)
        .expect("held");
    let saved = a
        .checkpoint(first.bucket, lease.epoch, first.event.offset)
        .await
        .expect("checkpoint");
    assert_eq!(saved, first.event.offset);
    let stale = a
        .checkpoint(first.bucket, lease.epoch + 1, first.event.offset)
        .await
        .expect_err("not this epoch");
    assert_eq!(stale.kind(), ErrorKind::NotHeld, "{stale}");

    let b = group.member("b");
    assert!(b.claim(ttl, 4).await.expect("claim").is_empty(), "all held");
    assert_eq!(a.release(vec![buckets[0]]).await.expect("release"), 1);
    let taken = b.claim(ttl, 4).await.expect("claim");
    assert_eq!(
        taken.iter().map(|l| l.bucket).collect::<Vec<_>>(),
        [buckets[0]]
    );
    let status = group.status_without_lag().await.expect("status");
    let owned_by_b = status
        .buckets
        .iter()
        .filter(|s| s.owner.as_deref() == Some("b"))
        .count();
    assert_eq!(owned_by_b, 1);
    let handoffs = group.handoffs(10).await.expect("handoffs");
    let given = handoffs
        .recent
        .iter()
        .find(|x| x.bucket == buckets[0] && x.to_worker == "b")
        .expect("the bucket a gave b is recorded");
    assert_eq!(
        (given.from_worker.as_deref(), given.cause),
        (Some("a"), alkstore::group::HandoffCause::Rebalance)
    );
    assert_eq!(a.leave().await.expect("leave"), 3);
    assert_eq!(b.leave().await.expect("leave"), 1);
}

#[doc(hidden)]
#[macro_export]
macro_rules! __runtime_remote {
    ($then:path, $args:tt) => {
        $then! { @rows $args runtime::remote [
            jobs_by_id_are_claimed_waiting_settled_and_administered,
            a_stream_read_waits_pages_back_and_commits_compare_and_set,
            a_lock_grant_is_renewed_and_released_by_its_token,
            a_group_member_driven_by_hand_claims_reads_checkpoints_and_leaves,
        ] }
    };
}
