//! Jobs in a transaction: enqueue (one, batch), and ack, retry, fail and
//! snooze of a claim the caller holds (token-checked).

use alkstore_core::queue::JobFailParams;
use alkstore_core::queue::JobSnoozeParams;
use alkstore_core::Writes as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use alkstore_core::{
    Engine, Job, JobRetryParams, JobState, QueueAdmin, QueueEngine, QueueOpts,
    QueueThroughputParams, RetryOutcome, Wake,
};

use super::support::{
    assert_refused_and_rolled_back, assert_rows, begin_with_row, committed_row, secs, woken, End,
};
use crate::queues::support::{claim, enqueue_one, job, live_count};
use crate::Harness;

/// Enqueue one job in a transaction: rolled back or dropped, neither the
/// job nor the application's row is there; committed, both are, this
/// process's workers are woken for the queue, and a claim finds the job.
pub async fn enqueue_one_commits_with_the_business_row_or_not_at_all<H: Harness>(h: &H) {
    let e = h.engine();
    let q = "tx-enqueue-one";
    for end in End::ALL {
        let mut rx = e.wake_subscribe();
        let tx = begin_with_row(h, &end.key(q)).await;
        let out = tx.job_enqueue(vec![job(q, "one")]).await.expect("enqueue");
        assert_eq!(out.len(), 1);
        end.finish::<H>(tx).await;
        if end.commits() {
            assert!(
                woken(&mut rx, |w| *w == Wake::Queue(q.into())).await,
                "the commit wakes the queue's workers"
            );
            let got = claim(e, q, "w", 5).await;
            assert_eq!(got.len(), 1, "claimable once committed");
            assert_eq!(
                (got[0].id, got[0].payload.as_slice()),
                (out[0].id(), &b"one"[..])
            );
        } else {
            assert_eq!(live_count(e, q).await, 0, "{end:?} leaves no job");
            assert_rows(h, &[], &format!("after {end:?}")).await;
        }
    }
    assert_rows(h, &committed_row(q), "at the end").await;
}

/// A batch in a transaction is all or none with it and the application's
/// row: nothing after a rollback or a drop, every job after the commit,
/// claimable in order.
pub async fn enqueue_batch_commits_all_or_nothing_with_the_business_row<H: Harness>(h: &H) {
    let e = h.engine();
    let q = "tx-enqueue-batch";
    for end in End::ALL {
        let mut rx = e.wake_subscribe();
        let tx = begin_with_row(h, &end.key(q)).await;
        let batch = vec![job(q, "1"), job(q, "2"), job(q, "3")];
        let out = tx.job_enqueue(batch).await.expect("enqueue");
        assert_eq!(out.len(), 3);
        end.finish::<H>(tx).await;
        if end.commits() {
            assert!(woken(&mut rx, |w| *w == Wake::Queue(q.into())).await);
            let got = claim(e, q, "w", 10).await;
            let ids: Vec<i64> = got.iter().map(|j| j.id).collect();
            let want: Vec<i64> = out.iter().map(|o| o.id()).collect();
            assert_eq!(ids, want, "every job, in order");
        } else {
            assert_eq!(live_count(e, q).await, 0, "{end:?} leaves no job");
            assert_rows(h, &[], &format!("after {end:?}")).await;
        }
    }
    assert_rows(h, &committed_row(q), "at the end").await;
}

/// One job of `q`, claimed by worker `w`.
async fn claimed<H: Harness>(h: &H, q: &str) -> Job {
    let e = h.engine();
    let id = enqueue_one(e, job(q, "work")).await;
    let mut got = claim(e, q, "w", 1).await;
    let j = got.pop().expect("claimed");
    assert_eq!(j.id, id);
    j
}

/// How many of `q`'s jobs are claimed now.
async fn processing<E: QueueEngine + QueueAdmin + alkstore_core::AllOps>(e: &E, q: &str) -> u64 {
    e.queue_stats(q).await.expect("stats").processing
}

