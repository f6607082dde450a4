//! Helpers shared by the runtime rows.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use alkstore::QueueOpts;
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
pub(crate) async fn job(store: &alkstore::Store, id: i64) -> alkstore::JobInfo {
    use alkstore::QueueAdmin;
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
