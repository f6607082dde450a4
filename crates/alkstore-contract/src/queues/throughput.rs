//! Throughput: the store counts every ack, retry and failure per queue in
//! buckets of its clock, whoever finished the job.

use alkstore_core::queue::JobFailParams;
use alkstore_core::queue::JobSnoozeParams;
use alkstore_core::Writes as _;
use std::time::Duration;

use alkstore_core::queue::{QueueDepthParams, THROUGHPUT_COARSE_S, THROUGHPUT_HISTORY};
use alkstore_core::{
    Clock, DeadSelect, Engine, ErrorKind, JobRetryParams, QueueAdmin, QueueEngine, QueueOpts,
    QueueThroughput, QueueThroughputParams, QueueTotals, ThroughputBucket, THROUGHPUT_BUCKET_S,
    THROUGHPUT_RETENTION,
};

use super::support::{claim, enqueue_ids, job, kind, secs};
use crate::{Harness, Where};

fn bucket(queue: &str, start: i64, completed: u64, failed: u64) -> ThroughputBucket {
    ThroughputBucket {
        queue: queue.to_string(),
        start,
        span_s: THROUGHPUT_BUCKET_S,
        completed,
        failed,
    }
}

fn totals(queue: &str, completed: u64, failed: u64) -> QueueTotals {
    QueueTotals {
        queue: queue.to_string(),
        completed,
        failed,
    }
}

async fn throughput<E: QueueAdmin + alkstore_core::AllOps>(
    e: &E,
    queue: Option<&str>,
    window: Duration,
) -> QueueThroughput {
    let params = match queue {
        Some(q) => QueueThroughputParams::queue(q, window),
        None => QueueThroughputParams::every_queue(window),
    };
    e.queue_throughput(params).await.expect("throughput")
}

/// Acks count as completed and retries and failures as failed, in the
/// bucket of the store's clock, per queue; acks of claims no longer held,
/// snoozes and releases count nothing.
pub async fn throughput_counts_each_finished_job<H: Harness>(h: &H, at: Where) {
    let e = h.engine();
    let w = crate::writer(h, at);
    // Start at a bucket's first second, so the steps below stay in it.
    let now = h.clock().now();
    h.clock().advance(secs(
        (THROUGHPUT_BUCKET_S - now.rem_euclid(THROUGHPUT_BUCKET_S)).unsigned_abs(),
    ));
    let b0 = h.clock().now();
    let kept = QueueOpts {
        keep_completed: Some(secs(600)),
        ..QueueOpts::default()
    };
    let mut jobs: Vec<_> = (0..6).map(|i| job("tp-a", &i.to_string())).collect();
    jobs.push(job("tp-a", "kept").with_queue_opts(kept));
    enqueue_ids(e, jobs).await;
    enqueue_ids(e, vec![job("tp-b", "1"), job("tp-b", "2")]).await;
    let a = claim(e, "tp-a", "w", 7).await;
    assert_eq!(a.len(), 7);
    // Three acked in one batch (one of a queue that keeps completed jobs),
    // one retried, one failed, one snoozed, one released.
    let acked = w
        .job_ack(vec![a[0].claim(), a[1].claim(), a[6].claim()])
        .await
        .expect("ack");
    assert_eq!(acked, vec![true, true, true]);
    w.job_retry(JobRetryParams::new(a[2].claim(), "boom").delay(Duration::ZERO))
        .await
        .expect("retry");
    assert!(w
        .job_fail(JobFailParams::new(a[3].claim(), "bad"))
        .await
        .expect("fail"));
    w.job_snooze(JobSnoozeParams::new(a[4].claim(), secs(1)))
        .await
        .expect("snooze");
    assert!(e.job_release(a[5].claim()).await.expect("release"));
    // No longer held: refused, and not counted.
    use crate::places::assert_lost;
    assert_lost(at, w.job_ack(vec![a[0].claim()]).await, vec![false]);
    let again = JobFailParams::new(a[3].claim(), "again");
    assert_lost(at, w.job_fail(again).await, false);
    for j in claim(e, "tp-b", "w", 2).await {
        assert_eq!(w.job_ack(vec![j.claim()]).await.expect("ack"), vec![true]);
    }
    let got = throughput(e, None, secs(60)).await;
    assert_eq!(got.now, b0);
    assert_eq!(
        got.buckets,
        vec![bucket("tp-a", b0, 3, 2), bucket("tp-b", b0, 2, 0)]
    );
    assert_eq!(got.totals, vec![totals("tp-a", 3, 2), totals("tp-b", 2, 0)]);

    // The next bucket: the retried job runs again and completes.
    h.clock().advance(secs(THROUGHPUT_BUCKET_S.unsigned_abs()));
    let again = claim(e, "tp-a", "w", 10).await;
    let retried = again.iter().find(|j| j.id == a[2].id).expect("retried job");
    w.job_ack(vec![retried.claim()]).await.expect("ack");
    let b1 = b0 + THROUGHPUT_BUCKET_S;
    let one = throughput(e, Some("tp-a"), secs(60)).await;
    assert_eq!(
        one.buckets,
        vec![bucket("tp-a", b0, 3, 2), bucket("tp-a", b1, 1, 0)]
    );
    assert_eq!(one.totals, vec![totals("tp-a", 4, 2)]);
    // A window of one bucket holds only the newest.
    let last = throughput(e, Some("tp-a"), secs(THROUGHPUT_BUCKET_S.unsigned_abs())).await;
    assert_eq!(last.buckets, vec![bucket("tp-a", b1, 1, 0)]);
    assert_eq!(last.totals, vec![totals("tp-a", 4, 2)]);
    let none = throughput(e, Some("tp-none"), secs(60)).await;
    assert!(none.buckets.is_empty() && none.totals.is_empty());
}

