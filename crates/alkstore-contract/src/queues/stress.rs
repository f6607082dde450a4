//! Stress: many workers settling one queue every way at once, while claims
//! lapse and jobs are cancelled, with the queue's invariants checked during
//! the run and after it.

use alkstore_core::Writes as _;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use alkstore_core::queue::{DeadListParams, JobFailParams, JobSnoozeParams};
use alkstore_core::{
    CancelOutcome, Claim, EnqueueOpts, JobClaimParams, JobListParams, JobRetryParams, JobState,
    NewJob, QueueAdmin, QueueEngine, QueueOpts, RetryOutcome,
};

use proptest::prelude::RngExt;
use proptest::test_runner::{RngAlgorithm, TestRng};

use crate::Harness;

const QUEUE: &str = "stress";
const JOBS: usize = 400;
const WORKERS: usize = 16;
const MAX_ATTEMPTS: u32 = 4;

/// What the workers saw accepted, per job id.
#[derive(Default)]
struct Seen {
    /// Acks that returned true: each must be the job's only completion.
    acked: BTreeMap<i64, u32>,
    /// Fails and retries that moved the job to dead.
    buried: BTreeMap<i64, u32>,
    /// Cancels that moved a pending job to dead.
    cancelled: BTreeSet<i64>,
    /// Calls on a claim the worker had already given up, that were
    /// accepted anyway (must stay empty).
    stale_accepted: Vec<(i64, &'static str)>,
}

/// 16 workers claim from one queue of 400 jobs (4 attempts each) and settle
/// what they get every way there is: ack, retry, fail, snooze, release, or
/// hold it past its claim. A clock task lets claims lapse and retries come
/// due; a canceller cancels jobs; each worker also replays a call on a
/// claim it has already settled. Throughout the run no job is live and
/// dead at once; at its end every job was completed exactly once or lies
/// in dead (never both), no call on a settled claim was accepted, and no
/// job ran more attempts than allowed.
pub async fn many_workers_settling_one_queue_keep_its_invariants<H: Harness>(h: &H) {
    let e = h.engine();
    let opts = QueueOpts {
        visibility_timeout: Duration::from_secs(30),
        backoff_base: Duration::from_secs(1),
        keep_completed: Some(Duration::from_secs(7 * 86_400)),
        ..QueueOpts::default()
    };
    let jobs: Vec<NewJob> = (0..JOBS)
        .map(|i| {
            NewJob::new(QUEUE, i.to_string().into_bytes())
                .with_queue_opts(opts.clone())
                .with_opts(EnqueueOpts::default().max_attempts(MAX_ATTEMPTS))
        })
        .collect();
    let ids: BTreeSet<i64> = e
        .job_enqueue(jobs)
        .await
        .expect("enqueue")
        .iter()
        .map(|o| o.id())
        .collect();
    assert_eq!(ids.len(), JOBS);

    let seen = Arc::new(Mutex::new(Seen::default()));
    let done = Arc::new(AtomicBool::new(false));
    let mut tasks = tokio::task::JoinSet::new();
    for w in 0..WORKERS {
        let (e, seen, done) = (e.clone(), seen.clone(), done.clone());
        tasks.spawn(async move {
            let worker = format!("w{w}");
            let seed = [u8::try_from(w + 1).unwrap_or(u8::MAX); 32];
            let mut rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed);
            let mut settled: Vec<Claim> = Vec::new();
            while !done.load(Ordering::Relaxed) {
                let got = e
                    .job_claim(JobClaimParams::new(
                        QUEUE,
                        worker.clone(),
                        rng.random_range(1..=4u32),
                    ))
                    .await
                    .expect("claim");
                if got.is_empty() {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
                for job in got {
                    assert!(
                        job.attempt <= job.max_attempts,
                        "job {} claimed for attempt {} of {}",
                        job.id,
                        job.attempt,
                        job.max_attempts
                    );
                    let claim = job.claim();
                    let id = job.id;
                    let seen_now = |f: &dyn Fn(&mut Seen)| f(&mut lock(&seen));
                    match rng.random_range(0..100u32) {
                        0..=39 => {
                            if e.job_ack(vec![claim.clone()]).await.expect("ack")[0] {
                                seen_now(&|s| *s.acked.entry(id).or_default() += 1);
                            }
                        }
                        40..=59 => {
                            let out = e
                                .job_retry(JobRetryParams::new(claim.clone(), "stress"))
                                .await
                                .expect("retry");
                            if matches!(out, RetryOutcome::Dead | RetryOutcome::Cancelled) {
                                seen_now(&|s| *s.buried.entry(id).or_default() += 1);
                            }
                        }
                        60..=64 => {
                            if e.job_fail(JobFailParams::new(claim.clone(), "stress"))
                                .await
                                .expect("fail")
                            {
                                seen_now(&|s| *s.buried.entry(id).or_default() += 1);
                            }
                        }
                        65..=79 => {
                            e.job_snooze(JobSnoozeParams::new(
                                claim.clone(),
                                Duration::from_secs(2),
                            ))
                            .await
                            .expect("snooze");
                        }
                        80..=91 => {
                            e.job_release(claim.clone()).await.expect("release");
                        }
                        // Hold it: the clock task lets the claim lapse.
                        _ => continue,
                    }
                    settled.push(claim);
                }
                // Replay a call on a claim this worker already settled:
                // that claim is no longer current, so nothing may accept it.
                if !settled.is_empty() && rng.random_range(0..4u32) == 0 {
                    let old = settled.swap_remove(rng.random_range(0..settled.len()));
                    let id = old.id;
                    let accepted = match rng.random_range(0..3u32) {
                        0 => e.job_ack(vec![old]).await.expect("stale ack")[0].then_some("ack"),
                        1 => e
                            .job_fail(JobFailParams::new(old, "stale"))
                            .await
                            .expect("stale fail")
                            .then_some("fail"),
                        _ => e
                            .job_snooze(JobSnoozeParams::new(old, Duration::from_secs(1)))
                            .await
                            .expect("stale snooze")
                            .map(|_| "snooze"),
                    };
                    if let Some(call) = accepted {
                        lock(&seen).stale_accepted.push((id, call));
                    }
                }
            }
        });
    }
    // Cancel some jobs while they are pending or running.
    {
        let (e, seen, done) = (e.clone(), seen.clone(), done.clone());
        let targets: Vec<i64> = ids.iter().copied().step_by(23).collect();
        tasks.spawn(async move {
            for id in targets {
                if done.load(Ordering::Relaxed) {
                    break;
                }
                if e.job_cancel(id).await.expect("cancel") == CancelOutcome::Cancelled {
                    lock(&seen).cancelled.insert(id);
                }
                tokio::time::sleep(Duration::from_millis(3)).await;
            }
        });
    }

    // The clock moves on so that held claims lapse and retried and snoozed
    // jobs come due; meanwhile no job is ever both live and dead (dead is
    // read first: a dead job never comes back here, so a job in both reads
    // was in both at once).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        tokio::time::sleep(Duration::from_millis(20)).await;
        h.clock().advance(Duration::from_secs(31));
        let dead = dead_ids(e).await;
        let live = listed(e, None).await;
        let both: Vec<&i64> = live.keys().filter(|id| dead.contains(*id)).collect();
        assert!(both.is_empty(), "live and dead at once: {both:?}");
        let open = live.values().filter(|s| **s != JobState::Completed).count();
        if open == 0 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{open} jobs still open after 120 s"
        );
    }
    done.store(true, Ordering::Relaxed);
    while let Some(joined) = tasks.join_next().await {
        joined.expect("a task panicked");
    }

    // Every job is completed exactly once or dead, never both, never lost.
    let dead = dead_ids(e).await;
    let completed: BTreeSet<i64> = listed(e, Some(JobState::Completed))
        .await
        .into_keys()
        .collect();
    let dead_attempts: Vec<(i64, u32)> = dead_infos(e)
        .await
        .into_iter()
        .map(|j| (j.id, j.attempts))
        .collect();
    let s = lock(&seen);
    assert!(
        s.stale_accepted.is_empty(),
        "calls on settled claims accepted: {:?}",
        s.stale_accepted
    );
    let twice: Vec<_> = s.acked.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "acked more than once: {twice:?}");
    let both: Vec<&i64> = completed.intersection(&dead).collect();
    assert!(both.is_empty(), "completed and dead: {both:?}");
    let all: BTreeSet<i64> = completed.union(&dead).copied().collect();
    assert_eq!(all, ids, "every enqueued job is completed or dead");
    let acked: BTreeSet<i64> = s.acked.keys().copied().collect();
    assert_eq!(acked, completed, "the completed jobs are the ones acked");
    for id in s.buried.keys().chain(s.cancelled.iter()) {
        assert!(dead.contains(id), "job {id} was buried but is not dead");
    }
    for (id, attempts) in dead_attempts {
        assert!(
            attempts <= MAX_ATTEMPTS,
            "dead job {id} ran {attempts} attempts"
        );
    }
    // The run exercised what it claims to: completions, burials, cancels.
    assert!(!s.acked.is_empty() && !s.buried.is_empty() && !s.cancelled.is_empty());
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The queue's live jobs (and completed ones), by id, with their state.
async fn listed<E: QueueEngine + QueueAdmin + alkstore_core::AllOps>(
    e: &E,
    state: Option<JobState>,
) -> BTreeMap<i64, JobState> {
    let mut out = BTreeMap::new();
    let mut after = None;
    loop {
        let mut params = JobListParams::new(1000).queue(QUEUE);
        params.state = state;
        params.after_id = after;
        let page = e.job_list(params).await.expect("list");
        let Some(last) = page.last() else {
            return out;
        };
        after = Some(last.id);
        out.extend(page.into_iter().map(|j| (j.id, j.state)));
    }
}

async fn dead_infos<E: QueueEngine + QueueAdmin + alkstore_core::AllOps>(
    e: &E,
) -> Vec<alkstore_core::JobInfo> {
    let mut out = Vec::new();
    let mut after = None;
    loop {
        let mut params = DeadListParams::new(1000).queue(QUEUE);
        params.after_id = after;
        let page = e.dead_list(params).await.expect("dead list");
        let Some(last) = page.last() else {
            return out;
        };
        after = Some(last.id);
        out.extend(page);
    }
}

async fn dead_ids<E: QueueEngine + QueueAdmin + alkstore_core::AllOps>(e: &E) -> BTreeSet<i64> {
    dead_infos(e).await.into_iter().map(|j| j.id).collect()
}

/// The rows above, for [`contract_suite!`](crate::contract_suite).
#[doc(hidden)]
#[macro_export]
macro_rules! __queues_stress {
    ($then:path, $args:tt) => {
        $then! { @rows $args queues::stress [
            many_workers_settling_one_queue_keep_its_invariants,
        ] }
    };
}
