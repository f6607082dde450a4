//! Inspection: stats, queue and job lists, kept completed jobs.

use alkstore_core::queue::{JobDeleteParams, JobFailParams, JobRetryParams, JobRunNowParams};
use alkstore_core::Writes as _;
use alkstore_core::{
    Clock, Engine, EnqueueOpts, ErrorKind, JobListParams, JobState, QueueAdmin, QueueOpts,
};

use super::support::{claim, enqueue_ids, enqueue_one, job, kind, secs};
use crate::{Harness, Where};

/// Stats count ready, scheduled (and retryable), processing and dead (and
/// cancelled), and the oldest age.
pub async fn stats_count_each_state<H: Harness>(h: &H) {
    let e = h.engine();
    let now = h.clock().now();
    e.job_enqueue(
        (0..4)
            .map(|i| job("st", &i.to_string()).with_opts(EnqueueOpts::default().run_at(now - 40)))
            .collect::<Vec<_>>(),
    )
    .await
    .expect("enqueue");
    enqueue_one(
        e,
        job("st", "later").with_opts(EnqueueOpts::default().delay(secs(100))),
    )
    .await;
    let got = claim(e, "st", "w", 2).await;
    e.job_fail(JobFailParams::new(got[0].claim(), "x"))
        .await
        .expect("fail");
    let s = e.queue_stats("st").await.expect("stats");
    assert_eq!((s.ready, s.scheduled, s.processing, s.dead), (2, 1, 1, 1));
    assert_eq!((s.retryable, s.cancelled), (0, 0));
    assert_eq!(s.oldest_ready_age_s, Some(40));
    // A retry waiting out its backoff is scheduled and retryable; a
    // cancelled job is dead and cancelled.
    let mut retry = JobRetryParams::new(got[1].claim(), "later");
    retry.delay = Some(secs(100));
    e.job_retry(retry).await.expect("retry");
    let ready = e
        .job_list(JobListParams::new(10).queue("st").state(JobState::Pending))
        .await
        .expect("list");
    let due = ready
        .iter()
        .find(|j| j.run_at <= now && j.attempts == 0)
        .expect("a due job");
    e.job_cancel(due.id).await.expect("cancel");
    let s = e.queue_stats("st").await.expect("stats");
    assert_eq!(
        (
            s.ready,
            s.scheduled,
            s.retryable,
            s.processing,
            s.dead,
            s.cancelled
        ),
        (1, 2, 1, 0, 2, 1)
    );
    let empty = e.queue_stats("nothing").await.expect("stats");
    assert_eq!(
        (empty.ready, empty.dead, empty.oldest_ready_age_s),
        (0, 0, None)
    );
}

/// Queue list names every queue with live or dead jobs.
pub async fn queue_list_names_queues<H: Harness>(h: &H) {
    let e = h.engine();
    enqueue_one(e, job("zeta", "x")).await;
    enqueue_one(e, job("alpha", "x")).await;
    let j = claim(e, "alpha", "w", 1).await.remove(0);
    e.job_fail(JobFailParams::new(j.claim(), "x"))
        .await
        .expect("fail");
    assert_eq!(
        e.queue_list().await.expect("list"),
        vec!["alpha".to_string(), "zeta".to_string()]
    );
}

/// Live jobs can be listed by queue and state, in id order, in pages.
pub async fn job_list_filters_and_pages<H: Harness>(h: &H) {
    let e = h.engine();
    let ids: Vec<i64> = enqueue_ids(e, (0..5).map(|i| job("jl", &i.to_string())).collect()).await;
    enqueue_one(e, job("jl-other", "x")).await;
    let claimed = claim(e, "jl", "w", 2).await;
    let list = |queue: Option<&str>, state, after_id, limit| {
        let mut params = JobListParams::new(limit);
        params.queue = queue.map(str::to_string);
        params.state = state;
        params.after_id = after_id;
        e.job_list(params)
    };
    let all = list(Some("jl"), None, None, 100).await.expect("list");
    assert_eq!(all.iter().map(|j| j.id).collect::<Vec<_>>(), ids);
    let processing = list(Some("jl"), Some(JobState::Processing), None, 100)
        .await
        .expect("list");
    assert_eq!(
        processing.iter().map(|j| j.id).collect::<Vec<_>>(),
        claimed.iter().map(|j| j.id).collect::<Vec<_>>()
    );
    let page = list(Some("jl"), Some(JobState::Pending), Some(ids[2]), 1)
        .await
        .expect("list");
    assert_eq!(page.iter().map(|j| j.id).collect::<Vec<_>>(), vec![ids[3]]);
    assert_eq!(list(None, None, None, 100).await.expect("list").len(), 6);
    assert_eq!(
        kind(list(None, Some(JobState::Dead), None, 10).await),
        ErrorKind::InvalidInput
    );
}