/// Buckets past the retention leave the window and are folded into the
/// totals by the sweep; the totals never shrink. A drained queue stays in
/// the queue list while it has recent buckets.
pub async fn throughput_totals_survive_the_sweep<H: Harness>(h: &H) {
    let e = h.engine();
    enqueue_ids(e, vec![job("tp-fold", "1"), job("tp-fold", "2")]).await;
    let got = claim(e, "tp-fold", "w", 2).await;
    e.job_ack(vec![got[0].claim()]).await.expect("ack");
    e.job_fail(JobFailParams::new(got[1].claim(), "x"))
        .await
        .expect("fail");
    assert_eq!(
        e.dead_purge(DeadSelect::queue("tp-fold"))
            .await
            .expect("purge"),
        1
    );
    assert!(
        e.queue_list()
            .await
            .expect("list")
            .contains(&"tp-fold".to_string()),
        "a queue drained within the hour is still listed"
    );
    h.clock()
        .advance(THROUGHPUT_RETENTION + secs(THROUGHPUT_BUCKET_S.unsigned_abs()));
    let late = throughput(e, Some("tp-fold"), THROUGHPUT_RETENTION).await;
    assert!(late.buckets.is_empty(), "{late:?}");
    assert_eq!(late.totals, vec![totals("tp-fold", 1, 1)]);
    e.sweep().await.expect("sweep");
    let folded = throughput(e, Some("tp-fold"), THROUGHPUT_RETENTION).await;
    assert!(folded.buckets.is_empty());
    assert_eq!(folded.totals, vec![totals("tp-fold", 1, 1)]);
    // Past the hour, the bucket lives on in a coarse one for the week.
    let coarse = throughput(e, Some("tp-fold"), 2 * THROUGHPUT_RETENTION).await;
    assert_eq!(coarse.buckets.len(), 1, "{coarse:?}");
    let c = &coarse.buckets[0];
    assert_eq!(
        (c.span_s, c.completed, c.failed),
        (THROUGHPUT_COARSE_S, 1, 1)
    );
    assert_eq!(c.start % THROUGHPUT_COARSE_S, 0);
    assert_eq!(coarse.totals, vec![totals("tp-fold", 1, 1)]);
    assert!(!e
        .queue_list()
        .await
        .expect("list")
        .contains(&"tp-fold".to_string()));
    // Counting goes on on top of the folded totals.
    enqueue_ids(e, vec![job("tp-fold", "3")]).await;
    let j = claim(e, "tp-fold", "w", 1).await;
    e.job_ack(vec![j[0].claim()]).await.expect("ack");
    e.sweep().await.expect("sweep");
    let after = throughput(e, Some("tp-fold"), secs(60)).await;
    assert_eq!(after.totals, vec![totals("tp-fold", 2, 1)]);
    assert_eq!(after.buckets.len(), 1);
    // Past the week, coarse buckets fold into the totals.
    h.clock()
        .advance(THROUGHPUT_HISTORY + secs(THROUGHPUT_BUCKET_S.unsigned_abs()));
    e.sweep().await.expect("sweep");
    let old = throughput(e, Some("tp-fold"), THROUGHPUT_HISTORY).await;
    assert!(old.buckets.is_empty(), "{old:?}");
    assert_eq!(old.totals, vec![totals("tp-fold", 2, 1)]);
}

