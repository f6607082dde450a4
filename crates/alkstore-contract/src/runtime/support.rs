//! Helpers shared by the runtime rows.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use alkstore::queue::QueueOpts;
use tokio::sync::Notify;

/// Resolves once `count` reaches `target`.
pub(crate) async fn reached(count: Arc<AtomicUsize>, target: usize, notify: Arc<Notify>) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while count.load(Ordering::SeqCst) < target {
        tokio::select! {
            _ = notify.notified() => {}
            _ = tokio::time::sleep(Duration::from_millis(20)) => {}
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {target} jobs"
        );
    }
}

/// Resolves once `queue` has `n` dead letters; fails with `what` after 30 s.
pub(crate) async fn until_dead(store: &alkstore::Store, queue: &str, n: u64, what: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while store.queue(queue).stats().await.expect("stats").dead < n {
        assert!(tokio::time::Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Queue options that retry at once (no backoff).
pub(crate) fn quick() -> QueueOpts {
    QueueOpts {
        backoff_base: Duration::ZERO,
        ..QueueOpts::default()
    }
}

/// A job that must exist (live, dead or kept), by id.
pub(crate) async fn job(store: &alkstore::Store, id: i64) -> alkstore::queue::JobInfo {
    use alkstore::prelude::QueueAdmin;
    store
        .engine()
        .job_get(id)
        .await
        .expect("get")
        .unwrap_or_else(|| panic!("job {id} is gone"))
}

/// Start the store's wake hints and let them settle: where the engine's
/// listener is a connection of its own (PostgreSQL), wait for its
/// announcement (one [`Wake::All`](alkstore_core::Wake::All) once it
/// listens), so that the hints a row sees afterwards are only the ones it
/// causes. Keep the receiver while the row runs.
pub(crate) async fn settled_hints(
    store: &alkstore::Store,
) -> tokio::sync::broadcast::Receiver<alkstore_core::Wake> {
    use alkstore_core::Engine;
    let mut hints = store.engine().wake_subscribe();
    if store.engine().capabilities().multi_host {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        assert!(
            crate::queues::wake::hint_by(&mut hints, deadline, |w| {
                *w == alkstore_core::Wake::All
            })
            .await,
            "the engine's listener never announced itself"
        );
    }
    hints
}

/// Events held back behind an open publishing transaction, for a reader
/// that starts meanwhile: a publish on the stream left open, and `later`'s
/// events published after it. Where a second writer commits while the
/// first is open (PostgreSQL), `later` has committed, and its hints have
/// gone out, by the time [`HeldBack::begin`] returns, though its events
/// are held back; elsewhere (SQLite) it waits for the open transaction's
/// lock and commits once [`HeldBack::release`] rolls that back, so nothing
/// hints the reader either way.
pub(crate) struct HeldBack {
    held: crate::HeldPublish,
    later: Later,
    /// The store's settled hints, kept while the row runs.
    _hints: tokio::sync::broadcast::Receiver<alkstore_core::Wake>,
}

/// `later`'s publish: committed (its offsets), or waiting for the lock.
enum Later {
    Committed(Vec<i64>),
    Waiting(tokio::task::JoinHandle<Vec<i64>>),
}

impl HeldBack {
    /// Open the held publish on `stream`, then publish `later` behind it.
    pub(crate) async fn begin<H, F>(h: &H, stream: &str, later: F) -> Self
    where
        H: crate::RuntimeHarness,
        F: std::future::Future<Output = Vec<i64>> + Send + 'static,
    {
        use alkstore_core::Engine;
        let store = h.store();
        let hints = settled_hints(store).await;
        let held = h
            .publish_held(vec![alkstore_core::stream::NewEvent::new(
                stream,
                b"rolled-back".to_vec(),
            )])
            .await
            .expect("held publish");
        let publisher = tokio::spawn(later);
        let later = if store.engine().capabilities().multi_host {
            let offsets = publisher.await.expect("later publisher");
            assert_eq!(
                store.stream(stream).stats().await.expect("stats").held_back,
                offsets.len() as u64,
                "the later events wait behind the open transaction"
            );
            Later::Committed(offsets)
        } else {
            Later::Waiting(publisher)
        };
        HeldBack {
            held,
            later,
            _hints: hints,
        }
    }

    /// Give the reader a moment for its first reads to find nothing, then
    /// roll the held publish back (nothing hints); returns the offsets of
    /// `later`'s events, committed by then.
    pub(crate) async fn release(self) -> Vec<i64> {
        tokio::time::sleep(Duration::from_millis(100)).await;
        self.held
            .finish(false)
            .await
            .expect("roll back the held publish");
        match self.later {
            Later::Committed(offsets) => offsets,
            Later::Waiting(publisher) => publisher.await.expect("later publisher"),
        }
    }
}