/// Ack a claimed job in a transaction: rolled back or dropped, the job is
/// still the claimer's (nothing acked, no application row); committed,
/// the job is done and the application's row is there.
pub async fn ack_commits_with_the_business_row_or_not_at_all<H: Harness>(h: &H) {
    let e = h.engine();
    let q = "tx-ack";
    let j = claimed(h, q).await;
    for end in End::ALL {
        let tx = begin_with_row(h, &end.key(q)).await;
        tx.job_ack(j.claim()).await.expect("ack");
        end.finish::<H>(tx).await;
        if end.commits() {
            assert_eq!(live_count(e, q).await, 0, "acked");
            let info = e.job_get(j.id).await.expect("get");
            assert!(
                info.as_ref().is_none_or(|i| i.state == JobState::Completed),
                "done: {info:?}"
            );
        } else {
            assert_eq!(processing(e, q).await, 1, "{end:?}: still claimed");
            assert_rows(h, &[], &format!("after {end:?}")).await;
        }
    }
    assert_rows(h, &committed_row(q), "at the end").await;
}

/// Retry a claimed job in a transaction (due at once): rolled back or
/// dropped, the job is still claimed; committed, it is pending with its
/// error recorded, workers are woken, and a claim finds its next attempt.
pub async fn retry_commits_with_the_business_row_or_not_at_all<H: Harness>(h: &H) {
    let e = h.engine();
    let q = "tx-retry";
    let j = claimed(h, q).await;
    for end in End::ALL {
        let mut rx = e.wake_subscribe();
        let tx = begin_with_row(h, &end.key(q)).await;
        let retry = JobRetryParams::new(j.claim(), "boom").delay(Duration::ZERO);
        let outcome = tx.job_retry(retry).await.expect("retry");
        assert!(matches!(outcome, RetryOutcome::Scheduled(_)), "{outcome:?}");
        end.finish::<H>(tx).await;
        if end.commits() {
            assert!(woken(&mut rx, |w| w.concerns(q)).await, "workers woken");
            let again = claim(e, q, "w2", 1).await;
            assert_eq!(again.len(), 1, "claimable again");
            assert_eq!((again[0].id, again[0].attempt), (j.id, 2));
            let info = e.job_get(j.id).await.expect("get").expect("row");
            assert_eq!(info.last_error.as_deref(), Some("boom"));
        } else {
            assert_eq!(processing(e, q).await, 1, "{end:?}: still claimed");
            assert_rows(h, &[], &format!("after {end:?}")).await;
        }
    }
    assert_rows(h, &committed_row(q), "at the end").await;
}

/// Fail a claimed job in a transaction: rolled back or dropped, the job is
/// still claimed; committed, it is dead as `failed`.
pub async fn fail_commits_with_the_business_row_or_not_at_all<H: Harness>(h: &H) {
    let e = h.engine();
    let q = "tx-fail";
    let j = claimed(h, q).await;
    for end in End::ALL {
        let tx = begin_with_row(h, &end.key(q)).await;
        tx.job_fail(JobFailParams::new(j.claim(), "fatal".to_string()))
            .await
            .expect("fail");
        end.finish::<H>(tx).await;
        let info = e.job_get(j.id).await.expect("get").expect("row");
        if end.commits() {
            assert_eq!(info.state, JobState::Dead);
            assert_eq!(info.dead_reason.as_deref(), Some("failed"));
            assert_eq!(info.last_error.as_deref(), Some("fatal"));
        } else {
            assert_eq!(info.state, JobState::Processing, "{end:?}: still claimed");
            assert_rows(h, &[], &format!("after {end:?}")).await;
        }
    }
    assert_rows(h, &committed_row(q), "at the end").await;
}

/// Snooze a claimed job in a transaction: rolled back or dropped, the job
/// is still claimed; committed, it is pending, due after the delay (not
/// before), without using an attempt.
pub async fn snooze_commits_with_the_business_row_or_not_at_all<H: Harness>(h: &H) {
    let e = h.engine();
    let q = "tx-snooze";
    let j = claimed(h, q).await;
    for end in End::ALL {
        let tx = begin_with_row(h, &end.key(q)).await;
        let due = tx
            .job_snooze(JobSnoozeParams::new(j.claim(), secs(60)))
            .await
            .expect("snooze")
            .expect("held: a due time");
        end.finish::<H>(tx).await;
        if end.commits() {
            let info = e.job_get(j.id).await.expect("get").expect("row");
            assert_eq!((info.state, info.run_at), (JobState::Pending, due));
            assert!(claim(e, q, "w2", 1).await.is_empty(), "not due yet");
            h.clock().advance(secs(60));
            let again = claim(e, q, "w2", 1).await;
            assert_eq!(again.len(), 1, "due after the delay");
            assert_eq!(
                (again[0].id, again[0].attempt),
                (j.id, 1),
                "no attempt used"
            );
        } else {
            assert_eq!(processing(e, q).await, 1, "{end:?}: still claimed");
            assert_rows(h, &[], &format!("after {end:?}")).await;
        }
    }
    assert_rows(h, &committed_row(q), "at the end").await;
}

