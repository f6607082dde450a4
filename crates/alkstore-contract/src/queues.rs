//! Contract rows for job queues.

use std::collections::HashSet;
use std::time::Duration;

use alkstore_core::{
    CancelOutcome, Claim, ClaimParams, Clock, DeadListParams, DeadSelect, EnqueueOpts, Enqueued,
    ErrorKind, Job, JobListParams, JobState, NewJob, QueueAdmin, QueueEngine, QueueOpts, Result,
    RetryOutcome, RetryParams,
};

use alkstore_core::Engine;

use crate::Harness;

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn job(queue: &str, payload: &str) -> NewJob {
    NewJob::new(queue, payload.as_bytes().to_vec())
}

async fn enqueue_one<E: QueueEngine + QueueAdmin>(e: &E, j: NewJob) -> i64 {
    let out = e.job_enqueue(vec![j]).await.expect("enqueue");
    out[0].id()
}

async fn claim<E: QueueEngine + QueueAdmin>(e: &E, queue: &str, worker: &str, n: u32) -> Vec<Job> {
    e.job_claim(ClaimParams::new(queue, worker, n))
        .await
        .expect("claim")
}

fn kind<T: std::fmt::Debug>(r: Result<T>) -> ErrorKind {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e.kind(),
    }
}

async fn live_count<E: QueueEngine + QueueAdmin>(e: &E, queue: &str) -> u64 {
    let s = e.queue_stats(queue.to_string()).await.expect("stats");
    s.live()
}

