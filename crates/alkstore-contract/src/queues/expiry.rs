//! Expiry: expired jobs and claims, the sweep, crash loops.

use std::time::Duration;

use alkstore_core::Writes as _;
use alkstore_core::{Engine, EnqueueOpts, ErrorKind, JobState, QueueAdmin, QueueOpts};

use super::support::{claim, enqueue_one, job, kind, secs};
use crate::Harness;

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

/// The jobs a worker had claimed go back to their queue as soon as the
/// process registry declares that worker dead (it missed its beats), long
/// before their own visibility timeout: the next claim takes them, with a
/// new claim that fences the dead worker's. A live worker's claims stay.
pub async fn a_dead_workers_claims_go_back_at_once<H: Harness>(h: &H) {
    use alkstore_core::process::ProcessBeatParams;
    use alkstore_core::ProcessEngine as _;
    let e = h.engine();
    let long = QueueOpts {
        visibility_timeout: secs(300),
        ..QueueOpts::default()
    };
    let q = "lifeline";
    for p in ["a", "b", "c"] {
        enqueue_one(e, job(q, p).with_queue_opts(long.clone())).await;
    }
    let beat = |id: &str| ProcessBeatParams::new(id, "worker", secs(15));
    e.process_beat(beat("doomed")).await.expect("beat");
    e.process_beat(beat("alive")).await.expect("beat");
    let doomed = claim(e, q, "doomed", 2).await;
    let kept = claim(e, q, "alive", 1).await;
    assert_eq!((doomed.len(), kept.len()), (2, 1));
    // "doomed" stops beating; "alive" beats on.
    h.clock().advance(secs(10));
    e.process_beat(beat("alive")).await.expect("beat");
    assert!(
        claim(e, q, "next", 5).await.is_empty(),
        "doomed is alive yet"
    );
    h.clock().advance(secs(6));
    e.process_beat(beat("alive")).await.expect("beat");
    let again = claim(e, q, "next", 5).await;
    let mut ids: Vec<i64> = again.iter().map(|j| j.id).collect();
    ids.sort_unstable();
    let mut want: Vec<i64> = doomed.iter().map(|j| j.id).collect();
    want.sort_unstable();
    assert_eq!(
        ids, want,
        "the dead worker's jobs, and only they, are claimed again"
    );
    assert!(again.iter().all(|j| j.attempt == 2), "each a new attempt");
    let late = e
        .job_ack(doomed.iter().map(|j| j.claim()).collect::<Vec<_>>())
        .await
        .expect("ack");
    assert_eq!(
        late,
        [false, false],
        "the dead worker's acks are fenced off"
    );
    let acked = e
        .job_ack(
            again
                .iter()
                .chain(&kept)
                .map(|j| j.claim())
                .collect::<Vec<_>>(),
        )
        .await
        .expect("ack");
    assert_eq!(acked, [true, true, true]);
    // A new process under the dead one's id claims before its first beat:
    // what it claims is its own, not the dead row's.
    enqueue_one(e, job(q, "d").with_queue_opts(long)).await;
    let reborn = claim(e, q, "doomed", 1).await;
    assert_eq!(reborn.len(), 1);
    h.clock().advance(secs(1));
    assert!(
        claim(e, q, "next", 5).await.is_empty(),
        "a claim made after the row died was handed back"
    );
    let acked = e
        .job_ack(reborn.iter().map(|j| j.claim()).collect::<Vec<_>>())
        .await
        .expect("ack");
    assert_eq!(acked, [true]);
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
    let s = e.queue_stats("xp").await.expect("stats");
    assert_eq!((s.ready, s.expired, s.scheduled), (1, 1, 0));
    let got = claim(e, "xp", "w", 5).await;
    assert_eq!(got.iter().map(|j| j.id).collect::<Vec<_>>(), vec![keep]);
    let info = e.job_get(id).await.expect("get").expect("dead row");
    assert_eq!(
        (info.state, info.dead_reason.as_deref()),
        (JobState::Dead, Some("expired"))
    );
    let s = e.queue_stats("xp").await.expect("stats");
    assert_eq!((s.ready, s.expired, s.processing, s.dead), (0, 0, 1, 1));
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
    let s = e.queue_stats("orph-b").await.expect("stats");
    assert_eq!((s.processing, s.expired_claims), (2, 0));
    h.clock().advance(secs(300));
    let s = e.queue_stats("orph-b").await.expect("stats");
    assert_eq!((s.processing, s.expired_claims, s.ready), (0, 2, 0));
    let r = e.sweep().await.expect("sweep");
    assert_eq!((r.rescued, r.exhausted), (2, 1), "{r:?}");
    for id in [a, b] {
        let info = e.job_get(id).await.expect("get").expect("live");
        assert_eq!((info.state, info.attempts), (JobState::Pending, 1));
    }
    let info = e.job_get(c).await.expect("get").expect("dead");
    assert_eq!(info.dead_reason.as_deref(), Some("exhausted"));
    let s = e.queue_stats("orph-b").await.expect("stats");
    assert_eq!(
        (s.ready, s.processing, s.expired_claims, s.dead),
        (1, 0, 0, 1)
    );
    assert_eq!(e.sweep().await.expect("sweep").rescued, 0);
}

/// Workers sweep through `sweep_due`: the whole store is swept at most once
/// per interval however many callers ask, and a due sweep does everything
/// `sweep` does.
pub async fn sweep_due_runs_once_per_interval<H: Harness>(h: &H) {
    let e = h.engine();
    let id = enqueue_one(
        e,
        job("due", "x").with_opts(EnqueueOpts::default().expires_in(secs(10))),
    )
    .await;
    let first = e.sweep_due(secs(60)).await.expect("sweep");
    assert!(first.is_some(), "the first caller sweeps");
    assert!(e.sweep_due(secs(60)).await.expect("sweep").is_none());
    h.clock().advance(secs(30));
    let other = e.clone();
    assert!(
        other.sweep_due(secs(60)).await.expect("sweep").is_none(),
        "another caller within the interval skips"
    );
    h.clock().advance(secs(30));
    let due = e
        .sweep_due(secs(60))
        .await
        .expect("sweep")
        .expect("due again");
    assert_eq!(due.expired, 1, "{due:?}");
    let info = e.job_get(id).await.expect("get").expect("dead");
    assert_eq!(info.dead_reason.as_deref(), Some("expired"));
    assert_eq!(
        kind(e.sweep_due(Duration::MAX).await),
        ErrorKind::InvalidInput
    );
}

/// The rows above, for [`contract_suite!`](crate::contract_suite): list each
/// `pub async fn …<H: Harness>` here, next to where it is written.
#[doc(hidden)]
#[macro_export]
macro_rules! __queues_expiry {
    ($then:path, $args:tt) => {
        $then! { @rows $args queues::expiry [
            crash_loop_ends_in_dead,
            a_dead_workers_claims_go_back_at_once,
            expired_jobs_are_swept_to_dead,
            expired_pending_jobs_are_never_ready,
            sweep_rescues_expired_claims_on_every_queue,
            sweep_due_runs_once_per_interval,
        ] }
    };
}
