//! The queue against a reference model: random operation sequences (clock
//! advances included) run on the engine and on a plain-Rust model of the
//! contract, every result compared. A failing sequence is shrunk to a
//! minimal one, which the failure prints; such sequences are kept below as
//! regression cases and run first.
//!
//! `ALKSTORE_MODEL_CASES` sets how many sequences a run tries (see
//! `src/model.rs`).

use alkstore_core::Writes as _;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use alkstore_core::queue::{DeadSelect, JobFailParams, JobSnoozeParams};
use alkstore_core::{
    backoff_delay_s, CancelOutcome, Claim, Clock, EnqueueOpts, Enqueued, JobClaimParams,
    JobRetryParams, JobState, NewJob, QueueAdmin, QueueEngine, QueueOpts, RetryOutcome,
};
use proptest::prelude::*;

use crate::Harness;

/// The queue options every modelled job carries.
const VT_S: i64 = 30;
const BACKOFF_S: i64 = 2;
const MAX_ATTEMPTS: u32 = 3;
const WORKERS: [&str; 2] = ["w0", "w1"];

/// One step of a sequence. `pick` chooses, modulo their count, among the
/// claims handed out so far (current or not: the model knows which) or
/// among the jobs enqueued so far.
#[derive(Debug, Clone)]
pub enum Op {
    /// Enqueue one job.
    Enqueue {
        /// Its priority.
        priority: i32,
        /// Due this many seconds from now.
        delay_s: u64,
        /// One of two unique keys, or none.
        unique: Option<u8>,
    },
    /// Pause the queue.
    Pause,
    /// Resume the queue.
    Resume,
    /// Move every dead letter of the queue back to pending.
    Requeue,
    /// Claim for a worker.
    Claim {
        /// Which of the two workers.
        worker: usize,
        /// Most jobs to take.
        limit: u32,
    },
    /// Ack a claim.
    Ack {
        /// Which claim.
        pick: usize,
    },
    /// Retry a claim.
    Retry {
        /// Which claim.
        pick: usize,
    },
    /// Fail a claim for good.
    Fail {
        /// Which claim.
        pick: usize,
    },
    /// Snooze a claim.
    Snooze {
        /// Which claim.
        pick: usize,
        /// For this many seconds.
        secs: u64,
    },
    /// Hand a claim back.
    Release {
        /// Which claim.
        pick: usize,
    },
    /// Extend a claim.
    Heartbeat {
        /// Which claim.
        pick: usize,
    },
    /// Cancel a job.
    Cancel {
        /// Which job.
        pick: usize,
    },
    /// Move the clock on.
    Advance {
        /// By this many seconds.
        secs: u64,
    },
    /// Compare the queue's counts.
    Stats,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..3i32, prop_oneof![Just(0u64), 1..6u64], proptest::option::weighted(0.3, 0..2u8))
            .prop_map(|(priority, delay_s, unique)| Op::Enqueue { priority, delay_s, unique }),
        1 => prop_oneof![Just(Op::Pause), Just(Op::Resume), Just(Op::Requeue)],
        3 => (0..2usize, 1..4u32).prop_map(|(worker, limit)| Op::Claim { worker, limit }),
        2 => any::<usize>().prop_map(|pick| Op::Ack { pick }),
        1 => any::<usize>().prop_map(|pick| Op::Retry { pick }),
        1 => any::<usize>().prop_map(|pick| Op::Fail { pick }),
        1 => (any::<usize>(), 1..10u64).prop_map(|(pick, secs)| Op::Snooze { pick, secs }),
        1 => any::<usize>().prop_map(|pick| Op::Release { pick }),
        1 => any::<usize>().prop_map(|pick| Op::Heartbeat { pick }),
        1 => any::<usize>().prop_map(|pick| Op::Cancel { pick }),
        2 => prop_oneof![1..5u64, 25..40u64].prop_map(|secs| Op::Advance { secs }),
        1 => Just(Op::Stats),
    ]
}

/// Sequences that once failed, shrunk: run first, every time.
fn regressions() -> Vec<Vec<Op>> {
    vec![]
}

/// Random sequences of enqueues, claims by two workers, every settle
/// (stale claims included), cancels, heartbeats and clock advances behave
/// on the engine exactly as on the model: the same claimed jobs in the same
/// order with the same attempt, the same answer from every call, the same
/// counts, and in the end the same state and attempts for every job.
pub async fn random_queue_operations_match_the_model<H: Harness>(h: &H) {
    let strategy = proptest::collection::vec(op(), 1..60);
    crate::model::check(strategy, regressions(), |name, ops| async move {
        run_case(h, &name, &ops).await
    })
    .await;
}