/// An enqueued job can be read back, pending, with its options stamped.
pub async fn enqueue_then_get<H: Harness>(h: &H) {
    let e = h.engine();
    let id = enqueue_one(
        e,
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
pub async fn payload_bytes_are_kept_exactly<H: Harness>(h: &H) {
    let e = h.engine();
    let bytes: Vec<u8> = (0..=255u8).chain([0, 0xff, 0xfe, 0x80]).collect();
    let id = enqueue_one(e, NewJob::new("bytes", bytes.clone())).await;
    let got = claim(e, "bytes", "w", 1).await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].id, id);
    assert_eq!(got[0].payload, bytes);
    let empty = enqueue_one(e, NewJob::new("bytes", Vec::new())).await;
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
pub async fn batch_enqueue_is_all_or_nothing<H: Harness>(h: &H) {
    let e = h.engine();
    let mut batch: Vec<NewJob> = (0..10).map(|i| job("b", &i.to_string())).collect();
    batch.push(job("", "no queue"));
    assert_eq!(kind(e.job_enqueue(batch).await), ErrorKind::InvalidInput);
    assert_eq!(live_count(e, "b").await, 0);

    let batch: Vec<NewJob> = (0..250).map(|i| job("b", &i.to_string())).collect();
    let out = e.job_enqueue(batch).await.expect("batch");
    assert_eq!(out.len(), 250);
    let ids: HashSet<i64> = out.iter().map(|o| o.id()).collect();
    assert_eq!(ids.len(), 250, "ids are distinct");
    assert!(
        out.windows(2).all(|w| w[0].id() < w[1].id()),
        "ids grow in batch order"
    );
    assert_eq!(live_count(e, "b").await, 250);
}

/// Every kind of bad input gets a typed error and changes nothing.
pub async fn bad_input_is_rejected_and_writes_nothing<H: Harness>(h: &H) {
    let e = h.engine();
    assert_eq!(
        kind(e.job_enqueue(vec![job("", "x")]).await),
        ErrorKind::InvalidInput
    );
    let zero = job("bad", "x").with_opts(EnqueueOpts::default().max_attempts(0));
    assert_eq!(
        kind(e.job_enqueue(vec![zero]).await),
        ErrorKind::InvalidInput
    );
    let zero_q = job("bad", "x").with_queue_opts(QueueOpts {
        max_attempts: 0,
        ..QueueOpts::default()
    });
    assert_eq!(
        kind(e.job_enqueue(vec![zero_q]).await),
        ErrorKind::InvalidInput
    );
    let no_vis = job("bad", "x").with_queue_opts(QueueOpts {
        visibility_timeout: Duration::ZERO,
        ..QueueOpts::default()
    });
    assert_eq!(
        kind(e.job_enqueue(vec![no_vis]).await),
        ErrorKind::InvalidInput
    );
    let big = NewJob::new("bad", vec![7u8; (1 << 20) + 1]);
    assert_eq!(
        kind(e.job_enqueue(vec![big]).await),
        ErrorKind::PayloadTooLarge
    );
    let empty_key = job("bad", "x").with_opts(EnqueueOpts::default().unique_key(""));
    assert_eq!(
        kind(e.job_enqueue(vec![empty_key]).await),
        ErrorKind::InvalidInput
    );
    assert_eq!(live_count(e, "bad").await, 0);

    enqueue_one(e, job("bad", "real")).await;
    for p in [
        ClaimParams::new("bad", "w", 0),
        ClaimParams::new("bad", "w", 1_000_000),
        ClaimParams::new("", "w", 1),
        ClaimParams::new("bad", "", 1),
    ] {
        assert_eq!(kind(e.job_claim(p).await), ErrorKind::InvalidInput);
    }
    let s = e.queue_stats("bad".into()).await.expect("stats");
    assert_eq!(
        (s.ready, s.processing),
        (1, 0),
        "a rejected claim claims nothing"
    );
    let bad_claim = Claim {
        id: 1,
        worker: String::new(),
        token: 1,
    };
    assert_eq!(
        kind(e.job_ack(vec![bad_claim]).await),
        ErrorKind::InvalidInput
    );
    let list = DeadListParams {
        queue: None,
        after_id: None,
        limit: 0,
    };
    assert_eq!(kind(e.dead_list(list).await), ErrorKind::InvalidInput);
    assert_eq!(
        kind(e.queue_stats(String::new()).await),
        ErrorKind::InvalidInput
    );
}

/// Claims hand out priority DESC, then run_at, then id.
pub async fn claim_order_is_priority_then_run_at_then_id<H: Harness>(h: &H) {
    let e = h.engine();
    let now = h.clock().now();
    let a = enqueue_one(e, job("o", "a")).await;
    let b = enqueue_one(
        e,
        job("o", "b").with_opts(EnqueueOpts::default().priority(10)),
    )
    .await;
    let c = enqueue_one(
        e,
        job("o", "c").with_opts(EnqueueOpts::default().run_at(now - 100)),
    )
    .await;
    let d = enqueue_one(e, job("o", "d")).await;
    let f = enqueue_one(
        e,
        job("o", "f").with_opts(EnqueueOpts::default().priority(-5).run_at(now - 500)),
    )
    .await;
    let got: Vec<i64> = claim(e, "o", "w", 10).await.iter().map(|j| j.id).collect();
    assert_eq!(got, vec![b, c, a, d, f]);
}

/// A delayed job is not claimed before it is due, and is after.
pub async fn delayed_job_waits_until_due<H: Harness>(h: &H) {
    let e = h.engine();
    let id = enqueue_one(
        e,
        job("d", "later").with_opts(EnqueueOpts::default().delay(secs(60))),
    )
    .await;
    assert!(claim(e, "d", "w", 5).await.is_empty());
    let s = e.queue_stats("d".into()).await.expect("stats");
    assert_eq!((s.ready, s.scheduled), (0, 1));
    h.clock().advance(secs(59));
    assert!(claim(e, "d", "w", 5).await.is_empty());
    h.clock().advance(secs(1));
    let got = claim(e, "d", "w", 5).await;
    assert_eq!(got.iter().map(|j| j.id).collect::<Vec<_>>(), vec![id]);
    assert_eq!(got[0].attempt, 1);
    assert_eq!(got[0].claim_expires_at, h.clock().now() + 300);
}

/// A claim returns at most `limit` jobs, only from its queue, each once.
pub async fn claim_respects_limit_and_queue<H: Harness>(h: &H) {
    let e = h.engine();
    let jobs: Vec<NewJob> = (0..7).map(|i| job("l", &i.to_string())).collect();
    e.job_enqueue(jobs).await.expect("enqueue");
    enqueue_one(e, job("other", "x")).await;
    let first = claim(e, "l", "w", 3).await;
    assert_eq!(first.len(), 3);
    let second = claim(e, "l", "w", 10).await;
    assert_eq!(second.len(), 4);
    assert!(claim(e, "l", "w", 10).await.is_empty());
    let all: HashSet<i64> = first.iter().chain(&second).map(|j| j.id).collect();
    assert_eq!(all.len(), 7);
    assert!(first
        .iter()
        .chain(&second)
        .all(|j| j.queue == "l" && j.worker == "w"));
    assert_eq!(e.queue_stats("other".into()).await.expect("stats").ready, 1);
}

/// Ack deletes the job and returns true once; an expired claim cannot ack.
pub async fn ack_deletes_only_while_claim_is_valid<H: Harness>(h: &H) {
    let e = h.engine();
    let id = enqueue_one(e, job("a", "x")).await;
    let j = claim(e, "a", "w", 1).await.remove(0);
    assert_eq!(e.job_ack(vec![j.claim()]).await.expect("ack"), vec![true]);
    assert!(e.job_get(id).await.expect("get").is_none());
    assert_eq!(e.job_ack(vec![j.claim()]).await.expect("ack"), vec![false]);

    let id2 = enqueue_one(e, job("a", "y")).await;
    let j2 = claim(e, "a", "w", 1).await.remove(0);
    let mut wrong = j2.claim();
    wrong.worker = "intruder".into();
    assert_eq!(e.job_ack(vec![wrong]).await.expect("ack"), vec![false]);
    h.clock().advance(secs(300));
    assert_eq!(
        e.job_ack(vec![j2.claim()]).await.expect("ack"),
        vec![false],
        "claim expired"
    );
    assert!(e.job_get(id2).await.expect("get").is_some());
}

/// The acceptance row: acking a job whose claim expired and was re-claimed
/// returns false and leaves the new owner's job alone.
pub async fn stale_ack_after_reclaim_returns_false<H: Harness>(h: &H) {
    let e = h.engine();
    let id = enqueue_one(e, job("s", "x")).await;
    let old = claim(e, "s", "slow", 1).await.remove(0);
    h.clock().advance(secs(301));
    let new = claim(e, "s", "fast", 1).await.remove(0);
    assert_eq!(new.id, id);
    assert_eq!(new.attempt, 2);
    assert_eq!(
        e.job_ack(vec![old.claim()]).await.expect("ack"),
        vec![false]
    );
    assert_eq!(kind_of_retry(e, &old).await, RetryOutcome::NotHeld);
    assert!(!e.job_fail(old.claim(), "late".into()).await.expect("fail"));
    assert!(e.job_heartbeat(old.claim()).await.expect("hb").is_none());
    let info = e.job_get(id).await.expect("get").expect("still there");
    assert_eq!(info.state, JobState::Processing);
    assert_eq!(info.worker.as_deref(), Some("fast"));
    assert_eq!(e.job_ack(vec![new.claim()]).await.expect("ack"), vec![true]);
}

async fn kind_of_retry<E: QueueEngine + QueueAdmin>(e: &E, j: &Job) -> RetryOutcome {
    e.job_retry(RetryParams {
        claim: j.claim(),
        error: "x".into(),
        delay: None,
    })
    .await
    .expect("retry")
}

/// Batch ack answers per claim and deletes only the valid ones.
pub async fn batch_ack_reports_each_claim<H: Harness>(h: &H) {
    let e = h.engine();
    let jobs: Vec<NewJob> = (0..5).map(|i| job("ba", &i.to_string())).collect();
    e.job_enqueue(jobs).await.expect("enqueue");
    let got = claim(e, "ba", "w", 5).await;
    let mut claims: Vec<Claim> = got.iter().map(|j| j.claim()).collect();
    claims[1].token = 9;
    claims.push(Claim {
        id: -1,
        worker: "w".into(),
        token: 1,
    });
    let out = e.job_ack(claims).await.expect("ack");
    assert_eq!(out, vec![true, false, true, true, true, false]);
    let s = e.queue_stats("ba".into()).await.expect("stats");
    assert_eq!(s.processing, 1);

    // One job named twice: a stale attempt and the current one, either order.
    for stale_first in [true, false] {
        let id = enqueue_one(e, job("ba2", "x")).await;
        let old = claim(e, "ba2", "w", 1).await.remove(0);
        h.clock().advance(secs(301));
        let new = claim(e, "ba2", "w", 1).await.remove(0);
        assert_eq!((new.id, new.attempt), (id, 2));
        let (claims, want) = if stale_first {
            (vec![old.claim(), new.claim()], vec![false, true])
        } else {
            (vec![new.claim(), old.claim()], vec![true, false])
        };
        assert_eq!(e.job_ack(claims).await.expect("ack"), want);
        assert!(e.job_get(id).await.expect("get").is_none());
    }
}

/// Retry reschedules with exponential backoff plus bounded jitter.
pub async fn retry_backs_off_with_jitter<H: Harness>(h: &H) {
    let e = h.engine();
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
        let out = e
            .job_retry(RetryParams {
                claim: j.claim(),
                error: format!("boom {attempt}"),
                delay: None,
            })
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
        h.clock().advance(secs(delay as u64 - 1));
        assert!(
            claim(e, "r", "w", 1).await.is_empty(),
            "not before the backoff"
        );
        h.clock().advance(secs(1));
        expected_min *= 2;
    }
    let j = claim(e, "r", "w", 1).await.remove(0);
    let out = e
        .job_retry(RetryParams {
            claim: j.claim(),
            error: "e".into(),
            delay: Some(secs(2)),
        })
        .await
        .expect("retry");
    assert_eq!(out, RetryOutcome::Scheduled(h.clock().now() + 2));
}

