//! Notifications in a transaction.

use alkstore_core::notify::NotifyPollParams;
use alkstore_core::Writes as _;
use alkstore_core::{Engine, NotifyEngine, Wake};

use super::support::{assert_rows, begin_with_row, committed_row, woken, End};
use crate::Harness;

/// A notification sent in a transaction reaches listeners only when it
/// commits: after a rollback and a drop (each with the application's row
/// gone too) and a commit, listeners get the committed one alone.
pub async fn notify_is_delivered_only_when_committed<H: Harness>(h: &H) {
    let e = h.engine();
    let channel = "tx-notify";
    let mut rx = e.wake_subscribe();
    e.notify_ready().await.expect("listening");
    for end in End::ALL {
        let tx = begin_with_row(h, &end.key(channel)).await;
        tx.notify(alkstore_core::notify::NotifyParams::new(
            channel,
            end.key(channel),
        ))
        .await
        .expect("notify");
        end.finish::<H>(tx).await;
        if !end.commits() {
            assert_rows(h, &[], &format!("after {end:?}")).await;
        }
    }
    let committed = End::Commit.key(channel);
    if e.capabilities().pushes_notifications {
        // Pushed in commit order: anything rolled back would come first.
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
        let first = loop {
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Ok(Wake::Message(n))) if n.channel == channel => break Some(n.payload.clone()),
                Ok(Ok(_)) | Ok(Err(tokio::sync::broadcast::error::RecvError::Lagged(_))) => {}
                Ok(Err(_)) | Err(_) => break None,
            }
        };
        assert_eq!(
            first.as_deref(),
            Some(committed.as_str()),
            "the committed notification arrives, and nothing before it"
        );
    } else {
        assert!(
            woken(&mut rx, |w| *w == Wake::Notify(channel.into())).await,
            "the commit wakes the channel's listeners"
        );
        let kept = e
            .notify_poll(NotifyPollParams::new(channel, 0, 100))
            .await
            .expect("poll");
        let payloads: Vec<&str> = kept.iter().map(|n| n.payload.as_str()).collect();
        assert_eq!(payloads, [committed.as_str()]);
    }
    assert_rows(h, &committed_row(channel), "at the end").await;
}

/// The rows above, for [`contract_suite!`](crate::contract_suite): list each
/// `pub async fn …<H: Harness>` here, next to where it is written.
#[doc(hidden)]
#[macro_export]
macro_rules! __tx_notify {
    ($then:path, $args:tt) => {
        $then! { @rows $args tx::notify [
            notify_is_delivered_only_when_committed,
        ] }
    };
}
