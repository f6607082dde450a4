//! Helpers the transaction rows share.

use alkstore_core::Writes as _;
use std::time::Duration;

use alkstore_core::{ErrorKind, Transaction, Wake};
use tokio::time::Instant;

use crate::streams::support::{ev, settle};
use crate::Harness;

/// How a transaction of a row ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// [`Transaction::rollback`].
    Rollback,
    /// Dropped without ending it.
    Drop,
    /// [`Transaction::commit`].
    Commit,
}

impl End {
    /// Every ending, the committing one last: the rows check after each
    /// that what did not commit left nothing, then what did is there.
    pub(crate) const ALL: [End; 3] = [End::Rollback, End::Drop, End::Commit];

    /// End `tx` this way.
    pub(crate) async fn finish<H: Harness>(self, tx: Transaction<H::Engine>) {
        match self {
            End::Rollback => tx.rollback().await.expect("rollback"),
            End::Drop => drop(tx),
            End::Commit => tx.commit().await.expect("commit"),
        }
    }

    /// Whether this ending commits.
    pub(crate) fn commits(self) -> bool {
        self == End::Commit
    }

    /// The business row's key for `what` ended this way.
    pub(crate) fn key(self, what: &str) -> String {
        format!("{what}:{self:?}")
    }
}

/// Open a transaction on the harness's engine.
pub(crate) async fn begin<H: Harness>(h: &H) -> Transaction<H::Engine> {
    Transaction::begin(h.engine()).await.expect("begin")
}

/// Open a transaction and write the application's row `key` in it.
pub(crate) async fn begin_with_row<H: Harness>(h: &H, key: &str) -> Transaction<H::Engine> {
    let mut tx = begin(h).await;
    h.business_insert(&mut tx, key)
        .await
        .expect("the application's own row");
    tx
}

/// The business rows committed so far are `keys`.
pub(crate) async fn assert_rows<H: Harness>(h: &H, keys: &[String], when: &str) {
    assert_eq!(h.business_rows().await, keys, "business rows {when}");
}

/// The one business row `what` leaves once its rolled-back and dropped
/// transactions are gone: the committed one's.
pub(crate) fn committed_row(what: &str) -> Vec<String> {
    vec![End::Commit.key(what)]
}

/// Wait up to 10 s for a hint accepted by `want`.
pub(crate) async fn woken(
    rx: &mut tokio::sync::broadcast::Receiver<Wake>,
    want: impl Fn(&Wake) -> bool,
) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    crate::queues::wake::hint_by(rx, deadline, want).await
}

/// After a call found the claim, lease or lock not held (`NotHeld`), the
/// transaction is poisoned: a later call is refused with `RolledBack`, the
/// commit rolls back with `RolledBack`, and the business row `key`
/// written before it is gone.
pub(crate) async fn assert_refused_and_rolled_back<H: Harness, T: std::fmt::Debug>(
    h: &H,
    tx: Transaction<H::Engine>,
    refused: alkstore_core::Result<T>,
    key: &str,
) {
    let err = refused.expect_err("not held");
    assert_eq!(err.kind(), ErrorKind::NotHeld, "{err}");
    assert!(tx.poisoned().is_some(), "the transaction is poisoned");
    let later = tx
        .notify(alkstore_core::notify::NotifyParams::new(
            "tx-after-refusal",
            "never",
        ))
        .await;
    assert_eq!(
        later.map_err(|e| e.kind()),
        Err(ErrorKind::RolledBack),
        "later calls are refused"
    );
    let commit = tx.commit().await;
    assert_eq!(
        commit.map_err(|e| e.kind()),
        Err(ErrorKind::RolledBack),
        "the commit rolls back"
    );
    assert!(
        !h.business_rows().await.iter().any(|k| k == key),
        "the application's row {key} rolled back with it"
    );
}

/// Publish three events on stream `s` and wait until they are readable
/// (a consumer's offset or a checkpoint may only reach readable events);
/// their offsets.
pub(crate) async fn three_events<H: Harness>(h: &H, s: &str) -> Vec<i64> {
    let e = h.engine();
    let offsets = e
        .stream_publish(vec![ev(s, "1"), ev(s, "2"), ev(s, "3")])
        .await
        .expect("publish");
    settle(e, s).await;
    offsets
}

/// `n` seconds, for the rows' clock moves.
pub(crate) fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}
