//! The producing side of a queue: [`queue_loop`] starts a queue's claim
//! loops and background tasks and, at shutdown, waits for its handlers and
//! hands unfinished jobs back; each [`claim_loop`] claims as many jobs as it
//! holds free handler slots and spawns one task per job; [`wait_for_work`]
//! is its idle wait.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use alkstore_core::{Claim, Engine, JobClaimParams, QueueEngine};
use tokio::sync::{broadcast, Semaphore};
use tokio::task::JoinSet;

use super::executor::run_job;
use super::heartbeat::{heartbeat_sweeper, next_heartbeat};
use super::inflight::{claim_of, AbortJobsOnDrop, Cancel, InFlight};
use super::maintenance::{depth_reporter, AbortOnDrop};
use super::opts::QueueSpec;
use super::shared::{LoopCtx, QueueMetrics, QueueShared};
use super::tx_batch::run_tx_batch;

/// Time until just after the next whole second (where due times fall), capped.
fn until_next_second(cap: Duration) -> Duration {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let to_boundary = Duration::from_nanos(1_000_000_000 - u64::from(now.subsec_nanos()))
        + Duration::from_millis(2);
    to_boundary.min(cap)
}

/// Run one queue until the worker stops: its heartbeat sweeper, depth
/// reporter and claim loops; then the graceful shutdown of its jobs.
pub(crate) async fn queue_loop(ctx: LoopCtx, spec: QueueSpec) {
    let name = spec.name.clone();
    // Several claim loops per queue keep a claim in flight while another's
    // rows are being written; each reserves its handler slots before it
    // claims, so together they never claim more than the queue can run.
    let claimers = if spec.concurrency >= 2 * CLAIMERS_MIN_SLOTS {
        ctx.opts.claimers.max(1)
    } else {
        1
    };
    let shared = Arc::new(QueueShared {
        slots: Arc::new(Semaphore::new(spec.concurrency)),
        running: Arc::default(),
        qm: Arc::new(QueueMetrics {
            duration: metrics::histogram!("alkstore_handler_duration_seconds", "queue" => name.clone()),
            wait: metrics::histogram!("alkstore_job_wait_seconds", "queue" => name.clone()),
            retried: metrics::counter!("alkstore_jobs_retried_total", "queue" => name.clone()),
            dead: metrics::counter!("alkstore_jobs_dead_total", "queue" => name.clone()),
            snoozed: metrics::counter!("alkstore_jobs_snoozed_total", "queue" => name.clone()),
            cancelled: metrics::counter!("alkstore_jobs_cancelled_total", "queue" => name.clone()),
            completed: metrics::counter!("alkstore_jobs_completed_total", "queue" => name.clone()),
        }),
        claimed_total: metrics::counter!("alkstore_jobs_claimed_total", "queue" => name.clone()),
        claimers,
        backlog: tokio::sync::Notify::new(),
        spec,
        ctx: ctx.clone(),
    });
    if let Ok(mut maps) = ctx.counters.running.lock() {
        maps.push(shared.running.clone());
    }
    let heartbeats = tokio::spawn(heartbeat_sweeper(
        ctx.engine.clone(),
        ctx.worker.clone(),
        shared.running.clone(),
        ctx.counters.clone(),
        shared.qm.cancelled.clone(),
    ));
    let _heartbeats_guard = AbortOnDrop(heartbeats.abort_handle());
    let depth = tokio::spawn(depth_reporter(ctx.engine.clone(), name.clone()));
    let _depth_guard = AbortOnDrop(depth.abort_handle());
    let mut loops = JoinSet::new();
    for n in 0..claimers {
        loops.spawn(claim_loop(ctx.clone(), shared.clone(), n == 0));
    }
    let _abort_jobs = AbortJobsOnDrop(shared.running.clone());
    while loops.join_next().await.is_some() {}
    // Graceful shutdown: no more claims; let running handlers finish (every
    // slot returned), up to the deadline; then stop the rest and hand back.
    // Validation caps concurrency at MAX_CONCURRENCY (fits u32).
    let all = u32::try_from(shared.spec.concurrency).unwrap_or(u32::MAX);
    let finished =
        tokio::time::timeout(ctx.opts.shutdown_timeout, shared.slots.acquire_many(all)).await;
    if finished.is_err() {
        let aborts: Vec<tokio::task::AbortHandle> = shared
            .running
            .lock()
            .map(|r| r.values().filter_map(|f| f.abort.clone()).collect())
            .unwrap_or_default();
        for a in &aborts {
            a.abort();
        }
        // Aborted tasks return their slots as they unwind.
        let _ = tokio::time::timeout(Duration::from_secs(5), shared.slots.acquire_many(all)).await;
    }
    // Hand back only jobs whose task is gone: a handler that ignores
    // cancellation (blocking code) still runs, and handing its job back would
    // let another worker run it at the same time. Settled jobs are being
    // acked; handing them back would run them again.
    let unfinished: Vec<Claim> = shared
        .running
        .lock()
        .map(|mut r| {
            let gone: Vec<(i64, i64)> = r
                .iter()
                .filter(|(_, f)| !f.settled && f.abort.as_ref().is_none_or(|a| a.is_finished()))
                .map(|(k, _)| *k)
                .collect();
            gone.iter()
                .filter(|k| r.remove(k).is_some())
                .map(|k| claim_of(&ctx.worker, *k))
                .collect()
        })
        .unwrap_or_default();
    for claim in unfinished {
        match ctx.engine.job_release(claim).await {
            Ok(true) => {
                ctx.counters.released.fetch_add(1, Ordering::Relaxed);
            }
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(error = %e, "could not hand a job back; it returns when its claim expires")
            }
        }
    }
}