/// A queue's all-time throughput: (completed, failed).
async fn counted<E: QueueAdmin + alkstore_core::AllOps>(e: &E, q: &str) -> (u64, u64) {
    let t = e
        .queue_throughput(QueueThroughputParams::queue(q, secs(60)))
        .await
        .expect("throughput");
    t.totals
        .iter()
        .find(|t| t.queue == q)
        .map_or((0, 0), |t| (t.completed, t.failed))
}

/// Jobs acked, retried and failed in a transaction count in their queues'
/// throughput only once it commits: nothing after a rollback or a drop;
/// after the commit, each ack as completed (a queue that keeps completed
/// jobs too) and each retry and failure as failed.
pub async fn settles_count_in_the_throughput_only_once_committed<H: Harness>(h: &H) {
    let e = h.engine();
    let (a, b) = ("tx-throughput-a", "tx-throughput-b");
    let kept = QueueOpts {
        keep_completed: Some(secs(600)),
        ..QueueOpts::default()
    };
    for i in 0..3 {
        enqueue_one(e, job(a, &i.to_string())).await;
    }
    enqueue_one(e, job(b, "kept").with_queue_opts(kept)).await;
    let held_a = claim(e, a, "w", 3).await;
    let held_b = claim(e, b, "w", 1).await;
    assert_eq!((held_a.len(), held_b.len()), (3, 1));
    for end in End::ALL {
        let tx = begin_with_row(h, &end.key("tx-throughput")).await;
        tx.job_ack(held_b[0].claim()).await.expect("ack b");
        tx.job_ack(held_a[0].claim()).await.expect("ack a");
        let retry = JobRetryParams::new(held_a[1].claim(), "again").delay(secs(60));
        tx.job_retry(retry).await.expect("retry");
        tx.job_fail(JobFailParams::new(held_a[2].claim(), "fatal".to_string()))
            .await
            .expect("fail");
        end.finish::<H>(tx).await;
        let want = if end.commits() {
            ((1, 2), (1, 0))
        } else {
            ((0, 0), (0, 0))
        };
        assert_eq!(
            (counted(e, a).await, counted(e, b).await),
            want,
            "after {end:?}"
        );
    }
    assert_rows(h, &committed_row("tx-throughput"), "at the end").await;
}

/// A job acked in an open transaction is not claimed again while it is
/// open, even once its claim expired by the store's clock: another
/// worker's claim (started meanwhile) waits for the transaction (SQLite:
/// its write lock) or skips the job (PostgreSQL: its locked row), and
/// after the commit finds nothing, as the job is done.
pub async fn an_acked_job_is_not_claimed_again_while_its_transaction_is_open<H: Harness>(h: &H) {
    let e = h.engine();
    let q = "tx-ack-held";
    let opts = QueueOpts {
        visibility_timeout: secs(30),
        ..QueueOpts::default()
    };
    let id = enqueue_one(e, job(q, "x").with_queue_opts(opts)).await;
    let a = claim(e, q, "a", 1).await.pop().expect("a claims");
    let key = "tx-ack-held:a";
    let tx = begin_with_row(h, key).await;
    tx.job_ack(a.claim()).await.expect("ack");
    // The claim lapses while the transaction is open.
    h.clock().advance(secs(31));
    let done = AtomicBool::new(false);
    let other = async {
        let got = claim(e, q, "b", 1).await;
        done.store(true, Ordering::SeqCst);
        got
    };
    let holder = async {
        // Long enough for the other claim to have been sent and, were the
        // job not held, to have taken it.
        tokio::time::sleep(Duration::from_millis(200)).await;
        tx.commit().await.expect("the ack commits");
    };
    let (got, ()) = tokio::join!(other, holder);
    assert!(got.is_empty(), "the acked job was claimed again: {got:?}");
    assert!(done.load(Ordering::SeqCst));
    assert_eq!(live_count(e, q).await, 0, "done");
    let info = e.job_get(id).await.expect("get");
    assert!(
        info.as_ref().is_none_or(|i| i.state == JobState::Completed),
        "done: {info:?}"
    );
    assert_rows(h, &[key.to_string()], "at the end").await;
}