/// Retrying the last attempt moves the job to dead with its error.
pub async fn retry_on_last_attempt_goes_dead<H: Harness>(h: &H) {
    let e = h.engine();
    let id = enqueue_one(
        e,
        job("rd", "x").with_opts(EnqueueOpts::default().max_attempts(2)),
    )
    .await;
    let j = claim(e, "rd", "w", 1).await.remove(0);
    let out = e
        .job_retry(RetryParams {
            claim: j.claim(),
            error: "first".into(),
            delay: Some(Duration::ZERO),
        })
        .await
        .expect("retry");
    assert!(matches!(out, RetryOutcome::Scheduled(_)));
    let j = claim(e, "rd", "w", 1).await.remove(0);
    assert_eq!(j.attempt, 2);
    let out = e
        .job_retry(RetryParams {
            claim: j.claim(),
            error: "second".into(),
            delay: None,
        })
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
pub async fn fail_goes_straight_to_dead<H: Harness>(h: &H) {
    let e = h.engine();
    let id = enqueue_one(e, job("f", "x")).await;
    let j = claim(e, "f", "w", 1).await.remove(0);
    assert!(e
        .job_fail(j.claim(), "bad payload".into())
        .await
        .expect("fail"));
    let info = e.job_get(id).await.expect("get").expect("dead row");
    assert_eq!(info.state, JobState::Dead);
    assert_eq!(info.dead_reason.as_deref(), Some("failed"));
    assert_eq!(info.last_error.as_deref(), Some("bad payload"));
    assert_eq!(info.died_at, Some(h.clock().now()));
    assert!(!e.job_fail(j.claim(), "again".into()).await.expect("fail"));
}

/// Heartbeat extends a valid claim by the visibility timeout from now.
pub async fn heartbeat_extends_a_valid_claim<H: Harness>(h: &H) {
    let e = h.engine();
    let opts = QueueOpts {
        visibility_timeout: secs(10),
        ..QueueOpts::default()
    };
    enqueue_one(e, job("hb", "x").with_queue_opts(opts)).await;
    let j = claim(e, "hb", "w", 1).await.remove(0);
    h.clock().advance(secs(8));
    let until = e.job_heartbeat(j.claim()).await.expect("hb");
    assert_eq!(until, Some(h.clock().now() + 10));
    h.clock().advance(secs(8));
    assert!(
        claim(e, "hb", "other", 1).await.is_empty(),
        "still held after 16 s"
    );
    assert_eq!(e.job_ack(vec![j.claim()]).await.expect("ack"), vec![true]);
}

/// Release makes a job claimable at once and does not count the attempt.
pub async fn release_hands_job_back_without_using_an_attempt<H: Harness>(h: &H) {
    let e = h.engine();
    let id = enqueue_one(e, job("rel", "x")).await;
    let j = claim(e, "rel", "a", 1).await.remove(0);
    assert!(e.job_release(j.claim()).await.expect("release"));
    assert!(!e.job_release(j.claim()).await.expect("release twice"));
    let again = claim(e, "rel", "b", 1).await;
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].id, id);
    assert_eq!(again[0].attempt, 1);
    assert_eq!(e.job_ack(vec![j.claim()]).await.expect("ack"), vec![false]);
}