/// A queue gets [`WorkerOpts::claimers`](super::WorkerOpts::claimers)
/// claim loops only with at least twice this many handler slots (this many
/// each for two claimers); with fewer, extra claimers would only split
/// small claims.
const CLAIMERS_MIN_SLOTS: usize = 64;

/// Claim jobs into this loop's share of the queue's free handler slots and
/// spawn a task per job, until the worker stops. When the queue runs dry
/// (a claim finds fewer jobs than it asked for), the `lead` loop waits for
/// a wake hint or the next poll; the others wait until a claim comes back
/// full. Every loop answering every hint made each job enqueued on an idle
/// queue cost one claim per loop, all but one of them empty.
async fn claim_loop(mut ctx: LoopCtx, shared: Arc<QueueShared>, lead: bool) {
    let spec = &shared.spec;
    let mut hints = ctx.engine.wake_subscribe();
    // Failed claims: 50 ms, doubling to 5 s, from the start after a claim.
    let mut error_backoff =
        alkstore_core::Backoff::new(Duration::from_millis(50), Duration::from_secs(5));
    let name: Arc<str> = Arc::from(spec.name.as_str());
    let most = ctx.opts.max_claim as usize;
    // This loop's even share of the slots: what it waits for when there is
    // a backlog.
    let share = (spec.concurrency / shared.claimers).clamp(1, most);
    // Whether the last claim found as many jobs as it asked for (a backlog),
    // and how long it took.
    let mut backlog = false;
    let mut last_claim = Duration::ZERO;
    loop {
        if *ctx.stop.borrow() {
            break;
        }
        // With a backlog, slots come free job by job as handlers finish:
        // claiming whatever is free at once would make many small claims,
        // each a round trip and a statement. Wait for this loop's share
        // instead, up to about as long as a claim takes.
        let fill = backlog.then(|| (share, last_claim.clamp(FILL_WAIT_MIN, FILL_WAIT_MAX)));
        let reserved = reserve(&shared.slots, most, fill).await;
        let Some(mut reserved) = reserved else {
            tokio::select! {
                permit = shared.slots.acquire() => drop(permit),
                _ = ctx.stop.changed() => {}
            }
            continue;
        };
        // Hints sent before this claim are answered by it; only later ones
        // should wake the loop after an empty claim.
        while let Ok(_) | Err(broadcast::error::TryRecvError::Lagged(_)) = hints.try_recv() {}
        let asked = reserved.num_permits();
        let started = tokio::time::Instant::now();
        let claimed = ctx
            .engine
            .job_claim(JobClaimParams::new(
                spec.name.clone(),
                ctx.worker.clone(),
                u32::try_from(asked).unwrap_or(u32::MAX),
            ))
            .await;
        last_claim = started.elapsed();
        // Full: the queue may hold more. A backlog: full, and worth another
        // loop's claim (a claim of the one slot that came free is full
        // too, with long handlers and a trickle of jobs).
        let full = claimed.as_ref().is_ok_and(|jobs| jobs.len() == asked);
        backlog = full && asked >= (share / 2).max(1);
        if backlog && shared.claimers > 1 {
            shared.backlog.notify_waiters();
        }
        let jobs = match claimed {
            Ok(jobs) => {
                error_backoff.reset();
                jobs
            }
            Err(e) => {
                drop(reserved);
                tracing::warn!(queue = %spec.name, error = %e, "claim failed; backing off");
                tokio::select! {
                    _ = tokio::time::sleep(error_backoff.next()) => {}
                    _ = ctx.stop.changed() => {}
                }
                continue;
            }
        };
        if jobs.is_empty() {
            ctx.counters.empty_claims.fetch_add(1, Ordering::Relaxed);
            drop(reserved);
            idle(&mut ctx, &shared, lead, &mut hints, &name).await;
            continue;
        }
        ctx.counters.claims.fetch_add(1, Ordering::Relaxed);
        start_jobs(&ctx, &shared, jobs, &mut reserved).await;
        // Reserved slots left unused (fewer jobs than slots) are freed here.
        drop(reserved);
        if !full {
            // The claim took every due job: another now would find none
            // (jobs committed since sent hints, which end the wait at once).
            idle(&mut ctx, &shared, lead, &mut hints, &name).await;
        }
    }
}

