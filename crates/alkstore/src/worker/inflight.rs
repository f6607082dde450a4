//! The jobs a queue has in flight on this worker: one [`InFlight`] entry per
//! running job in the queue's [`Running`] map, shared by the claim loops
//! (which add entries), the job tasks (which mark and remove their own), the
//! heartbeat sweeper and the shutdown hand-back.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use alkstore_core::Claim;
use tokio::sync::Notify;

/// A job in flight (its claim is its key in [`Running`] and the worker's
/// id): when to renew its claim next, its task, and how to tell its handler
/// it was cancelled.
pub(crate) struct InFlight {
    /// When to renew the claim, on this host's monotonic clock.
    pub(crate) next_beat: Instant,
    /// The claim's length (the job's visibility timeout).
    pub(crate) length: Duration,
    /// The job's task: aborted at the shutdown deadline or when the queue
    /// loop is dropped; a job is handed back at shutdown only once its task
    /// has finished.
    pub(crate) abort: Option<tokio::task::AbortHandle>,
    /// Set when the handler returned `Ok` and its ack is being handed to the
    /// completer: such a job is never handed back (it would run again) nor
    /// polled for cancellation.
    pub(crate) settled: bool,
    /// Tells the handler its job was cancelled (see
    /// [`JobCtx::is_cancelled`](super::JobCtx::is_cancelled)).
    pub(crate) cancel: Cancel,
}

/// A running job's cancellation flag: set by the heartbeat sweeper, read
/// and awaited by the job's handler. (A `watch` channel per job cost more:
/// dropping one wakes its notifier's every shard.) The flags of one claim's
/// jobs share one allocation ([`Cancel::for_claim`]).
#[derive(Clone)]
pub(crate) struct Cancel {
    claim: Arc<[CancelState]>,
    index: usize,
}

#[derive(Default)]
struct CancelState {
    set: AtomicBool,
    notify: Notify,
}

impl Cancel {
    /// One flag for each of a claim's `jobs` jobs.
    pub(crate) fn for_claim(jobs: usize) -> Vec<Cancel> {
        let claim: Arc<[CancelState]> = (0..jobs).map(|_| CancelState::default()).collect();
        (0..jobs)
            .map(|index| Cancel {
                claim: claim.clone(),
                index,
            })
            .collect()
    }

    fn state(&self) -> &CancelState {
        &self.claim[self.index]
    }

    /// Whether the job was cancelled.
    pub(crate) fn is_set(&self) -> bool {
        self.state().set.load(Ordering::Acquire)
    }

    /// Cancel the job; true when it already was.
    pub(crate) fn set(&self) -> bool {
        let was = self.state().set.swap(true, Ordering::AcqRel);
        if !was {
            self.state().notify.notify_waiters();
        }
        was
    }

    /// Resolves once the job is cancelled (never, if it is not).
    pub(crate) async fn wait(&self) {
        loop {
            let notified = self.state().notify.notified();
            tokio::pin!(notified);
            // Registered before the check: a `set` between the check and
            // the wait still wakes it.
            notified.as_mut().enable();
            if self.is_set() {
                return;
            }
            notified.await;
        }
    }
}

/// Aborts every job task of a queue when the queue loop goes away, including
/// when the caller drops the `run_until` future: no handler outlives its
/// worker without heartbeats.
pub(crate) struct AbortJobsOnDrop(pub(crate) Running);

impl Drop for AbortJobsOnDrop {
    fn drop(&mut self) {
        if let Ok(r) = self.0.lock() {
            for f in r.values() {
                if let Some(a) = &f.abort {
                    a.abort();
                }
            }
        }
    }
}

/// Jobs in flight by (id, claim token): a job re-claimed by this same worker
/// after its claim lapsed is a different entry from the stale run.
pub(crate) type Running = Arc<Mutex<HashMap<(i64, i64), InFlight>>>;

/// Mark the job of claim `key` settled (see [`InFlight::settled`]).
pub(crate) fn mark_settled(running: &Running, key: (i64, i64)) {
    if let Ok(mut r) = running.lock() {
        if let Some(f) = r.get_mut(&key) {
            f.settled = true;
        }
    }
}

/// The claim of `worker` with `key` (job id, claim token) in [`Running`].
pub(crate) fn claim_of(worker: &str, key: (i64, i64)) -> Claim {
    Claim {
        id: key.0,
        worker: worker.to_string(),
        token: key.1,
    }
}
