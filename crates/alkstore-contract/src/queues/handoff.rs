//! `job_enqueue_claimed`: one job inserted already claimed for a worker
//! when nothing is ahead of it (the in-process hand-off from an enqueue
//! call to an idle worker), pending like any enqueued job otherwise.

use alkstore_core::Writes as _;
use alkstore_core::{
    Engine, EnqueueOpts, Enqueued, ErrorKind, JobEnqueueClaimedParams, NewJob, QueueAdmin,
    QueueEngine, QueueOpts, Wake,
};

use super::support::{claim, enqueue_one, job, kind, live_count, secs};
use crate::Harness;

/// Whether a hint naming `queue` is among those sent so far (engines may
/// also send hints for everything, e.g. when their listener connects).
fn hinted(hints: &mut tokio::sync::broadcast::Receiver<Wake>, queue: &str) -> bool {
    let mut named = false;
    while let Ok(w) = hints.try_recv() {
        named |= w == Wake::Queue(queue.into());
    }
    named
}

fn claimed_for(j: NewJob, worker: &str) -> JobEnqueueClaimedParams {
    JobEnqueueClaimedParams::new(j, worker)
}

/// On an idle queue the job comes back claimed for the worker, as a claim
/// would hand it out (first attempt, the queue's claim length, a token
/// that acks it); nobody else can claim it, and no wake hint goes out.
pub async fn a_job_enqueued_on_an_idle_queue_comes_back_claimed<H: Harness>(h: &H) {
    let e = h.engine();
    let mut hints = e.wake_subscribe();
    let opts = QueueOpts {
        visibility_timeout: secs(45),
        ..QueueOpts::default()
    };
    let out = e
        .job_enqueue_claimed(claimed_for(job("mail", "a").with_queue_opts(opts), "w1"))
        .await
        .expect("enqueue claimed");
    let Enqueued::Inserted(id) = out.enqueued else {
        panic!("a new job: {:?}", out.enqueued);
    };
    let got = out.claimed.expect("claimed on an idle queue");
    assert_eq!((got.id, got.queue.as_str()), (id, "mail"));
    assert_eq!(got.payload, b"a");
    assert_eq!((got.attempt, got.worker.as_str()), (1, "w1"));
    assert_eq!(got.claim_expires_at - got.claimed_at, 45);
    assert!(!hinted(&mut hints, "mail"), "a claimed job wakes nobody");
    assert!(claim(e, "mail", "w2", 10).await.is_empty(), "held by w1");
    let stats = e.queue_stats("mail").await.expect("stats");
    assert_eq!((stats.ready, stats.processing), (0, 1));
    assert_eq!(e.job_ack(vec![got.claim()]).await.expect("ack"), [true]);
    assert_eq!(live_count(e, "mail").await, 0);
}

/// A claim on insert is an ordinary claim: released, the job is pending
/// again with its attempt given back; left to expire, it is handed out
/// again like any expired claim.
pub async fn a_job_claimed_on_insert_is_released_and_rescued_like_any_claim<H: Harness>(h: &H) {
    let e = h.engine();
    let got = e
        .job_enqueue_claimed(claimed_for(job("mail", "a"), "w1"))
        .await
        .expect("enqueue claimed")
        .claimed
        .expect("claimed");
    assert!(e.job_release(got.claim()).await.expect("release"));
    let again = claim(e, "mail", "w2", 10).await;
    assert_eq!(again.len(), 1);
    assert_eq!((again[0].id, again[0].attempt), (got.id, 1));
    assert!(
        !e.job_ack(vec![got.claim()]).await.expect("stale ack")[0],
        "the released claim no longer acks"
    );
    let lapsing = e
        .job_enqueue_claimed(claimed_for(job("sms", "b"), "w1"))
        .await
        .expect("enqueue claimed")
        .claimed
        .expect("claimed");
    h.clock().advance(secs(301));
    let rescued = claim(e, "sms", "w3", 10).await;
    assert_eq!(rescued.len(), 1, "the expired claim is handed out again");
    assert_eq!((rescued[0].id, rescued[0].attempt), (lapsing.id, 2));
}