/// Start claimed jobs: register each in the running map (heartbeats,
/// cancellation, shutdown) and spawn its task with one of the `reserved`
/// slots.
async fn start_jobs(
    ctx: &LoopCtx,
    shared: &Arc<QueueShared>,
    mut jobs: Vec<alkstore_core::Job>,
    reserved: &mut tokio::sync::OwnedSemaphorePermit,
) {
    ctx.counters
        .claimed
        .fetch_add(jobs.len() as u64, Ordering::Relaxed);
    shared.claimed_total.increment(jobs.len() as u64);
    // One clock read and two locks of the running map per claim, not
    // per job: the jobs are registered before their tasks exist (so a
    // task's own removal always comes after), and their tasks' abort
    // handles added once all are spawned (a task that has finished by
    // then has removed its entry; nothing else reads the map's
    // entries until this loop ends or the next heartbeat sweep, which
    // does not need them).
    let now = std::time::Instant::now();
    let mut starts = Cancel::for_claim(jobs.len());
    if let Ok(mut r) = shared.running.lock() {
        for (job, cancel) in jobs.iter().zip(&starts) {
            let length = Duration::from_secs(alkstore_core::validate::count(
                (job.claim_expires_at - job.claimed_at).max(1),
            ));
            let cancel = cancel.clone();
            r.insert(
                (job.id, job.claim_token),
                InFlight {
                    next_beat: next_heartbeat(now, length),
                    length,
                    abort: None,
                    settled: false,
                    cancel,
                },
            );
        }
    }
    let mut tasks = Vec::with_capacity(jobs.len());
    if shared.spec.tx_batch > 1 {
        start_tx_batches(ctx, shared, &mut jobs, &mut starts, reserved, &mut tasks).await;
    }
    for (job, cancelled) in jobs.into_iter().zip(starts) {
        let Some(permit) = reserved.split(1) else {
            // Cannot happen (we claimed at most what we reserved).
            release_unstarted(ctx, shared, &job).await;
            continue;
        };
        let key = (job.id, job.claim_token);
        // Boxed: the job's future is large, and moving it by value into
        // the task cell costs more than the no-op handlers it runs.
        let run = Box::pin(run_job(shared.clone(), job, cancelled));
        let task = tokio::spawn(async move {
            run.await;
            drop(permit);
        });
        tasks.push((key, task.abort_handle()));
    }
    if let Ok(mut r) = shared.running.lock() {
        for (key, abort) in tasks {
            if let Some(f) = r.get_mut(&key) {
                f.abort = Some(abort);
            }
        }
    }
}

