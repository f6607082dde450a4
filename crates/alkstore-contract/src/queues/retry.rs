//! Retry, fail and snooze, and the errors each attempt leaves behind.

use alkstore_core::queue::JobFailParams;
use alkstore_core::queue::JobSnoozeParams;
use alkstore_core::Writes as _;
use std::time::Duration;

use alkstore_core::{
    Claim, Clock, EnqueueOpts, ErrorKind, JobRetryParams, JobState, QueueAdmin, QueueOpts,
    RetryOutcome, Settle, Settled,
};

use super::support::{claim, enqueue_ids, enqueue_one, job, kind, secs};
use crate::places::assert_lost;
use crate::{writer, Harness, Where};

/// Retry reschedules with exponential backoff plus bounded jitter.
pub async fn retry_backs_off_with_jitter<H: Harness>(h: &H, at: Where) {
    let e = h.engine();
    let w = writer(h, at);
    let opts = QueueOpts {
        max_attempts: 5,
        backoff_base: secs(10),
        ..QueueOpts::default()
    };
    let id = enqueue_one(e, job("r", "x").with_queue_opts(opts)).await;
    let mut expected_min = 10;
    for attempt in 1..=3u32 {
        let j = claim(e, "r", "w", 1).await.remove(0);
        assert_eq!(j.attempt, attempt);
        let now = h.clock().now();
        let out = w
            .job_retry(JobRetryParams::new(j.claim(), format!("boom {attempt}")))
            .await
            .expect("retry");
        let RetryOutcome::Scheduled(run_at) = out else {
            panic!("expected a reschedule, got {out:?}")
        };
        let delay = run_at - now;
        assert!(
            (expected_min..=expected_min + expected_min / 4).contains(&delay),
            "attempt {attempt}: delay {delay} outside [{expected_min}, +25%]"
        );
        let info = e.job_get(id).await.expect("get").expect("exists");
        assert_eq!(info.state, JobState::Pending);
        assert_eq!(
            info.last_error.as_deref(),
            Some(format!("boom {attempt}").as_str())
        );
        h.clock()
            .advance(secs(u64::try_from(delay - 1).expect("positive delay")));
        assert!(
            claim(e, "r", "w", 1).await.is_empty(),
            "not before the backoff"
        );
        h.clock().advance(secs(1));
        expected_min *= 2;
    }
    let j = claim(e, "r", "w", 1).await.remove(0);
    let out = w
        .job_retry(JobRetryParams::new(j.claim(), "e").delay(secs(2)))
        .await
        .expect("retry");
    assert_eq!(out, RetryOutcome::Scheduled(h.clock().now() + 2));
}

/// Retrying the last attempt moves the job to dead with its error.
pub async fn retry_on_last_attempt_goes_dead<H: Harness>(h: &H, at: Where) {
    let e = h.engine();
    let w = writer(h, at);
    let id = enqueue_one(
        e,
        job("rd", "x").with_opts(EnqueueOpts::default().max_attempts(2)),
    )
    .await;
    let j = claim(e, "rd", "w", 1).await.remove(0);
    let out = w
        .job_retry(JobRetryParams::new(j.claim(), "first").delay(Duration::ZERO))
        .await
        .expect("retry");
    assert!(matches!(out, RetryOutcome::Scheduled(_)));
    let j = claim(e, "rd", "w", 1).await.remove(0);
    assert_eq!(j.attempt, 2);
    let out = w
        .job_retry(JobRetryParams::new(j.claim(), "second"))
        .await
        .expect("retry");
    assert_eq!(out, RetryOutcome::Dead);
    let info = e.job_get(id).await.expect("get").expect("dead row");
    assert_eq!(info.state, JobState::Dead);
    assert_eq!(info.dead_reason.as_deref(), Some("exhausted"));
    assert_eq!(info.last_error.as_deref(), Some("second"));
    assert_eq!(info.attempts, 2);
    assert!(claim(e, "rd", "w", 1).await.is_empty());
}

