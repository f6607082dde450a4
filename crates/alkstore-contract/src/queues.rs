//! Contract rows for job queues.

use std::collections::HashSet;
use std::time::Duration;

use alkstore_core::{
    Claim, ClaimParams, Clock, DeadListParams, DeadSelect, EnqueueOpts, Enqueued, ErrorKind, Job,
    JobListParams, JobState, NewJob, QueueEngine, QueueOpts, Result, RetryOutcome, RetryParams,
};

use crate::Harness;

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn job(queue: &str, payload: &str) -> NewJob {
    NewJob::new(queue, payload.as_bytes().to_vec())
}

async fn enqueue_one<E: QueueEngine>(e: &E, j: NewJob) -> i64 {
    let out = e.job_enqueue(vec![j]).await.expect("enqueue");
    out[0].id()
}

async fn claim<E: QueueEngine>(e: &E, queue: &str, worker: &str, n: u32) -> Vec<Job> {
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

async fn live_count<E: QueueEngine>(e: &E, queue: &str) -> u64 {
    let s = e.queue_stats(queue.to_string()).await.expect("stats");
    s.ready + s.scheduled + s.processing
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
        attempt: 1,
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

async fn kind_of_retry<E: QueueEngine>(e: &E, j: &Job) -> RetryOutcome {
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
    claims[1].attempt = 9;
    claims.push(Claim {
        id: -1,
        worker: "w".into(),
        attempt: 1,
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

/// Cancel deletes a live job; cancelling again or an unknown id is false.
pub async fn cancel_removes_a_live_job<H: Harness>(h: &H) {
    let e = h.engine();
    let id = enqueue_one(e, job("c", "x")).await;
    assert!(e.job_cancel(id).await.expect("cancel"));
    assert!(!e.job_cancel(id).await.expect("cancel"));
    assert!(e.job_get(id).await.expect("get").is_none());
    assert!(claim(e, "c", "w", 1).await.is_empty());
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
        e.queue_sweep().await.expect("sweep").expired,
        0,
        "not expired yet"
    );
    h.clock().advance(secs(1));
    let got = claim(e, "ex", "w", 5).await;
    assert_eq!(got.iter().map(|j| j.id).collect::<Vec<_>>(), vec![keep]);
    let report = e.queue_sweep().await.expect("sweep");
    assert!(
        report.expired >= 1,
        "the idle queue's job is swept: {report:?}"
    );
    for id in [id, idle] {
        let info = e.job_get(id).await.expect("get").expect("dead row");
        assert_eq!(info.state, JobState::Dead);
        assert_eq!(info.dead_reason.as_deref(), Some("expired"));
    }
    assert_eq!(e.queue_sweep().await.expect("sweep").expired, 0);
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
    assert_eq!(e.queue_sweep().await.expect("sweep").dead_pruned, 0);
    h.clock().advance(secs(1));
    assert_eq!(e.queue_sweep().await.expect("sweep").dead_pruned, 1);
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
    // No retention stamped: a dead letter survives any sweep.
    assert!(e.job_fail(got[2].claim(), "x".into()).await.expect("fail"));
    h.clock().advance(secs(10 * 365 * 24 * 3600));
    e.queue_sweep().await.expect("sweep");
    let kept = e.job_get(got[2].id).await.expect("get").expect("kept");
    assert_eq!(kept.state, JobState::Dead);
}