/// Each sweep samples every queue's depth; samples are kept a week and
/// read back oldest first; a bad window is refused.
pub async fn the_sweep_keeps_a_week_of_depth_samples<H: Harness>(h: &H) {
    let e = h.engine();
    let ids = enqueue_ids(e, vec![job("dp", "1"), job("dp", "2"), job("dp", "3")]).await;
    let got = claim(e, "dp", "w", 1).await;
    e.job_fail(JobFailParams::new(got[0].claim(), "x"))
        .await
        .expect("fail");
    assert_eq!(ids.len(), 3);
    e.sweep().await.expect("sweep");
    let first_at = h.clock().now();
    h.clock().advance(secs(60));
    claim(e, "dp", "w", 1).await;
    e.sweep().await.expect("sweep");
    let samples = e
        .queue_depth_history(QueueDepthParams::new(Some("dp".into()), secs(3_600)))
        .await
        .expect("depth");
    let got: Vec<(i64, u64, u64, u64)> = samples
        .iter()
        .map(|s| (s.at, s.ready, s.processing, s.dead))
        .collect();
    assert_eq!(got, vec![(first_at, 2, 0, 1), (first_at + 60, 1, 1, 1)]);
    let every = e
        .queue_depth_history(QueueDepthParams::new(None, secs(3_600)))
        .await
        .expect("depth");
    assert_eq!(every.len(), 2, "one queue so far: {every:?}");
    h.clock().advance(THROUGHPUT_HISTORY);
    e.sweep().await.expect("sweep");
    let kept = e
        .queue_depth_history(QueueDepthParams::new(Some("dp".into()), THROUGHPUT_HISTORY))
        .await
        .expect("depth");
    assert_eq!(kept.len(), 1, "older samples dropped: {kept:?}");
    for window in [Duration::ZERO, THROUGHPUT_HISTORY + secs(1)] {
        assert_eq!(
            kind(
                e.queue_depth_history(QueueDepthParams::new(None, window))
                    .await
            ),
            ErrorKind::InvalidInput
        );
    }
}

/// A window outside 1 s ..= the history (a week), or a bad queue name, is
/// refused.
pub async fn throughput_refuses_bad_input<H: Harness>(h: &H) {
    let e = h.engine();
    for window in [
        Duration::ZERO,
        Duration::from_millis(999),
        THROUGHPUT_HISTORY + secs(1),
    ] {
        assert_eq!(
            kind(
                e.queue_throughput(QueueThroughputParams::every_queue(window))
                    .await
            ),
            ErrorKind::InvalidInput
        );
    }
    assert_eq!(
        kind(
            e.queue_throughput(QueueThroughputParams::queue("", secs(60)))
                .await
        ),
        ErrorKind::InvalidInput
    );
    assert!(!e.is_closed());
}

/// The rows above, for [`contract_suite!`](crate::contract_suite): list each
/// `pub async fn …<H: Harness>` here, next to where it is written.
#[doc(hidden)]
#[macro_export]
macro_rules! __queues_throughput {
    ($then:path, $args:tt) => {
        $then! { @rows $args queues::throughput [
            throughput_totals_survive_the_sweep,
            throughput_refuses_bad_input,
            the_sweep_keeps_a_week_of_depth_samples,
        ] }
        $then! { @places $args queues::throughput [
            throughput_counts_each_finished_job,
        ] }
    };
}