/// Start `jobs` in batches of the queue's `tx_batch`, one task and that
/// many of the `reserved` slots each (see [`run_tx_batch`]); `jobs` is
/// left empty.
async fn start_tx_batches(
    ctx: &LoopCtx,
    shared: &Arc<QueueShared>,
    jobs: &mut Vec<alkstore_core::Job>,
    starts: &mut Vec<Cancel>,
    reserved: &mut tokio::sync::OwnedSemaphorePermit,
    tasks: &mut Vec<((i64, i64), tokio::task::AbortHandle)>,
) {
    let mut items: Vec<(alkstore_core::Job, Cancel)> =
        jobs.drain(..).zip(starts.drain(..)).collect();
    while !items.is_empty() {
        let batch: Vec<(alkstore_core::Job, Cancel)> = items
            .drain(..shared.spec.tx_batch.min(items.len()))
            .collect();
        let Some(permit) = reserved.split(batch.len()) else {
            // Cannot happen (we claimed at most what we reserved).
            for (job, _) in &batch {
                release_unstarted(ctx, shared, job).await;
            }
            continue;
        };
        let keys: Vec<(i64, i64)> = batch.iter().map(|(j, _)| (j.id, j.claim_token)).collect();
        let run = Box::pin(run_tx_batch(shared.clone(), batch));
        let task = tokio::spawn(async move {
            run.await;
            drop(permit);
        });
        tasks.extend(keys.into_iter().map(|key| (key, task.abort_handle())));
    }
}

/// Hand back a claimed job that got no slot, and forget it.
async fn release_unstarted(ctx: &LoopCtx, shared: &QueueShared, job: &alkstore_core::Job) {
    if let Ok(mut r) = shared.running.lock() {
        r.remove(&(job.id, job.claim_token));
    }
    let _ = ctx.engine.job_release(job.claim()).await;
}

/// A claim loop's wait once its queue ran dry (see [`claim_loop`]).
///
/// The lead loop also offers one free handler slot to this process's
/// enqueue calls ([`Takers`](alkstore_core::Takers)): a job given to it
/// starts at once, and the wait goes on.
async fn idle(
    ctx: &mut LoopCtx,
    shared: &Arc<QueueShared>,
    lead: bool,
    hints: &mut broadcast::Receiver<alkstore_core::Wake>,
    queue: &str,
) {
    if lead {
        let engine = ctx.engine.clone();
        let takers = engine.wake_hub().takers();
        loop {
            let mut offer = shared
                .slots
                .clone()
                .try_acquire_owned()
                .ok()
                .map(|slot| (slot, takers.offer(queue, &ctx.worker)));
            let given = async {
                match &mut offer {
                    Some((_, o)) => Some(o.given().await),
                    None => std::future::pending().await,
                }
            };
            // A backlog another loop found (jobs that sent no hint this loop
            // saw, e.g. claims another process rolled back) ends it too.
            let given = tokio::select! {
                () = wait_for_work(ctx, hints, queue) => None,
                () = shared.backlog.notified() => None,
                given = given => given,
            };
            let Some((mut slot, mut o)) = offer else {
                return;
            };
            let woken = given.is_none();
            let job = match given {
                Some(Some(job)) => job,
                // Taken by an enqueue whose job stayed pending: claim it.
                Some(None) => return,
                // Woken: take the offer back, or, when an enqueue call took
                // it meanwhile, wait for what it sends.
                None => {
                    if takers.withdraw(&o) {
                        return;
                    }
                    match o.given().await {
                        Some(job) => job,
                        None => return,
                    }
                }
            };
            ctx.counters.handed_off.fetch_add(1, Ordering::Relaxed);
            start_jobs(ctx, shared, vec![job], &mut slot).await;
            if woken {
                return;
            }
        }
    }
    tokio::select! {
        () = shared.backlog.notified() => {}
        _ = ctx.stop.changed() => {}
    }
}

/// Bounds of a claim loop's wait for its share of slots (see `claim_loop`).
const FILL_WAIT_MIN: Duration = Duration::from_micros(200);
const FILL_WAIT_MAX: Duration = Duration::from_millis(5);

