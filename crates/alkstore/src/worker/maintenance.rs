//! Background upkeep beside the claim loops: the worker's periodic
//! maintenance sweep of the store ([`sweep_loop`]), each queue's depth gauges
//! ([`depth_reporter`]), and [`AbortOnDrop`], which stops such background
//! tasks with their owner.

use std::time::Duration;

use alkstore_core::{Engine, QueueAdmin};

use crate::AnyEngine;

/// Aborts a background task when dropped: the maintenance sweeper when
/// `run_until` ends, and a queue's heartbeat sweeper and depth reporter when
/// its queue loop ends (both also when the `run_until` future is dropped).
pub(crate) struct AbortOnDrop(pub(crate) tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// How often the maintenance-lock holder looks for dead rows to reclaim.
/// A busy PostgreSQL queue leaves about 110,000 dead tuples a second (the
/// claimed and the acked version of each job); looking every second
/// instead of every 5 s kept a 3-minute soak's job table and indexes at
/// about half the size and cut the server's buffer reads per job by 9 %
/// (claims walk fewer dead index entries). A look is one statistics read.
const RECLAIM_EVERY: Duration = Duration::from_secs(1);

/// How often a worker that does not hold the maintenance lock tries to
/// take it.
const ELECT_EVERY: Duration = Duration::from_secs(5);

/// The lock whose holder runs the store's maintenance sweeps.
pub(crate) const MAINTENANCE_LOCK: &str = "alkstore.maintenance";

/// Run the maintenance sweep every `every`, starting after one interval,
/// while this worker holds the store's maintenance lock: one sweeper per
/// store, elected by whoever takes the lock; another worker takes over
/// within a lock TTL (three intervals) after the holder stops.
pub(crate) async fn sweep_loop(engine: AnyEngine, every: Duration) {
    // Looks for bloat this often (a statistics read; a VACUUM only past the
    // engine's threshold), sweeps every `every`.
    let look = every.min(RECLAIM_EVERY);
    let elect = every.min(ELECT_EVERY);
    let start = tokio::time::Instant::now();
    let mut tick = tokio::time::interval_at(start + look, look);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let lock = crate::lock::Lock::new(
        crate::Store::from_engine(engine.clone()),
        MAINTENANCE_LOCK.into(),
    )
    .ttl(
        every
            .saturating_mul(3)
            .clamp(Duration::from_secs(1), crate::lock::MAX_LOCK_TTL),
    );
    let mut elected: Option<crate::lock::LockGuard> = None;
    let mut last_sweep = start;
    // The first try comes one `elect` after the start, as before.
    let mut last_try = start;
    loop {
        tick.tick().await;
        if !elected
            .as_ref()
            .is_some_and(crate::lock::LockGuard::is_held)
        {
            if !due(last_try, elect, look) {
                continue;
            }
            last_try = tokio::time::Instant::now();
            elected = match lock.try_acquire().await {
                Ok(guard) => guard,
                Err(e) => {
                    tracing::warn!(error = %e, "taking the maintenance lock failed");
                    None
                }
            };
        }
        if elected.is_none() {
            continue;
        }
        if let Err(e) = engine.reclaim().await {
            tracing::warn!(error = %e, "reclaiming dead rows failed");
        }
        if !due(last_sweep, every, look) {
            continue;
        }
        last_sweep = tokio::time::Instant::now();
        // Also once per interval for the whole store: a sweep someone ran
        // by hand within it counts.
        match engine.sweep_due(every).await {
            Ok(None) => {}
            Ok(Some(r)) if r.expired + r.exhausted > 0 => {
                tracing::warn!(
                    expired = r.expired,
                    rescued = r.rescued,
                    exhausted = r.exhausted,
                    dead_pruned = r.dead_pruned,
                    completed_pruned = r.completed_pruned,
                    events_trimmed = r.events_trimmed,
                    "maintenance sweep dead-lettered jobs"
                );
            }
            Ok(Some(r)) if r != alkstore_core::SweepReport::default() => {
                tracing::info!(
                    expired = r.expired,
                    rescued = r.rescued,
                    exhausted = r.exhausted,
                    dead_pruned = r.dead_pruned,
                    completed_pruned = r.completed_pruned,
                    events_trimmed = r.events_trimmed,
                    "maintenance sweep"
                );
            }
            Ok(Some(_)) => {}
            Err(e) => tracing::warn!(error = %e, "maintenance sweep failed"),
        }
    }
}

/// Whether `period` has passed since `last`, to the nearest tick of the
/// loop that asks (`tick` long).
fn due(last: tokio::time::Instant, period: Duration, tick: Duration) -> bool {
    last.elapsed() + tick / 2 >= period
}

/// Publish the queue's depth by state as gauges every 5 s, the first after
/// 5 s: the count reads every row of the queue, and at start-up (when a
/// backlog is largest) it would take a core from the claims for as long.
/// A count that takes long puts the next one further off (see
/// [`depth_wait`]).
pub(crate) async fn depth_reporter(engine: AnyEngine, queue: String) {
    let gauge = |state: &'static str| metrics::gauge!("alkstore_queue_depth", "queue" => queue.clone(), "state" => state);
    let (ready, scheduled, processing, expired_claims, dead) = (
        gauge("ready"),
        gauge("scheduled"),
        gauge("processing"),
        gauge("expired_claims"),
        gauge("dead"),
    );
    let mut wait = DEPTH_EVERY;
    loop {
        tokio::time::sleep(wait).await;
        let started = tokio::time::Instant::now();
        if let Ok(s) = engine.queue_stats(queue.clone()).await {
            ready.set(s.ready as f64);
            scheduled.set(s.scheduled as f64);
            processing.set(s.processing as f64);
            expired_claims.set(s.expired_claims as f64);
            dead.set(s.dead as f64);
        }
        wait = depth_wait(started.elapsed());
    }
}

/// The depth gauges' usual interval.
const DEPTH_EVERY: Duration = Duration::from_secs(5);

/// The wait before the next depth count, given how long the last one took:
/// the usual 5 s, or 50 times the count's time when that is longer, so the
/// gauges cost each worker process at most 2 % of the time per queue. On
/// PostgreSQL the count reads every row of the queue: 0.25 s at a backlog
/// of 1,000,000 jobs, which every 5 s from each worker process would keep a
/// server core 5 % busy per process, and more as the backlog grows.
fn depth_wait(took: Duration) -> Duration {
    DEPTH_EVERY.max(took.saturating_mul(50))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slow_depth_count_puts_the_next_one_further_off() {
        assert_eq!(depth_wait(Duration::ZERO), DEPTH_EVERY);
        assert_eq!(depth_wait(Duration::from_millis(20)), DEPTH_EVERY);
        assert_eq!(depth_wait(Duration::from_millis(100)), DEPTH_EVERY);
        assert_eq!(
            depth_wait(Duration::from_millis(250)),
            Duration::from_millis(12_500)
        );
        assert_eq!(depth_wait(Duration::from_secs(2)), Duration::from_secs(100));
    }
}