/// Every claim gets a token of its own: after a release (which gives the
/// attempt back) the same worker name claiming the job again holds a new
/// claim, and the old claim can no longer ack, retry, fail, heartbeat,
/// snooze or release.
pub async fn claim_tokens_never_repeat<H: Harness>(h: &H) {
    let e = h.engine();
    let id = enqueue_one(e, job("tok", "x")).await;
    let first = claim(e, "tok", "w", 1).await.remove(0);
    assert!(e.job_release(first.claim()).await.expect("release"));
    let second = claim(e, "tok", "w", 1).await.remove(0);
    assert_eq!(
        (second.id, second.attempt, second.worker.as_str()),
        (id, 1, "w")
    );
    assert_ne!(
        second.claim(),
        first.claim(),
        "same worker, same attempt, new token"
    );
    let old = first.claim();
    assert_eq!(e.job_heartbeat(old.clone()).await.expect("heartbeat"), None);
    assert_eq!(
        e.job_snooze(old.clone(), secs(1)).await.expect("snooze"),
        None
    );
    assert!(!e.job_release(old.clone()).await.expect("release"));
    assert!(!e.job_fail(old.clone(), "x".into()).await.expect("fail"));
    let retry = RetryParams {
        claim: old.clone(),
        error: "x".into(),
        delay: None,
    };
    assert_eq!(
        e.job_retry(retry).await.expect("retry"),
        RetryOutcome::NotHeld
    );
    assert_eq!(e.job_ack(vec![old]).await.expect("ack"), vec![false]);
    // The same after a snooze, and after an operator's unclaim.
    assert!(e
        .job_snooze(second.claim(), Duration::ZERO)
        .await
        .expect("snooze")
        .is_some());
    let third = claim(e, "tok", "w", 1).await.remove(0);
    assert_eq!(third.attempt, 1);
    assert!(e.job_unclaim(id).await.expect("unclaim"));
    assert!(
        !e.job_unclaim(id).await.expect("unclaim pending"),
        "only processing jobs"
    );
    let fourth = claim(e, "tok", "w", 1).await.remove(0);
    assert_eq!(fourth.attempt, 1, "unclaim gives the attempt back");
    let stale: Vec<Claim> = [&second, &third].iter().map(|j| j.claim()).collect();
    assert_eq!(e.job_ack(stale).await.expect("ack"), vec![false, false]);
    assert_eq!(
        e.job_ack(vec![fourth.claim()]).await.expect("ack"),
        vec![true]
    );
    // Tokens survive a trip through the dead-letter table.
    let id = enqueue_one(e, job("tok2", "x")).await;
    let a = claim(e, "tok2", "w", 1).await.remove(0);
    assert!(e.job_fail(a.claim(), "x".into()).await.expect("fail"));
    assert_eq!(
        e.dead_requeue(DeadSelect::ids(vec![id]))
            .await
            .expect("requeue"),
        1
    );
    let b = claim(e, "tok2", "w", 1).await.remove(0);
    assert_eq!(b.attempt, 1);
    assert_ne!(a.claim(), b.claim());
}

