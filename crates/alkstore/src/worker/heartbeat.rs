//! Keeping running jobs' claims alive and relaying cancellations: one
//! [`heartbeat_sweeper`] task per queue renews the claims that
//! [`next_heartbeat`] says are due and, every [`CANCEL_POLL`], asks the store
//! which running jobs were cancelled and tells their handlers.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use alkstore_core::QueueEngine;

use super::inflight::{claim_of, Running};
use super::shared::Counters;
use crate::AnyEngine;

/// When to renew a claim of `length` taken (or renewed) at `now`: when a third of
/// its length (at least a second) plus one more second is left, the extra
/// second because claims are stamped in whole seconds and may have started
/// late in one. Measured on this host's monotonic clock, so a host whose wall
/// clock is off never misses a renewal.
pub(crate) fn next_heartbeat(now: Instant, length: Duration) -> Instant {
    let lead = (length / 3).max(Duration::from_secs(1)) + Duration::from_secs(1);
    now + length.saturating_sub(lead)
}

/// How often a worker asks which of its running jobs were cancelled.
const CANCEL_POLL: Duration = Duration::from_secs(1);

/// Renew the claims of jobs due for a heartbeat (see [`next_heartbeat`]),
/// checking four times a second, for every job in flight on this queue; and
/// once a second tell handlers whose job was cancelled. One task per queue
/// rather than one per job keeps short jobs cheap.
pub(crate) async fn heartbeat_sweeper(
    engine: AnyEngine,
    worker: String,
    running: Running,
    counters: Arc<Counters>,
    cancelled_total: metrics::Counter,
) {
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_cancel_poll = Instant::now();
    loop {
        tick.tick().await;
        let now = Instant::now();
        if now.duration_since(last_cancel_poll) >= CANCEL_POLL {
            last_cancel_poll = now;
            poll_cancellations(&engine, &running, &counters, &cancelled_total).await;
        }
        let due: Vec<(i64, i64)> = running
            .lock()
            .map(|r| {
                r.iter()
                    .filter(|(_, f)| f.next_beat <= now)
                    .map(|(k, _)| *k)
                    .collect()
            })
            .unwrap_or_default();
        for key in due {
            let id = key.0;
            match engine.job_heartbeat(claim_of(&worker, key)).await {
                Ok(Some(_)) => {
                    if let Ok(mut r) = running.lock() {
                        if let Some(f) = r.get_mut(&key) {
                            f.next_beat = next_heartbeat(Instant::now(), f.length);
                        }
                    }
                }
                Ok(None) => {
                    tracing::warn!(
                        id,
                        "claim lost while the handler runs; its ack will be refused"
                    );
                    if let Ok(mut r) = running.lock() {
                        if let Some(f) = r.get_mut(&key) {
                            // Lost for good: stop renewing it.
                            f.next_beat = now + Duration::from_secs(365 * 24 * 3600);
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!(id, error = %e, "heartbeat failed; retrying at the next tick")
                }
            }
        }
    }
}

/// Ask the store which running jobs (neither settled nor told yet) were
/// cancelled, a thousand ids per query, and tell their handlers; a failed
/// query ends this round.
async fn poll_cancellations(
    engine: &AnyEngine,
    running: &Running,
    counters: &Counters,
    cancelled_total: &metrics::Counter,
) {
    let ids: Vec<i64> = running
        .lock()
        .map(|r| {
            r.iter()
                .filter(|(_, f)| !f.settled && !f.cancel.is_set())
                .map(|(k, _)| k.0)
                .collect()
        })
        .unwrap_or_default();
    for chunk in ids.chunks(1_000) {
        let cancelled = match engine.job_cancel_requests(chunk.to_vec()).await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(error = %e, "could not check for cancelled jobs");
                return;
            }
        };
        if cancelled.is_empty() {
            continue;
        }
        if let Ok(r) = running.lock() {
            for ((id, _), f) in r.iter().filter(|(k, _)| cancelled.contains(&k.0)) {
                if !f.cancel.set() {
                    counters.cancelled.fetch_add(1, Ordering::Relaxed);
                    cancelled_total.increment(1);
                    tracing::info!(id, "job cancelled; telling its handler");
                }
            }
        }
    }
}
