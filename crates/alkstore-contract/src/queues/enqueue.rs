//! Enqueue: jobs read back as written, batches, unique keys, stamped options.

use alkstore_core::queue::JobFailParams;
use alkstore_core::Writes as _;
use std::collections::HashSet;

use alkstore_core::{
    Clock, Engine, EnqueueOpts, Enqueued, ErrorKind, JobRetryParams, JobState, NewJob, QueueAdmin,
    QueueOpts, RetryOutcome,
};

use super::support::{claim, enqueue_at, job, kind, live_count, secs};
use crate::{writer, Harness, Where};

/// An enqueued job can be read back, pending, with its options stamped.
pub async fn enqueue_then_get<H: Harness>(h: &H, at: Where) {
    let e = h.engine();
    let id = enqueue_at(
        h,
        at,
        job("q", "hello").with_opts(EnqueueOpts::default().priority(3)),
    )
    .await;
    let info = e.job_get(id).await.expect("get").expect("job exists");
    assert_eq!(info.id, id);
    assert_eq!(info.queue, "q");
    assert_eq!(info.state, JobState::Pending);
    assert_eq!(info.payload, b"hello");
    assert_eq!(info.priority, 3);
    assert_eq!(info.attempts, 0);
    assert_eq!(info.max_attempts, 3);
    assert!(e.job_get(id + 1_000_000).await.expect("get").is_none());
}

/// Payloads are stored byte for byte, including NUL and invalid UTF-8.
pub async fn payload_bytes_are_kept_exactly<H: Harness>(h: &H, at: Where) {
    let e = h.engine();
    let bytes: Vec<u8> = (0..=255u8).chain([0, 0xff, 0xfe, 0x80]).collect();
    let id = enqueue_at(h, at, NewJob::new("bytes", bytes.clone())).await;
    let got = claim(e, "bytes", "w", 1).await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].id, id);
    assert_eq!(got[0].payload, bytes);
    let empty = enqueue_at(h, at, NewJob::new("bytes", Vec::new())).await;
    assert_eq!(
        e.job_get(empty)
            .await
            .expect("get")
            .expect("exists")
            .payload,
        Vec::<u8>::new()
    );
}

/// A batch with one invalid job writes nothing; a valid batch writes all.
pub async fn batch_enqueue_is_all_or_nothing<H: Harness>(h: &H, at: Where) {
    let e = h.engine();
    let mut batch: Vec<NewJob> = (0..10).map(|i| job("b", &i.to_string())).collect();
    batch.push(job("", "no queue"));
    assert_eq!(
        kind(writer(h, at).job_enqueue(batch).await),
        ErrorKind::InvalidInput
    );
    assert_eq!(live_count(e, "b").await, 0);

    let batch: Vec<NewJob> = (0..250).map(|i| job("b", &i.to_string())).collect();
    let out = writer(h, at).job_enqueue(batch).await.expect("batch");
    assert_eq!(out.len(), 250);
    let ids: HashSet<i64> = out.iter().map(|o| o.id()).collect();
    assert_eq!(ids.len(), 250, "ids are distinct");
    assert!(
        out.windows(2).all(|w| w[0].id() < w[1].id()),
        "ids grow in batch order"
    );
    assert_eq!(live_count(e, "b").await, 250);
}

/// At most one live job per queue and unique key; the key frees on ack.
pub async fn unique_key_allows_one_live_job<H: Harness>(h: &H, at: Where) {
    let e = h.engine();
    let k = || job("u", "x").with_opts(EnqueueOpts::default().unique_key("user-1"));
    let first = writer(h, at).job_enqueue(vec![k()]).await.expect("enqueue")[0];
    let Enqueued::Inserted(id) = first else {
        panic!("first is inserted: {first:?}")
    };
    assert_eq!(
        writer(h, at).job_enqueue(vec![k()]).await.expect("enqueue"),
        vec![Enqueued::Duplicate(id)]
    );
    let batch = writer(h, at)
        .job_enqueue(vec![k(), job("u", "free")])
        .await
        .expect("batch");
    assert_eq!(batch[0], Enqueued::Duplicate(id));
    assert!(matches!(batch[1], Enqueued::Inserted(_)));
    let other_queue = job("u2", "x").with_opts(EnqueueOpts::default().unique_key("user-1"));
    assert!(matches!(
        writer(h, at)
            .job_enqueue(vec![other_queue])
            .await
            .expect("enqueue")[0],
        Enqueued::Inserted(_)
    ));
    let in_batch = writer(h, at)
        .job_enqueue(vec![
            job("u3", "a").with_opts(EnqueueOpts::default().unique_key("k")),
            job("u3", "b").with_opts(EnqueueOpts::default().unique_key("k")),
        ])
        .await
        .expect("batch");
    assert_eq!(in_batch[1], Enqueued::Duplicate(in_batch[0].id()));
    let j = claim(e, "u", "w", 10).await;
    let keyed = j.iter().find(|j| j.id == id).expect("keyed job claimed");
    assert!(
        matches!(
            writer(h, at).job_enqueue(vec![k()]).await.expect("enqueue")[0],
            Enqueued::Duplicate(_)
        ),
        "still live while processing"
    );
    e.job_ack(vec![keyed.claim()]).await.expect("ack");
    assert!(matches!(
        writer(h, at).job_enqueue(vec![k()]).await.expect("enqueue")[0],
        Enqueued::Inserted(_)
    ));
}