/// A snooze puts a claimed job back, due later, without using an attempt.
pub async fn snooze_runs_later_without_using_an_attempt<H: Harness>(h: &H) {
    let e = h.engine();
    let id = enqueue_one(e, job("sn", "x")).await;
    let j = claim(e, "sn", "w", 1).await.remove(0);
    let now = h.clock().now();
    assert_eq!(
        e.job_snooze(j.claim(), secs(30)).await.expect("snooze"),
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
        kind(e.job_snooze(again.claim(), Duration::MAX).await),
        ErrorKind::InvalidInput
    );
    assert_eq!(
        e.job_ack(vec![again.claim()]).await.expect("ack"),
        vec![true],
        "a refused snooze changed nothing"
    );
}

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
    let ids: Vec<i64> = e
        .job_enqueue((0..6).map(|i| job("cr", &i.to_string())).collect())
        .await
        .expect("enqueue")
        .iter()
        .map(|o| o.id())
        .collect();
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
        .job_retry(RetryParams {
            claim: by_id(ids[1]),
            error: "stopped".into(),
            delay: None,
        })
        .await
        .expect("retry");
    assert_eq!(retried, RetryOutcome::Cancelled);
    assert!(e
        .job_fail(by_id(ids[2]), "stopped".into())
        .await
        .expect("fail"));
    assert!(e.job_release(by_id(ids[3])).await.expect("release"));
    assert_eq!(
        e.job_snooze(by_id(ids[4]), secs(5)).await.expect("snooze"),
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

/// A job whose worker never acks is claimed again after each expiry until its
/// attempts run out, then it is dead, never handed out again.
pub async fn crash_loop_ends_in_dead<H: Harness>(h: &H) {
    let e = h.engine();
    let opts = QueueOpts {
        visibility_timeout: secs(30),
        ..QueueOpts::default()
    };
    let id = enqueue_one(e, job("crash", "poison").with_queue_opts(opts)).await;
    for attempt in 1..=3 {
        let got = claim(e, "crash", "w", 1).await;
        assert_eq!(got.len(), 1, "attempt {attempt} is handed out");
        assert_eq!(got[0].attempt, attempt);
        assert!(
            claim(e, "crash", "w", 1).await.is_empty(),
            "held while claimed"
        );
        h.clock().advance(secs(30));
    }
    assert!(claim(e, "crash", "w", 1).await.is_empty());
    let info = e.job_get(id).await.expect("get").expect("dead row");
    assert_eq!(info.state, JobState::Dead);
    assert_eq!(info.dead_reason.as_deref(), Some("exhausted"));
    assert_eq!(info.attempts, 3);
}

/// Pending jobs past their expiry are never claimed; they end in dead as
/// `expired`, through the claim path's maintenance or the sweep (which also
/// reaches queues nobody claims from).
pub async fn expired_jobs_are_swept_to_dead<H: Harness>(h: &H) {
    let e = h.engine();
    let expiring = || EnqueueOpts::default().expires_in(secs(10));
    let id = enqueue_one(e, job("ex", "x").with_opts(expiring())).await;
    let idle = enqueue_one(e, job("ex-idle", "x").with_opts(expiring())).await;
    let keep = enqueue_one(e, job("ex", "y")).await;
    h.clock().advance(secs(9));
    assert_eq!(
        e.sweep().await.expect("sweep").expired,
        0,
        "not expired yet"
    );
    h.clock().advance(secs(1));
    let got = claim(e, "ex", "w", 5).await;
    assert_eq!(got.iter().map(|j| j.id).collect::<Vec<_>>(), vec![keep]);
    let report = e.sweep().await.expect("sweep");
    assert!(
        report.expired >= 1,
        "the idle queue's job is swept: {report:?}"
    );
    for id in [id, idle] {
        let info = e.job_get(id).await.expect("get").expect("dead row");
        assert_eq!(info.state, JobState::Dead);
        assert_eq!(info.dead_reason.as_deref(), Some("expired"));
    }
    assert_eq!(e.sweep().await.expect("sweep").expired, 0);
}

/// At most one live job per queue and unique key; the key frees on ack.
pub async fn unique_key_allows_one_live_job<H: Harness>(h: &H) {
    let e = h.engine();
    let k = || job("u", "x").with_opts(EnqueueOpts::default().unique_key("user-1"));
    let first = e.job_enqueue(vec![k()]).await.expect("enqueue")[0];
    let Enqueued::Inserted(id) = first else {
        panic!("first is inserted: {first:?}")
    };
    assert_eq!(
        e.job_enqueue(vec![k()]).await.expect("enqueue"),
        vec![Enqueued::Duplicate(id)]
    );
    let batch = e
        .job_enqueue(vec![k(), job("u", "free")])
        .await
        .expect("batch");
    assert_eq!(batch[0], Enqueued::Duplicate(id));
    assert!(matches!(batch[1], Enqueued::Inserted(_)));
    let other_queue = job("u2", "x").with_opts(EnqueueOpts::default().unique_key("user-1"));
    assert!(matches!(
        e.job_enqueue(vec![other_queue]).await.expect("enqueue")[0],
        Enqueued::Inserted(_)
    ));
    let in_batch = e
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
            e.job_enqueue(vec![k()]).await.expect("enqueue")[0],
            Enqueued::Duplicate(_)
        ),
        "still live while processing"
    );
    e.job_ack(vec![keyed.claim()]).await.expect("ack");
    assert!(matches!(
        e.job_enqueue(vec![k()]).await.expect("enqueue")[0],
        Enqueued::Inserted(_)
    ));
}

/// Stats count ready, scheduled, processing and dead, and the oldest age.
pub async fn stats_count_each_state<H: Harness>(h: &H) {
    let e = h.engine();
    let now = h.clock().now();
    e.job_enqueue(
        (0..4)
            .map(|i| job("st", &i.to_string()).with_opts(EnqueueOpts::default().run_at(now - 40)))
            .collect(),
    )
    .await
    .expect("enqueue");
    enqueue_one(
        e,
        job("st", "later").with_opts(EnqueueOpts::default().delay(secs(100))),
    )
    .await;
    let got = claim(e, "st", "w", 2).await;
    e.job_fail(got[0].claim(), "x".into()).await.expect("fail");
    let s = e.queue_stats("st".into()).await.expect("stats");
    assert_eq!((s.ready, s.scheduled, s.processing, s.dead), (2, 1, 1, 1));
    assert_eq!(s.oldest_ready_age_s, Some(40));
    let empty = e.queue_stats("nothing".into()).await.expect("stats");
    assert_eq!(
        (empty.ready, empty.dead, empty.oldest_ready_age_s),
        (0, 0, None)
    );
}