/// Acked jobs of a queue that opts in are kept as `completed` for the
/// stamped time, listed and counted, then pruned by the sweep; other queues
/// still delete on ack.
pub async fn completed_jobs_are_kept_when_opted_in<H: Harness>(h: &H, at: Where) {
    let e = h.engine();
    let w = crate::writer(h, at);
    let kept = QueueOpts {
        keep_completed: Some(secs(60)),
        ..QueueOpts::default()
    };
    let k = enqueue_one(e, job("keep", "kept payload").with_queue_opts(kept)).await;
    let d = enqueue_one(e, job("keep", "deleted")).await;
    let got = claim(e, "keep", "w", 2).await;
    let acks = w
        .job_ack(got.iter().map(|j| j.claim()).collect::<Vec<_>>())
        .await
        .expect("ack");
    assert_eq!(acks, vec![true, true]);
    let now = h.clock().now();
    let info = e.job_get(k).await.expect("get").expect("kept");
    assert_eq!(info.state, JobState::Completed);
    assert_eq!(
        (info.payload.as_slice(), info.attempts, info.died_at),
        (&b"kept payload"[..], 1, Some(now))
    );
    assert!(e.job_get(d).await.expect("get").is_none());
    let listed = e
        .job_list(
            JobListParams::new(10)
                .queue("keep")
                .state(JobState::Completed),
        )
        .await
        .expect("list");
    assert_eq!(listed.iter().map(|j| j.id).collect::<Vec<_>>(), vec![k]);
    let live = e
        .job_list(JobListParams::new(10).queue("keep"))
        .await
        .expect("list");
    assert!(live.is_empty(), "completed jobs are not live");
    assert_eq!(e.queue_stats("keep").await.expect("stats").completed, 1);
    h.clock().advance(secs(59));
    assert_eq!(e.sweep().await.expect("sweep").completed_pruned, 0);
    h.clock().advance(secs(1));
    assert_eq!(e.sweep().await.expect("sweep").completed_pruned, 1);
    assert!(e.job_get(k).await.expect("get").is_none());
}

/// A job of a queue that keeps completed jobs, acked alone (engines may
/// take a single-claim path), is kept as completed and counted once.
pub async fn a_single_ack_keeps_a_completed_job_when_opted_in<H: Harness>(h: &H, at: Where) {
    let e = h.engine();
    let w = crate::writer(h, at);
    let kept = QueueOpts {
        keep_completed: Some(secs(60)),
        ..QueueOpts::default()
    };
    let id = enqueue_one(e, job("keep1", "alone").with_queue_opts(kept)).await;
    let got = claim(e, "keep1", "w", 1).await;
    assert_eq!(
        w.job_ack(vec![got[0].claim()]).await.expect("ack"),
        vec![true]
    );
    crate::places::assert_lost(at, w.job_ack(vec![got[0].claim()]).await, vec![false]);
    let info = e.job_get(id).await.expect("get").expect("kept");
    assert_eq!(info.state, JobState::Completed);
    assert_eq!(e.queue_stats("keep1").await.expect("stats").completed, 1);
}

/// Run now makes scheduled and retryable jobs due (attempts kept) and
/// leaves others alone; delete removes pending jobs only; bad id lists
/// are refused and change nothing.
pub async fn run_now_and_delete_act_only_on_pending_jobs<H: Harness>(h: &H) {
    let e = h.engine();
    let later = enqueue_one(
        e,
        job("rn", "later").with_opts(EnqueueOpts::default().delay(secs(100))),
    )
    .await;
    let failing = enqueue_one(e, job("rn", "failing")).await;
    let got = claim(e, "rn", "w", 1).await;
    assert_eq!(got[0].id, failing);
    let mut retry = JobRetryParams::new(got[0].claim(), "boom");
    retry.delay = Some(secs(100));
    e.job_retry(retry).await.expect("retry");
    let running = enqueue_one(e, job("rn", "running")).await;
    let held = claim(e, "rn", "w", 1).await;
    assert_eq!(held[0].id, running);
    let due = enqueue_one(e, job("rn", "due")).await;
    let s = e.queue_stats("rn").await.expect("stats");
    assert_eq!(
        (s.ready, s.scheduled, s.retryable, s.processing),
        (1, 2, 1, 1)
    );

    for bad in [vec![], vec![0], (1..=1_001).collect::<Vec<i64>>()] {
        let err = e
            .job_run_now(JobRunNowParams::new(bad.clone()))
            .await
            .expect_err("refused");
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{bad:?}");
        let err = e
            .job_delete(JobDeleteParams::new(bad))
            .await
            .expect_err("refused");
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
    }
    let moved = e
        .job_run_now(JobRunNowParams::new(vec![
            later, failing, running, due, 999_999,
        ]))
        .await
        .expect("run now");
    assert_eq!(moved, 2, "the scheduled and the retryable job");
    let s = e.queue_stats("rn").await.expect("stats");
    assert_eq!(
        (s.ready, s.scheduled, s.retryable, s.processing),
        (3, 0, 0, 1)
    );
    let info = e.job_get(failing).await.expect("get").expect("job");
    assert_eq!(info.attempts, 1, "attempts kept");
    assert!(info.run_at <= h.clock().now());

    let deleted = e
        .job_delete(JobDeleteParams::new(vec![due, running, 999_999]))
        .await
        .expect("delete");
    assert_eq!(deleted, 1, "only the pending job");
    assert!(e.job_get(due).await.expect("get").is_none());
    assert_eq!(
        e.job_get(running).await.expect("get").map(|j| j.state),
        Some(JobState::Processing)
    );
}

