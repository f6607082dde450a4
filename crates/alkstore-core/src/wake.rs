//! Wake-up hints: "a queue may have new work". Only hints: whoever wakes
//! re-reads the database, so a spurious or merged wake is harmless and a lost
//! one costs at most a safety-poll interval.

use std::sync::Arc;

use tokio::sync::broadcast;

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

/// A broadcast of wake hints that costs nothing while nobody listens.
#[derive(Debug, Clone)]
pub struct WakeHub {
    tx: broadcast::Sender<Wake>,
}

impl Default for WakeHub {
    fn default() -> Self {
        WakeHub {
            tx: broadcast::channel(1024).0,
        }
    }
}

impl WakeHub {
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
    pub fn notify(&self, channel: &str) {
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