/// Dead letters can be listed in pages, requeued with fresh attempts, and purged.
pub async fn dead_letters_list_requeue_purge<H: Harness>(h: &H) {
    let e = h.engine();
    e.job_enqueue((0..5).map(|i| job("dl", &i.to_string())).collect())
        .await
        .expect("enqueue");
    enqueue_one(e, job("dl-other", "o")).await;
    for j in claim(e, "dl", "w", 5)
        .await
        .into_iter()
        .chain(claim(e, "dl-other", "w", 1).await)
    {
        e.job_fail(j.claim(), "x".into()).await.expect("fail");
    }
    let page1 = e
        .dead_list(DeadListParams {
            queue: Some("dl".into()),
            after_id: None,
            limit: 3,
        })
        .await
        .expect("list");
    assert_eq!(page1.len(), 3);
    let page2 = e
        .dead_list(DeadListParams {
            queue: Some("dl".into()),
            after_id: Some(page1[2].id),
            limit: 3,
        })
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
    assert_eq!(e.queue_stats("dl".into()).await.expect("stats").dead, 0);
    assert_eq!(
        e.queue_stats("dl-other".into()).await.expect("stats").dead,
        1,
        "other queue untouched"
    );
    assert_eq!(
        e.dead_requeue(DeadSelect::queue("dl-other"))
            .await
            .expect("requeue"),
        1
    );
    assert_eq!(
        e.queue_stats("dl-other".into()).await.expect("stats").ready,
        1
    );
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
        e.job_fail(j.claim(), "x".into()).await.expect("fail");
    }
    h.clock().advance(secs(59));
    assert_eq!(e.sweep().await.expect("sweep").dead_pruned, 0);
    h.clock().advance(secs(1));
    assert_eq!(e.sweep().await.expect("sweep").dead_pruned, 1);
    let left = e
        .dead_list(DeadListParams {
            queue: Some("ret".into()),
            after_id: None,
            limit: 10,
        })
        .await
        .expect("list");
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].payload, b"forever");
}

/// Enqueue inside the caller's transaction commits or rolls back with it.
pub async fn outbox_commits_and_rolls_back_with_caller<H: Harness>(h: &H) {
    let e = h.engine();
    h.outbox_enqueue(job("outbox", "rolled back"), false)
        .await
        .expect("rollback path");
    assert_eq!(live_count(e, "outbox").await, 0, "rollback drops the job");
    h.outbox_enqueue(job("outbox", "committed"), true)
        .await
        .expect("commit path");
    assert_eq!(live_count(e, "outbox").await, 1);
    h.clock().advance(secs(5));
    let got = claim(e, "outbox", "w", 5).await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].payload, b"committed");
}

