//! Wake-up hints: "a queue may have new work". Only hints: whoever wakes
//! re-reads the database, so a spurious or merged wake is harmless and a lost
//! one costs at most a safety-poll interval.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{broadcast, oneshot};

use crate::Job;

/// One hint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wake {
    /// This queue may have claimable jobs.
    Queue(Arc<str>),
    /// This stream may have new events.
    Stream(Arc<str>),
    /// This channel may have new notifications (engines that keep them).
    Notify(Arc<str>),
    /// A notification pushed by the engine (engines that push them).
    Message(Arc<crate::notify::Notification>),
    /// Anything may have changed (another process committed, a listener
    /// reconnected, or hints were dropped because a receiver lagged).
    All,
}

impl Wake {
    /// Whether this hint concerns `queue`.
    pub fn concerns(&self, queue: &str) -> bool {
        match self {
            Wake::Queue(q) => &**q == queue,
            Wake::Stream(_) | Wake::Notify(_) | Wake::Message(_) => false,
            Wake::All => true,
        }
    }

    /// Whether this hint concerns `stream`.
    pub fn concerns_stream(&self, stream: &str) -> bool {
        match self {
            Wake::Stream(s) => &**s == stream,
            Wake::Queue(_) | Wake::Notify(_) | Wake::Message(_) => false,
            Wake::All => true,
        }
    }
}

/// A broadcast of wake hints that costs nothing while nobody listens, and
/// the idle workers of this process that take a job straight from an
/// enqueue call ([`Takers`]).
#[derive(Debug, Clone)]
pub struct WakeHub {
    tx: broadcast::Sender<Wake>,
    takers: Arc<Takers>,
}

impl Default for WakeHub {
    fn default() -> Self {
        WakeHub {
            tx: broadcast::channel(1024).0,
            takers: Arc::default(),
        }
    }
}

impl WakeHub {
    /// The idle workers waiting for a job of this process's enqueue calls.
    pub fn takers(&self) -> &Takers {
        &self.takers
    }

    /// Listen for hints.
    pub fn subscribe(&self) -> broadcast::Receiver<Wake> {
        self.tx.subscribe()
    }

    /// Whether anyone listens.
    pub fn has_listeners(&self) -> bool {
        self.tx.receiver_count() > 0
    }

    /// Hint that `queue` may have work.
    pub fn queue(&self, queue: &str) {
        if self.has_listeners() {
            let _ = self.tx.send(Wake::Queue(Arc::from(queue)));
        }
    }

    /// Hint that `stream` may have new events.
    pub fn stream(&self, stream: &str) {
        if self.has_listeners() {
            let _ = self.tx.send(Wake::Stream(Arc::from(stream)));
        }
    }

    /// Hint that `channel` may have new notifications.
    pub fn channel(&self, channel: &str) {
        if self.has_listeners() {
            let _ = self.tx.send(Wake::Notify(Arc::from(channel)));
        }
    }

    /// Deliver a notification the engine pushed.
    pub fn message(&self, n: crate::notify::Notification) {
        if self.has_listeners() {
            let _ = self.tx.send(Wake::Message(Arc::new(n)));
        }
    }

    /// Hint that anything may have changed.
    pub fn all(&self) {
        if self.has_listeners() {
            let _ = self.tx.send(Wake::All);
        }
    }
}

/// Idle workers of this process, each waiting with a free handler slot for
/// one job of a queue. An enqueue call of one job [takes](Takers::take) a
/// waiting worker's offer, inserts the job already claimed for it
/// ([`QueueEngine::job_enqueue_claimed`](crate::QueueEngine::job_enqueue_claimed))
/// and [gives](Taker::give) it over: the job starts without the worker's
/// claim round trip. A worker done waiting [withdraws](Takers::withdraw)
/// its offer; when an enqueue call took it first, the worker waits for what
/// that call sends (the job, or nothing when the job stayed pending).
#[derive(Debug, Default)]
pub struct Takers {
    /// Entries in `by_queue`, read without the lock by every enqueue call.
    waiting: AtomicUsize,
    /// Numbers the offers, so that a worker withdraws its own.
    next_id: AtomicU64,
    by_queue: Mutex<HashMap<Arc<str>, Vec<Taker>>>,
}