/// Every queue's counts read at once equal each queue's own: a queue in
/// every state, one with only dead letters, one with only kept jobs.
pub async fn stats_of_every_queue_match_each_queues<H: Harness>(h: &H) {
    let e = h.engine();
    let now = h.clock().now();
    let kept = QueueOpts {
        keep_completed: Some(secs(600)),
        ..QueueOpts::default()
    };
    // "all": ready, scheduled, retryable, processing, dead (one cancelled).
    e.job_enqueue(
        (0..3)
            .map(|i| job("all", &i.to_string()).with_opts(EnqueueOpts::default().run_at(now - 30)))
            .chain([job("all", "later").with_opts(EnqueueOpts::default().run_at(now + 600))])
            .collect::<Vec<_>>(),
    )
    .await
    .expect("enqueue");
    let got = claim(e, "all", "w", 2).await;
    e.job_retry(JobRetryParams::new(got[0].claim(), "again").delay(secs(300)))
        .await
        .expect("retry");
    let cancel = enqueue_one(e, job("all", "cancel me")).await;
    e.job_cancel(cancel).await.expect("cancel");
    // "dead-only": one failed job, nothing live.
    enqueue_one(e, job("dead-only", "x")).await;
    let d = claim(e, "dead-only", "w", 1).await;
    e.job_fail(JobFailParams::new(d[0].claim(), "no"))
        .await
        .expect("fail");
    // "kept-only": one acked, kept job.
    enqueue_one(e, job("kept-only", "x").with_queue_opts(kept)).await;
    let k = claim(e, "kept-only", "w", 1).await;
    e.job_ack(vec![k[0].claim()]).await.expect("ack");

    let all = e.queue_stats_all().await.expect("stats of every queue");
    let names: Vec<&str> = all.iter().map(|s| s.queue.as_str()).collect();
    assert_eq!(
        names,
        e.queue_list().await.expect("list"),
        "every listed queue, by name"
    );
    for s in &all {
        let one = e.queue_stats(s.queue.as_str()).await.expect("stats");
        assert_eq!(s, &one, "queue {}", s.queue);
    }
    let of = |q: &str| all.iter().find(|s| s.queue == q).expect("listed").clone();
    let a = of("all");
    assert_eq!(
        (
            a.ready,
            a.scheduled,
            a.retryable,
            a.processing,
            a.dead,
            a.cancelled
        ),
        (1, 2, 1, 1, 1, 1),
        "{a:?}"
    );
    assert!(a.oldest_ready_age_s.is_some_and(|age| age >= 30), "{a:?}");
    assert_eq!((of("dead-only").dead, of("dead-only").ready), (1, 0));
    assert_eq!((of("kept-only").completed, of("kept-only").dead), (1, 0));
}

/// The rows above, for [`contract_suite!`](crate::contract_suite): list each
/// `pub async fn …<H: Harness>` here, next to where it is written.
#[doc(hidden)]
#[macro_export]
macro_rules! __queues_admin {
    ($then:path, $args:tt) => {
        $then! { @rows $args queues::admin [
            stats_count_each_state,
            queue_list_names_queues,
            job_list_filters_and_pages,
            run_now_and_delete_act_only_on_pending_jobs,
            stats_of_every_queue_match_each_queues,
        ] }
        $then! { @places $args queues::admin [
            a_single_ack_keeps_a_completed_job_when_opted_in,
            completed_jobs_are_kept_when_opted_in,
        ] }
    };
}