/// Every option of a batch enqueue is stamped on each row, whether the batch
/// is uniform (jobs differ only in payload) or mixed.
pub async fn batch_stamps_every_option<H: Harness>(h: &H, at: Where) {
    let e = h.engine();
    let now = h.clock().now();
    let qopts = QueueOpts {
        visibility_timeout: secs(45),
        max_attempts: 9,
        backoff_base: secs(2),
        dead_letter_retention: None,
        keep_completed: Some(secs(600)),
    };
    let opts = EnqueueOpts::default()
        .priority(4)
        .delay(secs(30))
        .max_attempts(7)
        .expires_in(secs(100));
    let uniform: Vec<NewJob> = (0..3)
        .map(|i| {
            job("stamp", &i.to_string())
                .with_opts(opts.clone())
                .with_queue_opts(qopts.clone())
        })
        .collect();
    let mut mixed = uniform.clone();
    mixed[1].opts.priority = 5;
    for batch in [uniform, mixed] {
        let payloads: Vec<Vec<u8>> = batch.iter().map(|j| j.payload.clone()).collect();
        let ids: Vec<i64> = writer(h, at)
            .job_enqueue(batch)
            .await
            .expect("enqueue")
            .iter()
            .map(|o| o.id())
            .collect();
        for (id, payload) in ids.into_iter().zip(payloads) {
            let info = e.job_get(id).await.expect("get").expect("exists");
            assert_eq!(info.payload, payload, "each returned id is its own job's");
            assert!(info.priority == 4 || info.priority == 5);
            assert_eq!(info.run_at, now + 30);
            assert_eq!(info.max_attempts, 7);
            assert_eq!(info.expires_at, Some(now + 130));
            assert_eq!(info.created_at, now);
        }
    }
    h.clock().advance(secs(30));
    let got = claim(e, "stamp", "w", 10).await;
    assert_eq!(got.len(), 6);
    assert_eq!(got[0].priority, 5, "priority order across both batches");
    assert!(got
        .iter()
        .all(|j| j.claim_expires_at == h.clock().now() + 45));
    // The stamped backoff base (2 s) drives the first retry's delay.
    let out = e
        .job_retry(JobRetryParams::new(got[1].claim(), "x"))
        .await
        .expect("retry");
    let RetryOutcome::Scheduled(at) = out else {
        panic!("{out:?}")
    };
    assert_eq!(at - h.clock().now(), 2, "backoff base stamped");
    // Keep-completed stamped on both batches: acked jobs stay as completed.
    let acks = e
        .job_ack(vec![got[3].claim(), got[4].claim()])
        .await
        .expect("ack");
    assert_eq!(acks, vec![true, true]);
    for j in &got[3..5] {
        let info = e.job_get(j.id).await.expect("get").expect("kept");
        assert_eq!(info.state, JobState::Completed);
    }
    // No retention stamped: a dead letter survives any sweep.
    assert!(e
        .job_fail(JobFailParams::new(got[2].claim(), "x"))
        .await
        .expect("fail"));
    h.clock().advance(secs(10 * 365 * 24 * 3600));
    e.sweep().await.expect("sweep");
    let kept = e.job_get(got[2].id).await.expect("get").expect("kept");
    assert_eq!(kept.state, JobState::Dead);
}

/// Ids rise and are never handed out twice: not after the newest job is
/// acked or dead-lettered (its id must not come back while it names a dead
/// letter, and a stale claim on it must not match a new job), not within a
/// batch, and a requeued dead letter keeps its own.
pub async fn job_ids_rise_and_are_never_reused<H: Harness>(h: &H, at: Where) {
    use alkstore_core::DeadSelect;
    let e = h.engine();
    let acked = enqueue_at(h, at, job("ids", "a")).await;
    let a = claim(e, "ids", "w", 1).await.remove(0);
    assert_eq!(e.job_ack(vec![a.claim()]).await.expect("ack"), vec![true]);
    let dead = enqueue_at(h, at, job("ids", "b")).await;
    assert!(dead > acked, "{dead} after the acked {acked}");
    let b = claim(e, "ids", "w", 1).await.remove(0);
    assert!(e
        .job_fail(JobFailParams::new(b.claim(), "x"))
        .await
        .expect("fail"));
    let batch: Vec<i64> = writer(h, at)
        .job_enqueue(vec![job("ids", "c"), job("ids", "d"), job("ids", "e")])
        .await
        .expect("enqueue")
        .iter()
        .map(|o| o.id())
        .collect();
    assert!(batch[0] > dead, "{batch:?} after the dead {dead}");
    assert!(batch.windows(2).all(|w| w[0] < w[1]), "{batch:?}");
    // A stale claim on the acked job matches nothing new.
    assert_eq!(e.job_ack(vec![a.claim()]).await.expect("ack"), vec![false]);
    assert_eq!(
        e.dead_requeue(DeadSelect::ids(vec![dead]))
            .await
            .expect("requeue"),
        1
    );
    let back = e.job_get(dead).await.expect("get").expect("live again");
    assert_eq!((back.id, back.payload.as_slice()), (dead, &b"b"[..]));
    let last = enqueue_at(h, at, job("ids", "f")).await;
    assert!(last > batch[2], "{last} after {batch:?}");
}

/// The rows above, for [`contract_suite!`](crate::contract_suite): list each
/// `pub async fn …<H: Harness>` here, next to where it is written.
#[doc(hidden)]
#[macro_export]
macro_rules! __queues_enqueue {
    ($then:path, $args:tt) => {
        $then! { @places $args queues::enqueue [
            enqueue_then_get,
            payload_bytes_are_kept_exactly,
            batch_enqueue_is_all_or_nothing,
            unique_key_allows_one_live_job,
            batch_stamps_every_option,
            job_ids_rise_and_are_never_reused,
        ] }
    };
}
