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

/// Queue options that retry at once (no backoff).
pub(crate) fn quick() -> QueueOpts {
    QueueOpts {
        backoff_base: Duration::ZERO,
        ..QueueOpts::default()
    }
}