/// Which settle [`stale_claim`] tries.
#[derive(Debug, Clone, Copy)]
enum Settle {
    Ack,
    Retry,
    Fail,
    Snooze,
}

/// A claim that expired and was taken by another worker (`b`, through the
/// store's clock) refuses `settle` inside a transaction with `NotHeld`;
/// the transaction is poisoned and rolls back, the application's row with
/// it; the job stays `b`'s, whose own ack then works.
async fn stale_claim<H: Harness>(h: &H, settle: Settle) {
    let e = h.engine();
    let q = format!("tx-stale-{settle:?}").to_lowercase();
    let opts = QueueOpts {
        visibility_timeout: secs(30),
        ..QueueOpts::default()
    };
    let id = enqueue_one(e, job(&q, "x").with_queue_opts(opts)).await;
    let a = claim(e, &q, "a", 1).await.pop().expect("a claims");
    h.clock().advance(secs(30));
    let b = claim(e, &q, "b", 1).await.pop().expect("b claims it again");
    assert_eq!(b.id, id);
    let key = format!("{q}:refused");
    let tx = begin_with_row(h, &key).await;
    let refused = match settle {
        Settle::Ack => tx.job_ack(a.claim()).await.map(|_| 0),
        Settle::Retry => {
            let retry = JobRetryParams::new(a.claim(), "stale");
            tx.job_retry(retry).await.map(|_| 0)
        }
        Settle::Fail => tx
            .job_fail(JobFailParams::new(a.claim(), "stale".to_string()))
            .await
            .map(|_| 0),
        Settle::Snooze => tx
            .job_snooze(JobSnoozeParams::new(a.claim(), secs(5)))
            .await
            .map(|due| due.unwrap_or_default()),
    };
    assert_refused_and_rolled_back(h, tx, refused, &key).await;
    let info = e.job_get(id).await.expect("get").expect("row");
    assert_eq!(
        (info.state, info.worker.as_deref()),
        (JobState::Processing, Some("b")),
        "the job is still b's"
    );
    assert_eq!(
        e.job_ack(vec![a.claim(), b.claim()]).await.expect("ack"),
        vec![false, true],
        "a's claim stays stale; b's ack works"
    );
}

/// A stale claim refuses `job_ack` in a transaction, which rolls back
/// whole (see `stale_claim`).
pub async fn a_stale_claim_refuses_ack_and_rolls_back_everything<H: Harness>(h: &H) {
    stale_claim(h, Settle::Ack).await;
}

/// A stale claim refuses `job_retry` in a transaction, which rolls back
/// whole.
pub async fn a_stale_claim_refuses_retry_and_rolls_back_everything<H: Harness>(h: &H) {
    stale_claim(h, Settle::Retry).await;
}

/// A stale claim refuses `job_fail` in a transaction, which rolls back
/// whole.
pub async fn a_stale_claim_refuses_fail_and_rolls_back_everything<H: Harness>(h: &H) {
    stale_claim(h, Settle::Fail).await;
}

/// A stale claim refuses `job_snooze` in a transaction, which rolls back
/// whole.
pub async fn a_stale_claim_refuses_snooze_and_rolls_back_everything<H: Harness>(h: &H) {
    stale_claim(h, Settle::Snooze).await;
}

/// The rows above, for [`contract_suite!`](crate::contract_suite): list each
/// `pub async fn …<H: Harness>` here, next to where it is written.
#[doc(hidden)]
#[macro_export]
macro_rules! __tx_queues {
    ($then:path, $args:tt) => {
        $then! { @rows $args tx::queues [
            enqueue_one_commits_with_the_business_row_or_not_at_all,
            enqueue_batch_commits_all_or_nothing_with_the_business_row,
            ack_commits_with_the_business_row_or_not_at_all,
            retry_commits_with_the_business_row_or_not_at_all,
            fail_commits_with_the_business_row_or_not_at_all,
            snooze_commits_with_the_business_row_or_not_at_all,
            settles_count_in_the_throughput_only_once_committed,
            an_acked_job_is_not_claimed_again_while_its_transaction_is_open,
            a_stale_claim_refuses_ack_and_rolls_back_everything,
            a_stale_claim_refuses_retry_and_rolls_back_everything,
            a_stale_claim_refuses_fail_and_rolls_back_everything,
            a_stale_claim_refuses_snooze_and_rolls_back_everything,
        ] }
    };
}