/// One idle worker's offer, as an enqueue call takes it.
#[derive(Debug)]
pub struct Taker {
    id: u64,
    worker: String,
    tx: oneshot::Sender<Job>,
}

impl Taker {
    /// The worker to claim the job for.
    pub fn worker(&self) -> &str {
        &self.worker
    }

    /// Give the worker its claimed job; the job back when the worker is
    /// gone (its offer dropped without being withdrawn), for the caller to
    /// release.
    pub fn give(self, job: Job) -> Option<Job> {
        self.tx.send(job).err()
    }
}

/// One idle worker's offer, as the worker holds it.
#[derive(Debug)]
pub struct Offer {
    queue: Arc<str>,
    id: u64,
    rx: oneshot::Receiver<Job>,
}

impl Offer {
    /// The job given for this offer; `None` when the enqueue call that
    /// took it left its job pending (or failed), or the offer was
    /// withdrawn. Pending until an enqueue call takes the offer.
    pub async fn given(&mut self) -> Option<Job> {
        (&mut self.rx).await.ok()
    }
}

impl Takers {
    /// Wait as `worker` for one job of `queue`.
    pub fn offer(&self, queue: &str, worker: &str) -> Offer {
        let (tx, rx) = oneshot::channel();
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let queue: Arc<str> = Arc::from(queue);
        let offer = Offer {
            queue: queue.clone(),
            id,
            rx,
        };
        let Ok(mut by_queue) = self.by_queue.lock() else {
            return offer;
        };
        let offers = by_queue.entry(queue).or_default();
        // Offers dropped without being withdrawn (their task aborted),
        // removed here rather than kept until an enqueue call finds them.
        let before = offers.len();
        offers.retain(|t| !t.tx.is_closed());
        offers.push(Taker {
            id,
            worker: worker.to_string(),
            tx,
        });
        self.recount(before, offers.len());
        offer
    }

    /// Take back `offer`: true when no enqueue call took it (nothing will
    /// be given); false when one did, and [`Offer::given`] soon answers.
    pub fn withdraw(&self, offer: &Offer) -> bool {
        let Ok(mut by_queue) = self.by_queue.lock() else {
            return false;
        };
        let Some(offers) = by_queue.get_mut(&offer.queue) else {
            return false;
        };
        let before = offers.len();
        offers.retain(|t| t.id != offer.id);
        let after = offers.len();
        self.recount(before, after);
        after < before
    }

    /// Keep `waiting` in step with a list that went from `before` entries
    /// to `after`; called under the lock, so it never goes below zero.
    fn recount(&self, before: usize, after: usize) {
        if after > before {
            self.waiting.fetch_add(after - before, Ordering::Relaxed);
        } else {
            self.waiting.fetch_sub(before - after, Ordering::Relaxed);
        }
    }

    /// How many workers wait for a job of `queue`.
    pub fn waiting(&self, queue: &str) -> usize {
        self.by_queue
            .lock()
            .map(|by_queue| {
                by_queue.get(queue).map_or(0, |offers| {
                    offers.iter().filter(|t| !t.tx.is_closed()).count()
                })
            })
            .unwrap_or(0)
    }

    /// Take the offer of a worker waiting for a job of `queue`, if any.
    pub fn take(&self, queue: &str) -> Option<Taker> {
        if self.waiting.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let mut by_queue = self.by_queue.lock().ok()?;
        let offers = by_queue.get_mut(queue)?;
        while let Some(t) = offers.pop() {
            self.waiting.fetch_sub(1, Ordering::Relaxed);
            if !t.tx.is_closed() {
                return Some(t);
            }
        }
        None
    }
}