/// A job as the model holds it.
#[derive(Debug, Clone)]
struct MJob {
    priority: i32,
    run_at: i64,
    state: MState,
    attempts: u32,
    /// Which claim of this job is current (a count).
    claim_no: u32,
    worker: usize,
    claim_expires_at: i64,
    cancel_requested: bool,
    unique: Option<u8>,
    id: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MState {
    Pending,
    Processing,
    Dead,
    Gone,
}

/// A claim handed out: the job, which of its claims, and the engine's proof.
struct Held {
    job: usize,
    claim_no: u32,
    worker: usize,
    claim: Claim,
}

/// Run `ops` on queue `queue` of the engine and on a fresh model; the first
/// difference, as text.
async fn run_case<H: Harness>(h: &H, queue: &str, ops: &[Op]) -> Result<(), String> {
    let e = h.engine();
    let clock = h.clock();
    let opts = QueueOpts {
        visibility_timeout: Duration::from_secs(VT_S.unsigned_abs()),
        backoff_base: Duration::from_secs(BACKOFF_S.unsigned_abs()),
        max_attempts: MAX_ATTEMPTS,
        ..QueueOpts::default()
    };
    let mut jobs: Vec<MJob> = Vec::new();
    let mut held: Vec<Held> = Vec::new();
    let mut paused = false;
    let mut log = String::new();
    let fail = |log: &str, step: usize, what: String| Err(format!("step {step}: {what}\n{log}"));
    for (step, op) in ops.iter().enumerate() {
        let now = clock.now();
        let _ = writeln!(log, "  {step}: {op:?} at {now}");
        match op {
            Op::Enqueue {
                priority,
                delay_s,
                unique,
            } => {
                let mut eo = EnqueueOpts::default()
                    .priority(*priority)
                    .delay(Duration::from_secs(*delay_s));
                if let Some(u) = unique {
                    eo = eo.unique_key(format!("u{u}"));
                }
                let job = NewJob::new(queue, b"m".to_vec())
                    .with_queue_opts(opts.clone())
                    .with_opts(eo);
                let out = e.job_enqueue(job).await.map_err(|x| x.to_string())?[0];
                // A live job (pending or running) holds its unique key.
                let holder = unique.and_then(|u| {
                    jobs.iter().find(|j| {
                        j.unique == Some(u)
                            && matches!(j.state, MState::Pending | MState::Processing)
                    })
                });
                match (out, holder) {
                    (Enqueued::Duplicate(id), Some(j)) if id == j.id => continue,
                    (Enqueued::Inserted(_), None) => {}
                    (out, holder) => {
                        return fail(
                            &log,
                            step,
                            format!(
                                "enqueue: engine {out:?}, model duplicate of {:?}",
                                holder.map(|j| j.id)
                            ),
                        )
                    }
                }
                let id = out.id();
                jobs.push(MJob {
                    priority: *priority,
                    run_at: now + i64::try_from(*delay_s).unwrap_or(0),
                    state: MState::Pending,
                    attempts: 0,
                    claim_no: 0,
                    worker: 0,
                    claim_expires_at: 0,
                    cancel_requested: false,
                    unique: *unique,
                    id,
                });
            }
            Op::Claim { worker, limit } => {
                let got = e
                    .job_claim(JobClaimParams::new(queue, WORKERS[*worker], *limit))
                    .await
                    .map_err(|x| x.to_string())?;
                let want = model_claim(&mut jobs, *worker, *limit, now, paused);
                let got_ids: Vec<(i64, u32)> = got.iter().map(|j| (j.id, j.attempt)).collect();
                let want_ids: Vec<(i64, u32)> = want
                    .iter()
                    .map(|&i| (jobs[i].id, jobs[i].attempts))
                    .collect();
                if got_ids != want_ids {
                    return fail(
                        &log,
                        step,
                        format!("claim: engine (id, attempt) {got_ids:?}, model {want_ids:?}"),
                    );
                }
                for (j, i) in got.into_iter().zip(want) {
                    held.push(Held {
                        job: i,
                        claim_no: jobs[i].claim_no,
                        worker: *worker,
                        claim: j.claim(),
                    });
                }
            }
            Op::Ack { pick }
            | Op::Retry { pick }
            | Op::Fail { pick }
            | Op::Snooze { pick, .. }
            | Op::Release { pick }
            | Op::Heartbeat { pick } => {
                if held.is_empty() {
                    continue;
                }
                let hd = &held[pick % held.len()];
                let (i, claim) = (hd.job, hd.claim.clone());
                let valid = {
                    let j = &jobs[i];
                    j.state == MState::Processing
                        && j.claim_no == hd.claim_no
                        && j.worker == hd.worker
                        && j.claim_expires_at > now
                };
                let (got, want) = match op {
                    Op::Ack { .. } => {
                        let got = e.job_ack(vec![claim]).await.map_err(|x| x.to_string())?[0];
                        if valid {
                            jobs[i].state = MState::Gone;
                        }
                        (format!("{got}"), format!("{valid}"))
                    }
                    Op::Retry { .. } => {
                        let got = e
                            .job_retry(JobRetryParams::new(claim, "m"))
                            .await
                            .map_err(|x| x.to_string())?;
                        let j = &mut jobs[i];
                        let want = if !valid {
                            RetryOutcome::NotHeld
                        } else if j.cancel_requested {
                            j.state = MState::Dead;
                            RetryOutcome::Cancelled
                        } else if j.attempts >= MAX_ATTEMPTS {
                            j.state = MState::Dead;
                            RetryOutcome::Dead
                        } else {
                            j.state = MState::Pending;
                            j.run_at = now + backoff_delay_s(BACKOFF_S, j.attempts, j.id);
                            RetryOutcome::Scheduled(j.run_at)
                        };
                        (format!("{got:?}"), format!("{want:?}"))
                    }
                    Op::Fail { .. } => {
                        let got = e
                            .job_fail(JobFailParams::new(claim, "m"))
                            .await
                            .map_err(|x| x.to_string())?;
                        if valid {
                            jobs[i].state = MState::Dead;
                        }
                        (format!("{got}"), format!("{valid}"))
                    }
                    Op::Snooze { secs, .. } => {
                        let got = e
                            .job_snooze(JobSnoozeParams::new(claim, Duration::from_secs(*secs)))
                            .await
                            .map_err(|x| x.to_string())?;
                        let j = &mut jobs[i];
                        let want = if !valid {
                            None
                        } else if j.cancel_requested {
                            j.state = MState::Dead;
                            None
                        } else {
                            j.state = MState::Pending;
                            j.attempts -= 1;
                            j.run_at = now + i64::try_from(*secs).unwrap_or(0);
                            Some(j.run_at)
                        };
                        (format!("{got:?}"), format!("{want:?}"))
                    }
                    Op::Release { .. } => {
                        let got = e.job_release(claim).await.map_err(|x| x.to_string())?;
                        let j = &mut jobs[i];
                        if valid && j.cancel_requested {
                            // Its cancel was asked for: it ends as cancelled.
                            j.state = MState::Dead;
                        } else if valid {
                            // Due again at once: it queues behind the jobs
                            // that were due before it.
                            j.state = MState::Pending;
                            j.attempts -= 1;
                            j.run_at = now;
                        }
                        (format!("{got}"), format!("{valid}"))
                    }
                    _ => {
                        let got = e.job_heartbeat(claim).await.map_err(|x| x.to_string())?;
                        let want = valid.then(|| {
                            jobs[i].claim_expires_at = now + VT_S;
                            now + VT_S
                        });
                        (format!("{got:?}"), format!("{want:?}"))
                    }
                };
                if got != want {
                    return fail(&log, step, format!("{op:?}: engine {got}, model {want}"));
                }
            }
            Op::Cancel { pick } => {
                if jobs.is_empty() {
                    continue;
                }
                let i = pick % jobs.len();
                let got = e.job_cancel(jobs[i].id).await.map_err(|x| x.to_string())?;
                let j = &mut jobs[i];
                let want = match j.state {
                    MState::Pending => {
                        j.state = MState::Dead;
                        CancelOutcome::Cancelled
                    }
                    MState::Processing => {
                        j.cancel_requested = true;
                        CancelOutcome::Requested
                    }
                    MState::Dead | MState::Gone => CancelOutcome::NotFound,
                };
                if got != want {
                    return fail(
                        &log,
                        step,
                        format!("cancel: engine {got:?}, model {want:?}"),
                    );
                }
            }
            Op::Advance { secs } => clock.advance(Duration::from_secs(*secs)),
            Op::Pause | Op::Resume => {
                let got = if matches!(op, Op::Pause) {
                    e.queue_pause(queue).await
                } else {
                    e.queue_resume(queue).await
                }
                .map_err(|x| x.to_string())?;
                let want = paused != matches!(op, Op::Pause);
                paused = matches!(op, Op::Pause);
                if got != want {
                    return fail(&log, step, format!("{op:?}: engine {got}, model {want}"));
                }
            }
            Op::Requeue => {
                let got = e
                    .dead_requeue(DeadSelect::queue(queue))
                    .await
                    .map_err(|x| x.to_string())?;
                // By id: a dead letter whose unique key a live job holds
                // (or one requeued before it in this call) stays dead.
                let mut want = 0u64;
                let mut order: Vec<usize> = (0..jobs.len()).collect();
                order.sort_by_key(|&i| jobs[i].id);
                for i in order {
                    if jobs[i].state != MState::Dead {
                        continue;
                    }
                    let taken = jobs[i].unique.is_some_and(|u| {
                        jobs.iter().any(|o| {
                            o.unique == Some(u)
                                && matches!(o.state, MState::Pending | MState::Processing)
                        })
                    });
                    if taken {
                        continue;
                    }
                    let j = &mut jobs[i];
                    j.state = MState::Pending;
                    j.attempts = 0;
                    j.run_at = now;
                    j.cancel_requested = false;
                    want += 1;
                }
                if got != want {
                    return fail(&log, step, format!("requeue: engine {got}, model {want}"));
                }
            }
            Op::Stats => {
                let s = e.queue_stats(queue).await.map_err(|x| x.to_string())?;
                let got = [s.ready, s.scheduled, s.processing, s.expired_claims, s.dead];
                let want = model_stats(&jobs, now);
                if got != want {
                    return fail(
                        &log,
                        step,
                        format!(
                            "stats [ready, scheduled, processing, expired claims, dead]: \
                             engine {got:?}, model {want:?}"
                        ),
                    );
                }
            }
        }
    }
    // In the end, every job as the model has it.
    let mut got_all = BTreeMap::new();
    let mut want_all = BTreeMap::new();
    for j in &jobs {
        let info = e.job_get(j.id).await.map_err(|x| x.to_string())?;
        got_all.insert(j.id, info.map(|i| (i.state, i.attempts)));
        let want = match j.state {
            MState::Pending => Some((JobState::Pending, j.attempts)),
            MState::Processing => Some((JobState::Processing, j.attempts)),
            MState::Dead => Some((JobState::Dead, j.attempts)),
            MState::Gone => None,
        };
        want_all.insert(j.id, want);
    }
    if got_all != want_all {
        let _ = writeln!(log, "  end: engine {got_all:?}\n  model  {want_all:?}");
        return Err(format!("the jobs' final states differ\n{log}"));
    }
    Ok(())
}

/// The model's claim at `now`: expired claims handed back first (dead on
/// their last attempt or when cancelled), then due pending jobs by
/// priority (highest first), due time, id.
fn model_claim(jobs: &mut [MJob], worker: usize, limit: u32, now: i64, paused: bool) -> Vec<usize> {
    for j in jobs.iter_mut() {
        if j.state == MState::Processing && j.claim_expires_at <= now {
            j.state = if j.attempts >= MAX_ATTEMPTS || j.cancel_requested {
                MState::Dead
            } else {
                MState::Pending
            };
        }
    }
    if paused {
        return Vec::new();
    }
    let mut due: Vec<usize> = (0..jobs.len())
        .filter(|&i| jobs[i].state == MState::Pending && jobs[i].run_at <= now)
        .collect();
    due.sort_by(|&a, &b| {
        (jobs[b].priority)
            .cmp(&jobs[a].priority)
            .then(jobs[a].run_at.cmp(&jobs[b].run_at))
            .then(jobs[a].id.cmp(&jobs[b].id))
    });
    due.truncate(limit as usize);
    for &i in &due {
        let j = &mut jobs[i];
        j.state = MState::Processing;
        j.attempts += 1;
        j.claim_no += 1;
        j.worker = worker;
        j.claim_expires_at = now + VT_S;
    }
    due
}

/// The model's counts: ready, scheduled, processing, expired claims, dead.
fn model_stats(jobs: &[MJob], now: i64) -> [u64; 5] {
    let count = |f: &dyn Fn(&MJob) -> bool| jobs.iter().filter(|j| f(j)).count() as u64;
    [
        count(&|j| j.state == MState::Pending && j.run_at <= now),
        count(&|j| j.state == MState::Pending && j.run_at > now),
        count(&|j| j.state == MState::Processing && j.claim_expires_at > now),
        count(&|j| j.state == MState::Processing && j.claim_expires_at <= now),
        count(&|j| j.state == MState::Dead),
    ]
}

/// The rows above, for [`contract_suite!`](crate::contract_suite).
#[doc(hidden)]
#[macro_export]
macro_rules! __queues_model {
    ($then:path, $args:tt) => {
        $then! { @rows $args queues::model [
            random_queue_operations_match_the_model,
        ] }
    };
}
