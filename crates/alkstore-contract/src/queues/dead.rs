//! Dead letters: listed, requeued, purged, pruned, in bounded batches.

use alkstore_core::queue::JobFailParams;
use alkstore_core::Writes as _;
use alkstore_core::{
    DeadListParams, DeadSelect, Engine, ErrorKind, JobState, QueueAdmin, QueueOpts,
};

use super::support::{claim, enqueue_one, job, kind, secs};
use crate::Harness;

/// Dead letters can be listed in pages, requeued with fresh attempts, and purged.
pub async fn dead_letters_list_requeue_purge<H: Harness>(h: &H) {
    let e = h.engine();
    e.job_enqueue(
        (0..5)
            .map(|i| job("dl", &i.to_string()))
            .collect::<Vec<_>>(),
    )
    .await
    .expect("enqueue");
    enqueue_one(e, job("dl-other", "o")).await;
    for j in claim(e, "dl", "w", 5)
        .await
        .into_iter()
        .chain(claim(e, "dl-other", "w", 1).await)
    {
        e.job_fail(JobFailParams::new(j.claim(), "x"))
            .await
            .expect("fail");
    }
    let page1 = e
        .dead_list(DeadListParams::new(3).queue("dl"))
        .await
        .expect("list");
    assert_eq!(page1.len(), 3);
    let page2 = e
        .dead_list(DeadListParams::new(3).queue("dl").after_id(page1[2].id))
        .await
        .expect("list");
    assert_eq!(page2.len(), 2);
    assert!(page1
        .iter()
        .chain(&page2)
        .all(|d| d.queue == "dl" && d.state == JobState::Dead));

    let one = page1[0].id;
    assert_eq!(
        e.dead_requeue(DeadSelect::ids(vec![one]))
            .await
            .expect("requeue"),
        1
    );
    let info = e.job_get(one).await.expect("get").expect("live again");
    assert_eq!((info.state, info.attempts), (JobState::Pending, 0));
    let j = claim(e, "dl", "w", 5).await;
    assert_eq!(j.len(), 1);
    assert_eq!(j[0].id, one);

    assert_eq!(
        e.dead_purge(DeadSelect::queue("dl")).await.expect("purge"),
        4
    );
    assert_eq!(e.queue_stats("dl").await.expect("stats").dead, 0);
    assert_eq!(
        e.queue_stats("dl-other").await.expect("stats").dead,
        1,
        "other queue untouched"
    );
    assert_eq!(
        e.dead_requeue(DeadSelect::queue("dl-other"))
            .await
            .expect("requeue"),
        1
    );
    assert_eq!(e.queue_stats("dl-other").await.expect("stats").ready, 1);
}

/// Dead letters past their queue's retention are pruned by the sweep.
pub async fn dead_letter_retention_sweep<H: Harness>(h: &H) {
    let e = h.engine();
    let short = QueueOpts {
        dead_letter_retention: Some(secs(60)),
        ..QueueOpts::default()
    };
    let forever = QueueOpts {
        dead_letter_retention: None,
        ..QueueOpts::default()
    };
    enqueue_one(e, job("ret", "short").with_queue_opts(short)).await;
    enqueue_one(e, job("ret", "forever").with_queue_opts(forever)).await;
    for j in claim(e, "ret", "w", 2).await {
        e.job_fail(JobFailParams::new(j.claim(), "x"))
            .await
            .expect("fail");
    }
    h.clock().advance(secs(59));
    assert_eq!(e.sweep().await.expect("sweep").dead_pruned, 0);
    h.clock().advance(secs(1));
    assert_eq!(e.sweep().await.expect("sweep").dead_pruned, 1);
    let left = e
        .dead_list(DeadListParams::new(10).queue("ret"))
        .await
        .expect("list");
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].payload, b"forever");
}

/// Requeue and purge take a batch limit, so bulk work runs in bounded
/// transactions; `dead_count` tells how many a selection matches.
pub async fn dead_letters_in_bounded_batches<H: Harness>(h: &H) {
    let e = h.engine();
    e.job_enqueue(
        (0..7)
            .map(|i| job("bulk", &i.to_string()))
            .collect::<Vec<_>>(),
    )
    .await
    .expect("enqueue");
    for j in claim(e, "bulk", "w", 7).await {
        e.job_fail(JobFailParams::new(j.claim(), "x"))
            .await
            .expect("fail");
    }
    let all = DeadSelect::queue("bulk");
    assert_eq!(e.dead_count(all.clone()).await.expect("count"), 7);
    assert_eq!(
        e.dead_requeue(all.clone().limit(3)).await.expect("requeue"),
        3
    );
    assert_eq!(e.dead_count(all.clone()).await.expect("count"), 4);
    assert_eq!(e.queue_stats("bulk").await.expect("stats").ready, 3);
    assert_eq!(e.dead_purge(all.clone().limit(3)).await.expect("purge"), 3);
    assert_eq!(e.dead_purge(all.clone().limit(3)).await.expect("purge"), 1);
    assert_eq!(e.dead_purge(all.clone().limit(3)).await.expect("purge"), 0);
    assert_eq!(
        kind(e.dead_purge(all.limit(0)).await),
        ErrorKind::InvalidInput
    );
    let _ = h;
}

/// The rows above, for [`contract_suite!`](crate::contract_suite): list each
/// `pub async fn …<H: Harness>` here, next to where it is written.
#[doc(hidden)]
#[macro_export]
macro_rules! __queues_dead {
    ($then:path, $args:tt) => {
        $then! { @rows $args queues::dead [
            dead_letters_list_requeue_purge,
            dead_letter_retention_sweep,
            dead_letters_in_bounded_batches,
        ] }
    };
}