/// Reserve handler slots for a claim: up to `most` of the free ones or,
/// given `fill` (a share and a wait) while fewer than half the share are
/// free, the whole share once it comes free, or what is free when the wait
/// is over.
async fn reserve(
    slots: &Arc<Semaphore>,
    most: usize,
    fill: Option<(usize, Duration)>,
) -> Option<tokio::sync::OwnedSemaphorePermit> {
    let free = slots.available_permits().min(most);
    match fill {
        Some((share, wait)) if free < share / 2 => {
            let whole = slots
                .clone()
                .acquire_many_owned(u32::try_from(share).unwrap_or(u32::MAX));
            match tokio::time::timeout(wait, whole).await {
                Ok(Ok(permits)) => Some(permits),
                _ => take_free(slots, share),
            }
        }
        _ => take_free(slots, free),
    }
}

/// Reserve up to `n` of the free slots, none if none is free.
fn take_free(slots: &Arc<Semaphore>, n: usize) -> Option<tokio::sync::OwnedSemaphorePermit> {
    let n = n.min(slots.available_permits());
    if n == 0 {
        return None;
    }
    slots
        .clone()
        .try_acquire_many_owned(u32::try_from(n).unwrap_or(u32::MAX))
        .ok()
}

/// Sleep until a hint for this queue (or word that hints were missed), just
/// after the next whole second (delayed jobs and expired claims come due on
/// whole seconds) or `poll_interval`, whichever is sooner, or shutdown.
async fn wait_for_work(
    ctx: &mut LoopCtx,
    hints: &mut broadcast::Receiver<alkstore_core::Wake>,
    queue: &str,
) {
    let poll = tokio::time::sleep(until_next_second(ctx.opts.poll_interval));
    tokio::pin!(poll);
    loop {
        tokio::select! {
            hint = hints.recv() => match hint {
                Ok(w) if w.concerns(queue) => return,
                Ok(_) => continue,
                Err(broadcast::error::RecvError::Lagged(_)) => return,
                Err(broadcast::error::RecvError::Closed) => {
                    (&mut poll).await;
                    return;
                }
            },
            _ = &mut poll => return,
            _ = ctx.stop.changed() => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 200 slots, all but 10 held by running jobs, one permit each.
    fn busy() -> (Arc<Semaphore>, Vec<tokio::sync::OwnedSemaphorePermit>) {
        let slots = Arc::new(Semaphore::new(200));
        let running = (0..190)
            .map(|_| slots.clone().try_acquire_owned().expect("free"))
            .collect();
        (slots, running)
    }

    /// Jobs finishing one by one: drop the first `n` permits, yielding
    /// between them.
    fn finish(mut running: Vec<tokio::sync::OwnedSemaphorePermit>, n: usize) -> JoinSet<()> {
        let mut set = JoinSet::new();
        set.spawn(async move {
            for p in running.drain(..n) {
                drop(p);
                tokio::task::yield_now().await;
            }
            // The rest keep running past the test's waits.
            tokio::time::sleep(Duration::from_secs(60)).await;
        });
        set
    }

    #[tokio::test]
    async fn without_a_backlog_a_claim_takes_what_is_free() {
        let (slots, running) = busy();
        let _jobs = finish(running, 90);
        let got = reserve(&slots, 500, None).await.expect("some free");
        assert_eq!(got.num_permits(), 10);
    }

    #[tokio::test]
    async fn with_a_backlog_a_claim_waits_for_its_share() {
        let (slots, running) = busy();
        let _jobs = finish(running, 90);
        // A wait no run of this test reaches: the share comes free first.
        let fill = Some((100, Duration::from_secs(30)));
        let got = reserve(&slots, 500, fill).await.expect("the share");
        assert_eq!(got.num_permits(), 100);
    }

    #[tokio::test]
    async fn a_share_that_does_not_come_free_in_time_is_not_waited_for() {
        let (slots, running) = busy();
        let _jobs = finish(running, 30);
        let fill = Some((100, Duration::from_millis(50)));
        let got = reserve(&slots, 500, fill).await.expect("what came free");
        assert_eq!(got.num_permits(), 40, "10 free and 30 finished");
        // With half the share free, a claim takes it without waiting.
        drop(got);
        let got = reserve(&slots, 500, Some((80, Duration::from_secs(30))))
            .await
            .expect("free");
        assert_eq!(got.num_permits(), 40);
    }
}
