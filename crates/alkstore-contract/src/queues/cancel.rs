//! Cancel: pending jobs at once, running jobs cooperatively.

use alkstore_core::queue::JobFailParams;
use alkstore_core::queue::JobSnoozeParams;
use alkstore_core::Writes as _;
use alkstore_core::{
    CancelOutcome, DeadSelect, EnqueueOpts, Enqueued, JobRetryParams, JobState, QueueAdmin,
    QueueEngine, RetryOutcome,
};

use super::support::{claim, enqueue_ids, enqueue_one, job, secs};
use crate::Harness;

/// Cancel moves a pending job to dead as `cancelled` (so it is recorded and
/// can be requeued); cancelling it again or an unknown id finds nothing.
pub async fn cancel_pending_job_is_recorded<H: Harness>(h: &H) {
    let e = h.engine();
    let key = EnqueueOpts::default().unique_key("k");
    let id = enqueue_one(e, job("c", "x").with_opts(key.clone())).await;
    assert_eq!(
        e.job_cancel(id).await.expect("cancel"),
        CancelOutcome::Cancelled
    );
    assert_eq!(
        e.job_cancel(id).await.expect("cancel"),
        CancelOutcome::NotFound
    );
    assert_eq!(
        e.job_cancel(id + 1_000_000).await.expect("cancel"),
        CancelOutcome::NotFound
    );
    let info = e.job_get(id).await.expect("get").expect("dead row");
    assert_eq!(info.state, JobState::Dead);
    assert_eq!(info.dead_reason.as_deref(), Some("cancelled"));
    assert!(claim(e, "c", "w", 1).await.is_empty());
    assert!(
        matches!(
            e.job_enqueue(vec![job("c", "y").with_opts(key)])
                .await
                .expect("enqueue")[0],
            Enqueued::Inserted(_)
        ),
        "a cancelled job frees its unique key"
    );
    assert_eq!(
        e.dead_requeue(DeadSelect::ids(vec![id]))
            .await
            .expect("requeue"),
        0,
        "key taken again"
    );
}

/// Cancelling a running job flags it: the worker can see the request, an
/// ack still completes the job, and any other outcome (retry, fail, release,
/// snooze, an expired claim) ends it in dead as `cancelled`, never run again.
pub async fn cancel_running_job_is_cooperative<H: Harness>(h: &H) {
    let e = h.engine();
    let ids: Vec<i64> = enqueue_ids(e, (0..6).map(|i| job("cr", &i.to_string())).collect()).await;
    let got = claim(e, "cr", "w", 6).await;
    assert_eq!(
        e.job_cancel_requests(ids.clone()).await.expect("requests"),
        Vec::<i64>::new()
    );
    for id in &ids[..5] {
        assert_eq!(
            e.job_cancel(*id).await.expect("cancel"),
            CancelOutcome::Requested
        );
    }
    let mut asked = e.job_cancel_requests(ids.clone()).await.expect("requests");
    asked.sort_unstable();
    assert_eq!(asked, ids[..5].to_vec());
    let info = e.job_get(ids[0]).await.expect("get").expect("live");
    assert!(info.cancel_requested);
    assert_eq!(info.state, JobState::Processing);
    let by_id = |id: i64| got.iter().find(|j| j.id == id).expect("claimed").claim();

    assert_eq!(
        e.job_ack(vec![by_id(ids[0])]).await.expect("ack"),
        vec![true]
    );
    assert!(
        e.job_get(ids[0]).await.expect("get").is_none(),
        "finished anyway: acked"
    );
    let retried = e
        .job_retry(JobRetryParams::new(by_id(ids[1]), "stopped"))
        .await
        .expect("retry");
    assert_eq!(retried, RetryOutcome::Cancelled);
    assert!(e
        .job_fail(JobFailParams::new(by_id(ids[2]), "stopped"))
        .await
        .expect("fail"));
    assert!(e.job_release(by_id(ids[3])).await.expect("release"));
    assert_eq!(
        e.job_snooze(JobSnoozeParams::new(by_id(ids[4]), secs(5)))
            .await
            .expect("snooze"),
        None
    );
    for id in &ids[1..5] {
        let info = e.job_get(*id).await.expect("get").expect("dead row");
        assert_eq!(
            (info.state, info.dead_reason.as_deref()),
            (JobState::Dead, Some("cancelled")),
            "job {id}"
        );
    }
    // The untouched job is still held and acks.
    assert_eq!(
        e.job_ack(vec![by_id(ids[5])]).await.expect("ack"),
        vec![true]
    );
    // A cancelled job whose worker died ends at its claim's expiry.
    let id = enqueue_one(e, job("cr2", "x")).await;
    claim(e, "cr2", "w", 1).await;
    assert_eq!(
        e.job_cancel(id).await.expect("cancel"),
        CancelOutcome::Requested
    );
    h.clock().advance(secs(301));
    assert!(
        claim(e, "cr2", "w", 1).await.is_empty(),
        "never handed out again"
    );
    let info = e.job_get(id).await.expect("get").expect("dead row");
    assert_eq!(info.dead_reason.as_deref(), Some("cancelled"));
}

/// The rows above, for [`contract_suite!`](crate::contract_suite): list each
/// `pub async fn …<H: Harness>` here, next to where it is written.
#[doc(hidden)]
#[macro_export]
macro_rules! __queues_cancel {
    ($then:path, $args:tt) => {
        $then! { @rows $args queues::cancel [
            cancel_pending_job_is_recorded,
            cancel_running_job_is_cooperative,
        ] }
    };
}