/// Fail moves a job to dead at once, whatever attempts remain.
pub async fn fail_goes_straight_to_dead<H: Harness>(h: &H, at: Where) {
    let e = h.engine();
    let w = writer(h, at);
    let id = enqueue_one(e, job("f", "x")).await;
    let j = claim(e, "f", "w", 1).await.remove(0);
    assert!(w
        .job_fail(JobFailParams::new(j.claim(), "bad payload"))
        .await
        .expect("fail"));
    let info = e.job_get(id).await.expect("get").expect("dead row");
    assert_eq!(info.state, JobState::Dead);
    assert_eq!(info.dead_reason.as_deref(), Some("failed"));
    assert_eq!(info.last_error.as_deref(), Some("bad payload"));
    assert_eq!(info.died_at, Some(h.clock().now()));
    assert_lost(
        at,
        w.job_fail(JobFailParams::new(j.claim(), "again")).await,
        false,
    );
}

/// A snooze puts a claimed job back, due later, without using an attempt.
pub async fn snooze_runs_later_without_using_an_attempt<H: Harness>(h: &H, at: Where) {
    let e = h.engine();
    let w = writer(h, at);
    let id = enqueue_one(e, job("sn", "x")).await;
    let j = claim(e, "sn", "w", 1).await.remove(0);
    let now = h.clock().now();
    assert_eq!(
        w.job_snooze(JobSnoozeParams::new(j.claim(), secs(30)))
            .await
            .expect("snooze"),
        Some(now + 30)
    );
    let info = e.job_get(id).await.expect("get").expect("live");
    assert_eq!(
        (info.state, info.attempts, info.run_at),
        (JobState::Pending, 0, now + 30)
    );
    h.clock().advance(secs(29));
    assert!(claim(e, "sn", "w", 1).await.is_empty(), "not due yet");
    h.clock().advance(secs(1));
    let again = claim(e, "sn", "w", 1).await.remove(0);
    assert_eq!((again.id, again.attempt), (id, 1));
    assert_eq!(
        kind(
            w.job_snooze(JobSnoozeParams::new(again.claim(), Duration::MAX))
                .await
        ),
        ErrorKind::InvalidInput
    );
    assert_eq!(
        e.job_ack(vec![again.claim()]).await.expect("ack"),
        vec![true],
        "a refused snooze changed nothing"
    );
}

/// Each failed attempt's error is kept on the job, in order, through retries
/// and into the dead-letter table.
pub async fn every_attempt_error_is_kept<H: Harness>(h: &H, at: Where) {
    let e = h.engine();
    let w = crate::writer(h, at);
    let id = enqueue_one(e, job("errs", "x")).await;
    for n in 1..=2 {
        let j = claim(e, "errs", "w", 1).await.remove(0);
        let p = JobRetryParams::new(j.claim(), format!("boom {n}")).delay(Duration::ZERO);
        assert!(matches!(
            w.job_retry(p).await.expect("retry"),
            RetryOutcome::Scheduled(_)
        ));
    }
    let info = e.job_get(id).await.expect("get").expect("live");
    let seen: Vec<(u32, &str)> = info
        .errors
        .iter()
        .map(|a| (a.attempt, a.error.as_str()))
        .collect();
    assert_eq!(seen, vec![(1, "boom 1"), (2, "boom 2")]);
    assert_eq!(info.last_error.as_deref(), Some("boom 2"));
    let j = claim(e, "errs", "w", 1).await.remove(0);
    assert!(w
        .job_fail(JobFailParams::new(j.claim(), "final"))
        .await
        .expect("fail"));
    let info = e.job_get(id).await.expect("get").expect("dead");
    let seen: Vec<(u32, &str)> = info
        .errors
        .iter()
        .map(|a| (a.attempt, a.error.as_str()))
        .collect();
    assert_eq!(seen, vec![(1, "boom 1"), (2, "boom 2"), (3, "final")]);
    assert!(info.errors.iter().all(|a| a.at == h.clock().now()));
    // Huge errors are cut, not refused.
    let id = enqueue_one(e, job("errs2", "x")).await;
    let j = claim(e, "errs2", "w", 1).await.remove(0);
    assert!(w
        .job_fail(JobFailParams::new(j.claim(), "é".repeat(10_000)))
        .await
        .expect("fail"));
    let info = e.job_get(id).await.expect("get").expect("dead");
    assert!(info.errors[0].error.len() <= alkstore_core::queue::MAX_ERROR_BYTES);
    // A NUL in an error (a program's raw output) is kept as U+FFFD, not
    // refused: PostgreSQL text cannot hold NUL.
    let id = enqueue_one(e, job("errs3", "x")).await;
    let j = claim(e, "errs3", "w", 1).await.remove(0);
    let retried = w
        .job_retry(JobRetryParams::new(j.claim(), "bad\0byte").delay(Duration::ZERO))
        .await
        .expect("retry with a NUL");
    assert!(matches!(retried, RetryOutcome::Scheduled(_)));
    let j = claim(e, "errs3", "w", 1).await.remove(0);
    assert!(w
        .job_fail(JobFailParams::new(j.claim(), "dead\0end"))
        .await
        .expect("fail with a NUL"));
    let info = e.job_get(id).await.expect("get").expect("dead");
    assert_eq!(info.errors[0].error, "bad\u{FFFD}byte");
    assert_eq!(info.last_error.as_deref(), Some("dead\u{FFFD}end"));
}

