//! How a [`Subscriber`](super::Subscriber) reads, commits and treats
//! handler errors: [`SubscriberOpts`], with [`StartAt`] and [`OnError`]
//! (which group runners use too). Plain data, apart from the run itself.

use std::time::Duration;

/// Where a consumer with no saved offset starts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StartAt {
    /// From the first stored event (the default).
    #[default]
    Beginning,
    /// After the current head: only events published from now on. The head
    /// is the last readable event; on PostgreSQL, events committed but held
    /// back by an older open transaction come after it and are delivered.
    Head,
}

/// What a handler error does. A failing event is never skipped: it is
/// retried, and when the retries run out the subscriber stops with
/// [`Error::HandlerFailed`](crate::Error::HandlerFailed), its offset
/// saved just before that event, so the next run starts with it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnError {
    /// Stop at the first error.
    Stop,
    /// Run the event again, up to `attempts` runs in all, waiting `backoff`
    /// (doubling each time, at most 60 s) between runs; then stop.
    Retry {
        /// Runs in all, the first included (at least 1).
        attempts: u32,
        /// The first wait.
        backoff: Duration,
    },
}

impl Default for OnError {
    fn default() -> Self {
        OnError::Retry {
            attempts: 5,
            backoff: Duration::from_millis(200),
        }
    }
}

/// How a [`Subscriber`](super::Subscriber) reads and commits.
#[derive(Debug, Clone)]
pub struct SubscriberOpts {
    /// Where to start without a saved offset.
    pub start: StartAt,
    /// Events read per query (default 500).
    pub batch: u32,
    /// Commit the offset after this many handled events (default 1,000) …
    pub commit_every: u32,
    /// … or this long after the last commit (default 1 s), whichever comes
    /// first; and whenever the subscriber has caught up, and on shutdown.
    pub commit_interval: Duration,
    /// Re-read this often even without a wake hint (default 1 s): hints are
    /// only hints.
    pub poll_interval: Duration,
    /// What a handler error does.
    pub on_error: OnError,
}

impl Default for SubscriberOpts {
    fn default() -> Self {
        SubscriberOpts {
            start: StartAt::Beginning,
            batch: 500,
            commit_every: 1_000,
            commit_interval: Duration::from_secs(1),
            poll_interval: Duration::from_secs(1),
            on_error: OnError::default(),
        }
    }
}
