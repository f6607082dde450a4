//! Wake hints: commits that make jobs claimable say so.

use std::time::Duration;

use alkstore_core::Engine;
use tokio::time::Instant;

use super::support::{enqueue_one, job};
use crate::Harness;

/// Wait up to 10 s for a hint accepted by `want`.
async fn hint_where(
    rx: &mut tokio::sync::broadcast::Receiver<alkstore_core::Wake>,
    want: impl Fn(&alkstore_core::Wake) -> bool,
) -> bool {
    hint_by(rx, Instant::now() + Duration::from_secs(10), want).await
}

/// Wait until `deadline` for a hint accepted by `want` (the stream rows
/// use it too).
pub(crate) async fn hint_by(
    rx: &mut tokio::sync::broadcast::Receiver<alkstore_core::Wake>,
    deadline: Instant,
    want: impl Fn(&alkstore_core::Wake) -> bool,
) -> bool {
    loop {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Ok(w)) if want(&w) => return true,
            Ok(Ok(_)) | Ok(Err(tokio::sync::broadcast::error::RecvError::Lagged(_))) => continue,
            Ok(Err(_)) | Err(_) => return false,
        }
    }
}

/// Wait up to 10 s for the engine's commit watcher to report a commit by
/// another connection with a bare [`Wake::All`](alkstore_core::Wake::All):
/// proof that it is watching. Each quiet 100 ms commits one more probe job
/// through the caller's own connection (the outbox), on a queue of its own,
/// for the watcher to see. (The engine's own commits are not reported: they
/// hint their queues themselves.)
async fn watcher_reports_commits<H: Harness>(
    h: &H,
    rx: &mut tokio::sync::broadcast::Receiver<alkstore_core::Wake>,
) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let quiet = (Instant::now() + Duration::from_millis(100)).min(deadline);
        if hint_by(rx, quiet, |w| *w == alkstore_core::Wake::All).await {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        h.outbox_enqueue(job("wake-probe", "x"), true)
            .await
            .expect("outbox probe");
    }
}

/// Commits that make jobs claimable send a wake hint: the engine's own
/// enqueues at once, and commits on other connections (the caller's outbox
/// transaction) through the engine's watcher or LISTEN connection.
pub async fn wake_hints_follow_commits<H: Harness>(h: &H) {
    use alkstore_core::Wake;
    let e = h.engine();
    let mut rx = e.wake_subscribe();
    if h.foreign_hints_name_queue() {
        // The listener announces itself once it is listening.
        assert!(
            hint_where(&mut rx, |w| *w == Wake::All).await,
            "the listener never became ready"
        );
    }
    enqueue_one(e, job("wake-own", "x")).await;
    assert!(
        hint_where(&mut rx, |w| *w == Wake::Queue("wake-own".into())).await,
        "no hint naming the queue after the engine's own enqueue"
    );
    if h.foreign_hints_name_queue() {
        h.outbox_enqueue(job("wake-foreign", "x"), true)
            .await
            .expect("outbox");
        assert!(
            hint_where(&mut rx, |w| *w == Wake::Queue("wake-foreign".into())).await,
            "no hint naming the queue after another connection's commit"
        );
    } else {
        // Wait for the watcher to show it is watching, then forget older
        // hints.
        assert!(
            watcher_reports_commits(h, &mut rx).await,
            "the commit watcher never became ready"
        );
        while rx.try_recv().is_ok() {}
        h.outbox_enqueue(job("wake-foreign", "x"), true)
            .await
            .expect("outbox");
        assert!(
            hint_where(&mut rx, |w| w.concerns("wake-foreign")).await,
            "no hint after another connection's commit"
        );
    }
}

/// The rows above, for [`contract_suite!`](crate::contract_suite): list each
/// `pub async fn …<H: Harness>` here, next to where it is written.
#[doc(hidden)]
#[macro_export]
macro_rules! __queues_wake {
    ($then:path, $args:tt) => {
        $then! { @rows $args queues::wake [
            wake_hints_follow_commits,
        ] }
    };
}