/// A retry outcome for a settle batch.
fn retry(claim: Claim, error: &str, delay: Option<Duration>) -> Settle {
    let mut params = JobRetryParams::new(claim, error);
    params.delay = delay;
    Settle::Retry(params)
}

/// Many retries, failures and snoozes recorded in one call behave exactly
/// as the single calls do, in the order given; a claim no longer held is
/// reported, not applied; invalid input anywhere rejects the whole batch.
pub async fn settle_records_many_outcomes_in_one_call<H: Harness>(h: &H, at: Where) {
    let e = h.engine();
    let w = crate::writer(h, at);
    let quick = QueueOpts {
        backoff_base: secs(10),
        ..QueueOpts::default()
    };
    let ids: Vec<i64> = enqueue_ids(
        e,
        (0..4)
            .map(|i| job("settle", &i.to_string()).with_queue_opts(quick.clone()))
            .collect(),
    )
    .await;
    let got = claim(e, "settle", "w", 4).await;
    let held = |id: i64| got.iter().find(|j| j.id == id).expect("claimed").claim();
    let stale = Claim {
        token: held(ids[3]).token + 7,
        ..held(ids[3])
    };
    let bad = vec![
        Settle::Fail {
            claim: held(ids[1]),
            error: "x".into(),
        },
        Settle::Snooze {
            claim: held(ids[2]),
            delay: Duration::MAX,
        },
    ];
    assert_eq!(kind(w.job_settle(bad).await), ErrorKind::InvalidInput);
    assert_eq!(
        e.job_get(ids[1]).await.expect("get").expect("live").state,
        JobState::Processing,
        "a rejected batch writes nothing"
    );
    let now = h.clock().now();
    let batch = vec![
        retry(held(ids[0]), "again", Some(secs(5))),
        Settle::Fail {
            claim: held(ids[1]),
            error: "never".into(),
        },
        Settle::Snooze {
            claim: held(ids[2]),
            delay: secs(30),
        },
        retry(stale, "stale", None),
    ];
    let want = vec![
        Settled::Retried(RetryOutcome::Scheduled(now + 5)),
        Settled::Failed(true),
        Settled::Snoozed(Some(now + 30)),
        Settled::Retried(RetryOutcome::NotHeld),
    ];
    let out = w.job_settle(batch.clone()).await;
    if at.in_tx() {
        // The stale claim refuses the whole transaction; without it the
        // rest settles as it would have.
        assert_lost(at, out, want.clone());
        assert_eq!(
            e.job_get(ids[1]).await.expect("get").expect("live").state,
            JobState::Processing,
            "a refused transaction writes nothing"
        );
        let out = w.job_settle(batch[..3].to_vec()).await.expect("settle");
        assert_eq!(out, want[..3]);
    } else {
        assert_eq!(out.expect("settle"), want);
    }
    let ids = &ids;
    let state = |i: usize| async move { e.job_get(ids[i]).await.expect("get").expect("row") };
    let first = state(0).await;
    assert_eq!(
        (first.state, first.attempts, first.last_error.as_deref()),
        (JobState::Pending, 1, Some("again"))
    );
    let second = state(1).await;
    assert_eq!(
        (second.state, second.dead_reason.as_deref()),
        (JobState::Dead, Some("failed"))
    );
    let third = state(2).await;
    assert_eq!(
        (third.state, third.attempts, third.run_at),
        (JobState::Pending, 0, now + 30)
    );
    assert_eq!(
        w.job_ack(vec![held(ids[3])]).await.expect("ack"),
        vec![true],
        "the stale claim's retry changed nothing"
    );
    // One claim settled twice in a batch: the second sees the first done.
    enqueue_ids(e, vec![job("settle", "4").with_queue_opts(quick.clone())]).await;
    let again = claim(e, "settle", "w", 1).await;
    let again = again.first().expect("the new job is due").claim();
    let now = h.clock().now();
    let batch = vec![
        retry(again.clone(), "once", Some(secs(5))),
        Settle::Fail {
            claim: again.clone(),
            error: "twice".into(),
        },
    ];
    let want = vec![
        Settled::Retried(RetryOutcome::Scheduled(now + 5)),
        Settled::Failed(false),
    ];
    let twice = w.job_settle(batch.clone()).await;
    if at.in_tx() {
        // The second no longer holds the claim: refused whole.
        assert_lost(at, twice, want.clone());
        let once = w.job_settle(batch[..1].to_vec()).await.expect("settle");
        assert_eq!(once, want[..1]);
    } else {
        assert_eq!(twice.expect("settle twice"), want);
    }
    let after = e.job_get(again.id).await.expect("get").expect("live");
    assert_eq!(
        (after.state, after.last_error.as_deref()),
        (JobState::Pending, Some("once"))
    );
    // Retries in one batch that end differently: out of attempts, cancelled
    // while running, and scheduled by the queue's backoff.
    let ends = enqueue_ids(
        e,
        vec![
            job("settle_ends", "out").with_opts(EnqueueOpts::default().max_attempts(1)),
            job("settle_ends", "cancelled").with_queue_opts(quick.clone()),
            job("settle_ends", "backoff").with_queue_opts(quick.clone()),
            job("settle_ends", "delayed").with_queue_opts(quick.clone()),
        ],
    )
    .await;
    let running = claim(e, "settle_ends", "w", 4).await;
    let held = |id: i64| {
        running
            .iter()
            .find(|j| j.id == id)
            .expect("claimed")
            .claim()
    };
    e.job_cancel(ends[1]).await.expect("cancel a running job");
    let now = h.clock().now();
    let out = w
        .job_settle(vec![
            retry(held(ends[0]), "e0", None),
            retry(held(ends[1]), "e1", None),
            retry(held(ends[2]), "e2", None),
            retry(held(ends[3]), "e3", Some(secs(3))),
        ])
        .await
        .expect("settle the ends");
    let Settled::Retried(RetryOutcome::Scheduled(due)) = out[2] else {
        panic!("the third is scheduled: {out:?}");
    };
    assert_eq!(
        [&out[..2], &out[3..]].concat(),
        [
            Settled::Retried(RetryOutcome::Dead),
            Settled::Retried(RetryOutcome::Cancelled),
            Settled::Retried(RetryOutcome::Scheduled(now + 3)),
        ]
    );
    // The queue's backoff: its base (10 s) for a first attempt, plus up to
    // a quarter of jitter.
    assert!((now + 10..=now + 12).contains(&due), "due {due}, now {now}");
    for (i, reason) in [(0, "exhausted"), (1, "cancelled")] {
        let info = e.job_get(ends[i]).await.expect("get").expect("dead");
        assert_eq!(
            (info.state, info.dead_reason.as_deref(), info.last_error),
            (JobState::Dead, Some(reason), Some(format!("e{i}")))
        );
        assert_eq!(info.errors.len(), 1, "{:?}", info.errors);
        assert_eq!(
            (info.errors[0].attempt, info.errors[0].error.as_str()),
            (1, format!("e{i}").as_str())
        );
    }
    // Each scheduled row has its own due time and error.
    for (i, due) in [(2, due), (3, now + 3)] {
        let back = e.job_get(ends[i]).await.expect("get").expect("live");
        assert_eq!(
            (back.state, back.run_at, back.attempts, back.errors.len()),
            (JobState::Pending, due, 1, 1)
        );
        assert_eq!(back.last_error, Some(format!("e{i}")));
    }
    assert_eq!(w.job_settle(Vec::new()).await.expect("empty"), Vec::new());
}

/// The rows above, for [`contract_suite!`](crate::contract_suite): list each
/// `pub async fn …<H: Harness>` here, next to where it is written.
#[doc(hidden)]
#[macro_export]
macro_rules! __queues_retry {
    ($then:path, $args:tt) => {
        $then! { @places $args queues::retry [
            settle_records_many_outcomes_in_one_call,
        ] }
        $then! { @places $args queues::retry [
            every_attempt_error_is_kept,
        ] }
        $then! { @places $args queues::retry [
            retry_backs_off_with_jitter,
            retry_on_last_attempt_goes_dead,
            fail_goes_straight_to_dead,
            snooze_runs_later_without_using_an_attempt,
        ] }
    };
}