/// Two workers claiming concurrently in a loop never hold the same job inside
/// a valid claim, and together they drain every job exactly once.
pub async fn concurrent_claimers_never_share_a_job<H: Harness>(h: &H) {
    const N: usize = 10_000;
    let e = h.engine();
    for chunk in (0..N).collect::<Vec<_>>().chunks(1000) {
        e.job_enqueue(chunk.iter().map(|i| job("race", &i.to_string())).collect())
            .await
            .expect("enqueue");
    }
    let mut tasks = Vec::new();
    for w in 0..2 {
        let e = e.clone();
        tasks.push(tokio::spawn(async move {
            let worker = format!("w{w}");
            let mut seen = Vec::new();
            loop {
                let got = e
                    .job_claim(ClaimParams::new("race", worker.clone(), 7))
                    .await
                    .expect("claim");
                if got.is_empty() {
                    break;
                }
                let acks = e
                    .job_ack(got.iter().map(|j| j.claim()).collect())
                    .await
                    .expect("ack");
                assert!(
                    acks.iter().all(|a| *a),
                    "every ack of a fresh claim succeeds"
                );
                seen.extend(got.iter().map(|j| j.id));
            }
            seen
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.expect("task"));
    }
    let distinct: HashSet<i64> = all.iter().copied().collect();
    assert_eq!(all.len(), N, "each job claimed exactly once");
    assert_eq!(distinct.len(), N);
    assert_eq!(live_count(e, "race").await, 0);
}

/// Queue list names every queue with live or dead jobs.
pub async fn queue_list_names_queues<H: Harness>(h: &H) {
    let e = h.engine();
    enqueue_one(e, job("zeta", "x")).await;
    enqueue_one(e, job("alpha", "x")).await;
    let j = claim(e, "alpha", "w", 1).await.remove(0);
    e.job_fail(j.claim(), "x".into()).await.expect("fail");
    assert_eq!(
        e.queue_list().await.expect("list"),
        vec!["alpha".to_string(), "zeta".to_string()]
    );
}

/// Live jobs can be listed by queue and state, in id order, in pages.
pub async fn job_list_filters_and_pages<H: Harness>(h: &H) {
    let e = h.engine();
    let ids: Vec<i64> = e
        .job_enqueue((0..5).map(|i| job("jl", &i.to_string())).collect())
        .await
        .expect("enqueue")
        .iter()
        .map(|o| o.id())
        .collect();
    enqueue_one(e, job("jl-other", "x")).await;
    let claimed = claim(e, "jl", "w", 2).await;
    let list = |queue: Option<&str>, state, after_id, limit| {
        e.job_list(JobListParams {
            queue: queue.map(str::to_string),
            state,
            after_id,
            limit,
        })
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

/// Wait up to 10 s for a hint accepted by `want`.
async fn hint_where(
    rx: &mut tokio::sync::broadcast::Receiver<alkstore_core::Wake>,
    want: impl Fn(&alkstore_core::Wake) -> bool,
) -> bool {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Ok(w)) if want(&w) => return true,
            Ok(Ok(_)) | Ok(Err(tokio::sync::broadcast::error::RecvError::Lagged(_))) => continue,
            Ok(Err(_)) | Err(_) => return false,
        }
    }
}

/// Commits that make jobs claimable send a wake hint: the engine's own
/// enqueues at once, and commits on other connections (the caller's outbox
/// transaction) through the engine's watcher or LISTEN connection.
pub async fn wake_hints_follow_commits<H: Harness>(h: &H) {
    use alkstore_core::Wake;
    let e = h.engine();
    let mut rx = e.wake_subscribe();
    if h.foreign_hints_name_queue() {
        // The listener announces itself once it is listening.
        assert!(
            hint_where(&mut rx, |w| *w == Wake::All).await,
            "the listener never became ready"
        );
    }
    enqueue_one(e, job("wake-own", "x")).await;
    assert!(
        hint_where(&mut rx, |w| *w == Wake::Queue("wake-own".into())).await,
        "no hint naming the queue after the engine's own enqueue"
    );
    if h.foreign_hints_name_queue() {
        h.outbox_enqueue(job("wake-foreign", "x"), true)
            .await
            .expect("outbox");
        assert!(
            hint_where(&mut rx, |w| *w == Wake::Queue("wake-foreign".into())).await,
            "no hint naming the queue after another connection's commit"
        );
    } else {
        // Let the watcher start and settle, then forget older hints.
        tokio::time::sleep(Duration::from_millis(300)).await;
        while rx.try_recv().is_ok() {}
        h.outbox_enqueue(job("wake-foreign", "x"), true)
            .await
            .expect("outbox");
        assert!(
            hint_where(&mut rx, |w| w.concerns("wake-foreign")).await,
            "no hint after another connection's commit"
        );
    }
}

/// Every option of a batch enqueue is stamped on each row, whether the batch
/// is uniform (jobs differ only in payload) or mixed.
pub async fn batch_stamps_every_option<H: Harness>(h: &H) {
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
        let ids: Vec<i64> = e
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
        .job_retry(RetryParams {
            claim: got[1].claim(),
            error: "x".into(),
            delay: None,
        })
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
    assert!(e.job_fail(got[2].claim(), "x".into()).await.expect("fail"));
    h.clock().advance(secs(10 * 365 * 24 * 3600));
    e.sweep().await.expect("sweep");
    let kept = e.job_get(got[2].id).await.expect("get").expect("kept");
    assert_eq!(kept.state, JobState::Dead);
}

/// NUL bytes in a queue name, unique key or worker name are refused as
/// invalid input on every engine (PostgreSQL cannot store them in text).
pub async fn nul_bytes_are_rejected<H: Harness>(h: &H) {
    let e = h.engine();
    let bad_queue = job("q\0x", "p");
    let bad_key = job("nul", "p").with_opts(EnqueueOpts::default().unique_key("k\0"));
    for j in [bad_queue, bad_key] {
        assert_eq!(kind(e.job_enqueue(vec![j]).await), ErrorKind::InvalidInput);
    }
    assert_eq!(live_count(e, "nul").await, 0);
    enqueue_one(e, job("nul", "p")).await;
    assert_eq!(
        kind(e.job_claim(ClaimParams::new("nul", "w\0", 1)).await),
        ErrorKind::InvalidInput
    );
    assert_eq!(
        kind(e.queue_stats("nul\0".into()).await),
        ErrorKind::InvalidInput
    );
    let j = claim(e, "nul", "w", 1).await.remove(0);
    let forged = Claim {
        worker: "w\0".into(),
        ..j.claim()
    };
    assert_eq!(kind(e.job_ack(vec![forged]).await), ErrorKind::InvalidInput);
    assert_eq!(e.job_ack(vec![j.claim()]).await.expect("ack"), vec![true]);
}

/// A pending job past its expiry is never ready: stats count it as expired,
/// and the next claim on its queue moves it to dead as `expired` on every
/// engine, without waiting for a sweep.
pub async fn expired_pending_jobs_are_never_ready<H: Harness>(h: &H) {
    let e = h.engine();
    let id = enqueue_one(
        e,
        job("xp", "x").with_opts(EnqueueOpts::default().expires_in(secs(10))),
    )
    .await;
    let keep = enqueue_one(e, job("xp", "y")).await;
    h.clock().advance(secs(10));
    let s = e.queue_stats("xp".into()).await.expect("stats");
    assert_eq!((s.ready, s.expired, s.scheduled), (1, 1, 0));
    let got = claim(e, "xp", "w", 5).await;
    assert_eq!(got.iter().map(|j| j.id).collect::<Vec<_>>(), vec![keep]);
    let info = e.job_get(id).await.expect("get").expect("dead row");
    assert_eq!(
        (info.state, info.dead_reason.as_deref()),
        (JobState::Dead, Some("expired"))
    );
    let s = e.queue_stats("xp".into()).await.expect("stats");
    assert_eq!((s.ready, s.expired, s.processing, s.dead), (0, 0, 1, 1));
}

/// Every delay goes through one validation: enqueue, retry and snooze refuse
/// the same out-of-range value, and a refused call changes nothing.
pub async fn every_delay_has_one_limit<H: Harness>(h: &H) {
    let e = h.engine();
    let far = job("dl1", "x").with_opts(EnqueueOpts::default().delay(Duration::MAX));
    assert_eq!(
        kind(e.job_enqueue(vec![far]).await),
        ErrorKind::InvalidInput
    );
    enqueue_one(e, job("dl1", "x")).await;
    let j = claim(e, "dl1", "w", 1).await.remove(0);
    let retry = RetryParams {
        claim: j.claim(),
        error: "x".into(),
        delay: Some(Duration::MAX),
    };
    assert_eq!(kind(e.job_retry(retry).await), ErrorKind::InvalidInput);
    assert_eq!(
        kind(e.job_snooze(j.claim(), Duration::MAX).await),
        ErrorKind::InvalidInput
    );
    let ok = RetryParams {
        claim: j.claim(),
        error: "x".into(),
        delay: Some(secs(3600)),
    };
    assert!(matches!(
        e.job_retry(ok).await.expect("retry"),
        RetryOutcome::Scheduled(_)
    ));
}

/// The sweep hands expired claims back on every queue, including queues no
/// worker claims from any more (the only worker was killed), and stats tell
/// expired claims apart from live ones.
pub async fn sweep_rescues_expired_claims_on_every_queue<H: Harness>(h: &H) {
    let e = h.engine();
    let last = QueueOpts {
        max_attempts: 1,
        ..QueueOpts::default()
    };
    let a = enqueue_one(e, job("orph-a", "x")).await;
    let b = enqueue_one(e, job("orph-b", "x")).await;
    let c = enqueue_one(e, job("orph-b", "last").with_queue_opts(last)).await;
    claim(e, "orph-a", "dead-worker", 1).await;
    claim(e, "orph-b", "dead-worker", 2).await;
    let s = e.queue_stats("orph-b".into()).await.expect("stats");
    assert_eq!((s.processing, s.expired_claims), (2, 0));
    h.clock().advance(secs(300));
    let s = e.queue_stats("orph-b".into()).await.expect("stats");
    assert_eq!((s.processing, s.expired_claims, s.ready), (0, 2, 0));
    let r = e.sweep().await.expect("sweep");
    assert_eq!((r.rescued, r.exhausted), (2, 1), "{r:?}");
    for id in [a, b] {
        let info = e.job_get(id).await.expect("get").expect("live");
        assert_eq!((info.state, info.attempts), (JobState::Pending, 1));
    }
    let info = e.job_get(c).await.expect("get").expect("dead");
    assert_eq!(info.dead_reason.as_deref(), Some("exhausted"));
    let s = e.queue_stats("orph-b".into()).await.expect("stats");
    assert_eq!(
        (s.ready, s.processing, s.expired_claims, s.dead),
        (1, 0, 0, 1)
    );
    assert_eq!(e.sweep().await.expect("sweep").rescued, 0);
}

/// Acked jobs of a queue that opts in are kept as `completed` for the
/// stamped time, listed and counted, then pruned by the sweep; other queues
/// still delete on ack.
pub async fn completed_jobs_are_kept_when_opted_in<H: Harness>(h: &H) {
    let e = h.engine();
    let kept = QueueOpts {
        keep_completed: Some(secs(60)),
        ..QueueOpts::default()
    };
    let k = enqueue_one(e, job("keep", "kept payload").with_queue_opts(kept)).await;
    let d = enqueue_one(e, job("keep", "deleted")).await;
    let got = claim(e, "keep", "w", 2).await;
    let acks = e
        .job_ack(got.iter().map(|j| j.claim()).collect())
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
        .job_list(JobListParams {
            queue: Some("keep".into()),
            state: Some(JobState::Completed),
            after_id: None,
            limit: 10,
        })
        .await
        .expect("list");
    assert_eq!(listed.iter().map(|j| j.id).collect::<Vec<_>>(), vec![k]);
    let live = e
        .job_list(JobListParams {
            queue: Some("keep".into()),
            state: None,
            after_id: None,
            limit: 10,
        })
        .await
        .expect("list");
    assert!(live.is_empty(), "completed jobs are not live");
    assert_eq!(
        e.queue_stats("keep".into()).await.expect("stats").completed,
        1
    );
    h.clock().advance(secs(59));
    assert_eq!(e.sweep().await.expect("sweep").completed_pruned, 0);
    h.clock().advance(secs(1));
    assert_eq!(e.sweep().await.expect("sweep").completed_pruned, 1);
    assert!(e.job_get(k).await.expect("get").is_none());
}

/// Each failed attempt's error is kept on the job, in order, through retries
/// and into the dead-letter table.
pub async fn every_attempt_error_is_kept<H: Harness>(h: &H) {
    let e = h.engine();
    let id = enqueue_one(e, job("errs", "x")).await;
    for n in 1..=2 {
        let j = claim(e, "errs", "w", 1).await.remove(0);
        let p = RetryParams {
            claim: j.claim(),
            error: format!("boom {n}"),
            delay: Some(Duration::ZERO),
        };
        assert!(matches!(
            e.job_retry(p).await.expect("retry"),
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
    assert!(e.job_fail(j.claim(), "final".into()).await.expect("fail"));
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
    assert!(e
        .job_fail(j.claim(), "é".repeat(10_000))
        .await
        .expect("fail"));
    let info = e.job_get(id).await.expect("get").expect("dead");
    assert!(info.errors[0].error.len() <= alkstore_core::queue::MAX_ERROR_BYTES);
}

/// Requeue and purge take a batch limit, so bulk work runs in bounded
/// transactions; `dead_count` tells how many a selection matches.
pub async fn dead_letters_in_bounded_batches<H: Harness>(h: &H) {
    let e = h.engine();
    e.job_enqueue((0..7).map(|i| job("bulk", &i.to_string())).collect())
        .await
        .expect("enqueue");
    for j in claim(e, "bulk", "w", 7).await {
        e.job_fail(j.claim(), "x".into()).await.expect("fail");
    }
    let all = DeadSelect::queue("bulk");
    assert_eq!(e.dead_count(all.clone()).await.expect("count"), 7);
    assert_eq!(
        e.dead_requeue(all.clone().limit(3)).await.expect("requeue"),
        3
    );
    assert_eq!(e.dead_count(all.clone()).await.expect("count"), 4);
    assert_eq!(e.queue_stats("bulk".into()).await.expect("stats").ready, 3);
    assert_eq!(e.dead_purge(all.clone().limit(3)).await.expect("purge"), 3);
    assert_eq!(e.dead_purge(all.clone().limit(3)).await.expect("purge"), 1);
    assert_eq!(e.dead_purge(all.clone().limit(3)).await.expect("purge"), 0);
    assert_eq!(
        kind(e.dead_purge(all.limit(0)).await),
        ErrorKind::InvalidInput
    );
    let _ = h;
}