/// The job is left pending, woken for like any enqueued job, when another
/// due job of its queue is pending (a claim takes that one first), when
/// its queue is paused, when it is not due yet, and when it has a unique
/// key (it may be a duplicate).
pub async fn a_job_with_anything_ahead_of_it_is_left_pending<H: Harness>(h: &H) {
    let e = h.engine();
    let first = enqueue_one(e, job("mail", "first")).await;
    let mut hints = e.wake_subscribe();
    let out = e
        .job_enqueue_claimed(claimed_for(job("mail", "second"), "w1"))
        .await
        .expect("enqueue claimed");
    assert!(out.claimed.is_none(), "a due job is ahead");
    assert!(hinted(&mut hints, "mail"), "a pending job is woken for");
    let order: Vec<i64> = claim(e, "mail", "w2", 10)
        .await
        .iter()
        .map(|j| j.id)
        .collect();
    assert_eq!(order, [first, out.enqueued.id()]);

    assert!(e.queue_pause("sms").await.expect("pause"));
    let paused = e
        .job_enqueue_claimed(claimed_for(job("sms", "p"), "w1"))
        .await
        .expect("enqueue claimed");
    assert!(paused.claimed.is_none(), "the queue is paused");
    assert!(e.queue_resume("sms").await.expect("resume"));
    assert_eq!(claim(e, "sms", "w2", 10).await[0].id, paused.enqueued.id());

    let later = job("push", "later").with_opts(EnqueueOpts::default().delay(secs(60)));
    let later = e
        .job_enqueue_claimed(claimed_for(later, "w1"))
        .await
        .expect("enqueue claimed");
    assert!(later.claimed.is_none(), "not due yet");
    assert!(claim(e, "push", "w2", 10).await.is_empty());
    h.clock().advance(secs(61));
    assert_eq!(claim(e, "push", "w2", 10).await[0].id, later.enqueued.id());

    let keyed = || {
        job("keyed", "k").with_opts(EnqueueOpts {
            unique_key: Some("k1".into()),
            ..EnqueueOpts::default()
        })
    };
    let held = e
        .job_enqueue_claimed(claimed_for(keyed(), "w1"))
        .await
        .expect("enqueue claimed");
    assert!(held.claimed.is_none(), "a keyed job stays pending");
    let dup = e
        .job_enqueue_claimed(claimed_for(keyed(), "w1"))
        .await
        .expect("enqueue claimed");
    assert_eq!(dup.enqueued, Enqueued::Duplicate(held.enqueued.id()));
    assert!(dup.claimed.is_none());
    assert_eq!(live_count(e, "keyed").await, 1);
}

/// Bad input (no worker, a bad queue name, an oversized payload) is
/// refused with a typed error and writes nothing.
pub async fn a_bad_enqueue_claimed_writes_nothing<H: Harness>(h: &H) {
    let e = h.engine();
    let no_worker = e
        .job_enqueue_claimed(claimed_for(job("mail", "a"), ""))
        .await;
    assert_eq!(kind(no_worker), ErrorKind::InvalidInput);
    let bad_queue = e.job_enqueue_claimed(claimed_for(job("", "a"), "w1")).await;
    assert_eq!(kind(bad_queue), ErrorKind::InvalidInput);
    let huge = vec![b'x'; e.limits().max_payload_bytes + 1];
    let too_big = e
        .job_enqueue_claimed(claimed_for(NewJob::new("mail", huge), "w1"))
        .await;
    assert_eq!(kind(too_big), ErrorKind::PayloadTooLarge);
    assert_eq!(live_count(e, "mail").await, 0);
    assert!(e.queue_list().await.expect("queues").is_empty());
}

/// The rows above, for [`contract_suite!`](crate::contract_suite).
#[doc(hidden)]
#[macro_export]
macro_rules! __queues_handoff {
    ($then:path, $args:tt) => {
        $then! { @rows $args queues::handoff [
            a_job_enqueued_on_an_idle_queue_comes_back_claimed,
            a_job_claimed_on_insert_is_released_and_rescued_like_any_claim,
            a_job_with_anything_ahead_of_it_is_left_pending,
            a_bad_enqueue_claimed_writes_nothing,
        ] }
    };
}
